/**
 * TanStack AI's own sandbox algorithms, written again here so that the
 * tests can run them over this package's stores exactly as TanStack AI
 * would (TanStack/ai main, packages/ai-sandbox: `ensure` and
 * `ensureExisting` of sandbox.ts, `withRunClaim` of claim.ts).  Not their
 * code: the same steps, in the same order, against the same interfaces.
 *
 * ensure(ctx): take `sandbox:<key>`; get the record; if there is one that
 * is not too old (Date.now() - updatedAt > maxAge is too old): resume it,
 * and only once that succeeded stamp { latestRunId, updatedAt }; if resume
 * gives nothing, restore the latest snapshot when the provider can (and
 * record the new sandbox); otherwise create (the provider id is the key),
 * take a snapshot after setup when the provider can, and record it.  A
 * throw anywhere (resume included) fails the ensure and writes nothing
 * more.
 *
 * withRunClaim: hold `run-driver:<runId>` for the whole body, which is
 * where a run's chat (and so its sandbox ensure) happens.
 */
import type { LockStore, SandboxInstanceRecord, SandboxInstanceStore } from '../src/index.js';

export interface FakeHandle {
  id: string;
  how: 'created' | 'resumed' | 'restored';
}

/** TanStack AI's test provider, reduced to what ensure uses; counts its calls. */
export class FakeProvider {
  readonly name: string;
  calls = { create: 0, resume: 0, restoreSnapshot: 0, destroy: 0, snapshot: 0 };
  resumeReturnsNull = false;
  resumeThrows: Error | undefined;
  snapshots = true;
  /** Called inside resume (tests park a resume there). */
  onResume: (() => Promise<void>) | undefined;
  private restored = 0;
  private snaps = 0;

  constructor(name = 'fake') {
    this.name = name;
  }

  async create(id: string): Promise<FakeHandle> {
    this.calls.create++;
    return { id, how: 'created' };
  }

  async resume(id: string): Promise<FakeHandle | null> {
    this.calls.resume++;
    if (this.onResume !== undefined) await this.onResume();
    if (this.resumeThrows !== undefined) throw this.resumeThrows;
    return this.resumeReturnsNull ? null : { id, how: 'resumed' };
  }

  async restoreSnapshot(_snapshotId: string): Promise<FakeHandle> {
    this.calls.restoreSnapshot++;
    this.restored++;
    return { id: `${this.name}-restored-${this.restored}`, how: 'restored' };
  }

  async snapshot(id: string): Promise<string> {
    this.calls.snapshot++;
    this.snaps++;
    return `snap-${id}-${this.snaps}`;
  }

  async destroy(_id: string): Promise<void> {
    this.calls.destroy++;
  }
}

export interface EnsureContext {
  key: string;
  threadId: string;
  runId: string;
  store: SandboxInstanceStore;
  locks: LockStore;
  provider: FakeProvider;
  /** Milliseconds; undefined: no age limit. */
  maxAgeMs?: number | undefined;
  /** 'after-setup' (the default when the provider snapshots) or 'none'. */
  snapshot?: 'after-setup' | 'none' | undefined;
}

/** TanStack AI's ensure, step by step. */
export async function ensure(ctx: EnsureContext): Promise<{ handle: FakeHandle; outcome: string }> {
  const { store, provider } = ctx;
  return ctx.locks.withLock(`sandbox:${ctx.key}`, async () => {
    const effectiveSnapshot = ctx.snapshot ?? (provider.snapshots ? 'after-setup' : 'none');
    const existing = await store.get(ctx.key);
    if (existing !== null) {
      const tooOld = ctx.maxAgeMs !== undefined && Date.now() - existing.updatedAt > ctx.maxAgeMs;
      if (!tooOld) {
        const resumed = await provider.resume(existing.providerSandboxId);
        if (resumed !== null) {
          await store.upsert({ ...existing, latestRunId: ctx.runId, updatedAt: Date.now() });
          return { handle: resumed, outcome: 'resumed' };
        }
        if (existing.latestSnapshotId !== undefined && provider.snapshots) {
          const restored = await provider.restoreSnapshot(existing.latestSnapshotId);
          await store.upsert({
            ...existing,
            providerSandboxId: restored.id,
            latestRunId: ctx.runId,
            updatedAt: Date.now(),
          });
          return { handle: restored, outcome: 'native-restored' };
        }
      }
    }
    const created = await provider.create(ctx.key);
    let latestSnapshotId: string | undefined;
    if (effectiveSnapshot === 'after-setup' && provider.snapshots) {
      latestSnapshotId = await provider.snapshot(created.id);
    }
    // As upstream builds it: latestSnapshotId may be present and undefined.
    const record: SandboxInstanceRecord = {
      key: ctx.key,
      provider: provider.name,
      providerSandboxId: created.id,
      latestSnapshotId: latestSnapshotId as string,
      threadId: ctx.threadId,
      latestRunId: ctx.runId,
      updatedAt: Date.now(),
    };
    await store.upsert(record);
    return { handle: created, outcome: 'created' };
  });
}

/** TanStack AI's ensureExisting: resume only, never restore or create. */
export async function ensureExisting(ctx: EnsureContext): Promise<FakeHandle | null> {
  return ctx.locks.withLock(`sandbox:${ctx.key}`, async () => {
    const existing = await ctx.store.get(ctx.key);
    if (existing === null) return null;
    if (ctx.maxAgeMs !== undefined && Date.now() - existing.updatedAt > ctx.maxAgeMs) return null;
    const resumed = await ctx.provider.resume(existing.providerSandboxId);
    if (resumed === null) return null;
    await ctx.store.upsert({ ...existing, latestRunId: ctx.runId, updatedAt: Date.now() });
    return resumed;
  });
}

/** TanStack AI's destroy: no lock; get, destroy at the provider, delete the record. */
export async function destroy(ctx: EnsureContext): Promise<void> {
  const existing = await ctx.store.get(ctx.key);
  if (existing === null) return;
  await ctx.provider.destroy(existing.providerSandboxId);
  await ctx.store.delete(ctx.key);
}

/** A run store as withRunClaim needs it: the driver epoch of each run. */
export class RunStore {
  private readonly epochs = new Map<string, number>();
  create(runId: string): void {
    this.epochs.set(runId, 0);
  }
  get(runId: string): { driverEpoch: number } | null {
    const epoch = this.epochs.get(runId);
    return epoch === undefined ? null : { driverEpoch: epoch };
  }
  update(runId: string, driverEpoch: number): void {
    this.epochs.set(runId, driverEpoch);
  }
}

/** TanStack AI's withRunClaim: the whole body under `run-driver:<runId>`, with a new epoch. */
export async function withRunClaim<T>(
  locks: LockStore,
  runs: RunStore,
  runId: string,
  fn: (claim: { runId: string; epoch: number; signal: AbortSignal }) => Promise<T>,
): Promise<T> {
  return locks.withLock(`run-driver:${runId}`, async (signal) => {
    const record = runs.get(runId);
    if (record === null) throw new Error(`run ${runId} is unknown`);
    const epoch = record.driverEpoch + 1;
    runs.update(runId, epoch);
    return fn({ runId, epoch, signal });
  });
}

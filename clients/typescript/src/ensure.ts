import type { Pool, QueryResultRow } from 'pg';

import { InvalidArgumentError, SandboxStoreError } from './errors.js';
import { findFrame } from './internal/frames.js';
import type { Hold, Section } from './internal/hold.js';
import { LeaseHold } from './internal/lease-hold.js';
import { LockTx } from './internal/lock-tx.js';
import { connectTimeoutOption, type BackgroundErrorHandler } from './internal/pool.js';
import type { WaitOptions } from './internal/wait.js';
import {
  CLAIM_SQL,
  ENSURE_GET_SQL,
  ENSURE_SQL,
  UPSERT_SQL,
  msOption,
  recordFromRow,
  textArg,
  type EnsureGetRow,
  type EnsureRow,
  type RecordRow,
} from './internal/sql.js';
import { leaseTimingOptions } from './lock-store.js';
import type { LockMode, SandboxInstanceRecord } from './types.js';

/** What the callbacks of {@link ensureSandbox} get. */
export interface EnsureContext {
  /**
   * Aborted when the key can no longer be guaranteed to be held (or when the
   * caller's `signal` aborts). Pass it to cancellable provider calls.
   */
  signal: AbortSignal;
  key: string;
  threadId: string;
  runId: string;
}

/** A sandbox that was just created or restored, and the ids to record for it. */
export interface ProvisionedSandbox<S> {
  sandbox: S;
  providerSandboxId: string;
  /** Snapshot to record (restore: defaults to the snapshot restored from). */
  latestSnapshotId?: string | undefined;
}

export interface EnsureSandboxOptions<S> {
  /** The compound instance key. */
  key: string;
  threadId: string;
  runId: string;
  /** The provider's name: recorded on create; a record of another provider is recreated. */
  provider: string;
  /** A record older than this (by the database clock) is recreated. Unset: never too old. */
  maxAgeMs?: number | null | undefined;
  /** How long to wait for a busy key (unset: as `lock_timeout` allows; 0: not at all). */
  waitMs?: number | null | undefined;
  /** `'lock'` (default): hold a transaction open; `'lease'`: a renewed claim and fenced writes. */
  mode?: LockMode | undefined;
  /** Lease mode: the lease (default 30 000 ms). */
  leaseMs?: number | undefined;
  /** Lease mode: renew this often (default `leaseMs / 3`). */
  renewEveryMs?: number | undefined;
  /**
   * The caller's cancellation.  While the key is waited for (at the
   * process's queue or in the database) an abort gives the wait up: the
   * ensure rejects with the signal's reason and leaves no lock, claim or
   * connection behind.  Afterwards it joins the context's signal.
   */
  signal?: AbortSignal | undefined;
  /** How long to wait for a connection of the pool (default 30 000 ms). */
  connectTimeoutMs?: number | undefined;
  /** Errors nobody awaits (a failed release, a failed cleanup). */
  onError?: BackgroundErrorHandler | undefined;

  /** Create a new sandbox. */
  create: (ctx: EnsureContext) => Promise<ProvisionedSandbox<S>>;
  /**
   * Reconnect to the recorded sandbox; `null` (or `undefined`) if it is gone,
   * which falls back to `restore`, then `create`. A throw fails the ensure.
   */
  resume: (record: SandboxInstanceRecord, ctx: EnsureContext) => Promise<S | null | undefined>;
  /** Restore the record's latest snapshot into a new sandbox; `null` falls back to `create`. */
  restore?:
    | ((
        snapshotId: string,
        record: SandboxInstanceRecord,
        ctx: EnsureContext,
      ) => Promise<ProvisionedSandbox<S> | null | undefined>)
    | undefined;
  /**
   * Destroy a sandbox: the old one of a `recreate` (too old, or of another
   * provider: look at `record.provider`), and one this call created but could
   * not record (its claim was lost, its commit failed). Errors of the
   * latter are reported to `onError`; of the former, they fail the ensure.
   */
  destroy?: ((record: SandboxInstanceRecord, ctx: EnsureContext) => Promise<void>) | undefined;
}

export type EnsureOutcome = 'created' | 'resumed' | 'restored' | 'recreated';

export interface EnsureSandboxResult<S> {
  /**
   * `resumed`: the recorded sandbox; `restored`: a new sandbox from its
   * snapshot; `created`: a new one (no record, or resume and restore gave
   * nothing); `recreated`: the old one was too old or of another provider
   * and was destroyed, and a new one created.
   */
  outcome: EnsureOutcome;
  sandbox: S;
  /** The record as stored now. */
  record: SandboxInstanceRecord;
}

/**
 * The whole resume-or-create algorithm, as TanStack AI's own ensure runs it:
 *
 * - no record -> `create()`, then record it;
 * - a record of another provider, or older than `maxAgeMs` -> `destroy(old
 *   record)`, `create()`, record it;
 * - else `resume(record)`; once it succeeded the record is stamped with
 *   `runId` and the time; if it gives nothing, `restore` the latest snapshot
 *   (and record the new sandbox), else `create` and record it.  If `resume`
 *   throws, nothing is stamped.
 *
 * Lock mode: one `sandbox_ensure` takes the key and decides (and stamps a
 * resumed record) in the transaction of a dedicated client, which holds the
 * key's lock until COMMIT; a throw rolls everything back, the stamp too, so
 * this is the same as stamping after the resume.  Inside a lock-mode
 * section of another key of the same call chain (TanStack AI's
 * `run-driver:<runId>`), it runs in that section's transaction instead.
 * Lease mode: `sandbox_claim` takes the key in autocommit, `sandbox_get`
 * reads the record (and its age by the database clock), the claim is renewed
 * while the provider works, every write carries the claim's fence
 * (`ClaimLostError`, nothing written, if the key was taken over), and the
 * claim is released at the end.
 */
export async function ensureSandbox<S>(pool: Pool, options: EnsureSandboxOptions<S>): Promise<EnsureSandboxResult<S>> {
  const key = textArg(options.key, 'key');
  const threadId = textArg(options.threadId, 'threadId');
  const runId = textArg(options.runId, 'runId');
  const provider = textArg(options.provider, 'provider');
  const maxAgeMs = msOption(options.maxAgeMs, 'maxAgeMs');
  const waitMs = msOption(options.waitMs, 'waitMs');
  const connectTimeoutMs = connectTimeoutOption(options.connectTimeoutMs);
  const mode: LockMode = options.mode ?? 'lock';
  const onError = options.onError ?? (() => undefined);
  if (mode !== 'lock' && mode !== 'lease') {
    throw new InvalidArgumentError(`mode must be 'lock' or 'lease'`, { sqlstate: '22023' });
  }
  if (typeof options.create !== 'function' || typeof options.resume !== 'function') {
    throw new InvalidArgumentError('create and resume must be functions', { sqlstate: '22023' });
  }
  if (threadId === null) throw new InvalidArgumentError('threadId must not be null', { sqlstate: '22004' });
  if (provider === null) throw new InvalidArgumentError('provider must not be null', { sqlstate: '22004' });
  if (runId === null) throw new InvalidArgumentError('runId must not be null', { sqlstate: '22004' });
  if (key !== null && findFrame(pool, key) !== undefined) {
    throw new SandboxStoreError(
      `ensureSandbox of sandbox key "${key}" inside a withLock of the same key would wait for itself`,
    );
  }
  const wait: WaitOptions = { waitMs, connectTimeoutMs, signal: options.signal, onError };

  let section: Section;
  let decided: Decision;
  if (mode === 'lock') {
    const taken = await LockTx.take<EnsureRow>(
      pool,
      key ?? '',
      { text: ENSURE_SQL, values: (left) => [key, runId, maxAgeMs, provider, left, null] },
      wait,
    );
    section = taken.section;
    const row = taken.rows[0];
    if (row === undefined) {
      await section.abandon();
      throw new SandboxStoreError('sandbox_ensure returned no row');
    }
    decided = { action: row.action, existing: row.action === 'create' ? undefined : recordFromRow(row), stamped: true };
  } else {
    const timing = leaseTimingOptions(options);
    const taken = await LeaseHold.take(
      pool,
      key ?? '',
      { text: CLAIM_SQL, values: (left) => [key, timing.leaseMs, left] },
      timing,
      wait,
    );
    section = taken.section;
    try {
      const result = await taken.hold.query<EnsureGetRow>(ENSURE_GET_SQL, [key, maxAgeMs]);
      const row = result.rows[0];
      if (row === undefined) decided = { action: 'create', existing: undefined, stamped: false };
      else {
        const existing = recordFromRow(row);
        decided = {
          action: row.stale || existing.provider !== provider ? 'recreate' : 'resume',
          existing,
          stamped: false,
        };
      }
    } catch (error) {
      await section.abandon();
      throw error;
    }
  }
  // Non-null from here: the database accepted them.
  const base = { key: key as string, threadId, runId, provider };

  let provisioned: ProvisionedSandbox<S> | undefined;
  let result: EnsureSandboxResult<S>;
  try {
    result = await section.run((holdSignal) => {
      const signal = options.signal !== undefined ? AbortSignal.any([holdSignal, options.signal]) : holdSignal;
      const ctx: EnsureContext = { signal, key: base.key, threadId: base.threadId, runId: base.runId };
      return decide(options, decided, section.hold, ctx, base, (p) => {
        provisioned = p;
      });
    });
  } catch (error) {
    // A sandbox this call made but could not record would leak: destroy it.
    if (provisioned !== undefined && options.destroy !== undefined) {
      const orphan: SandboxInstanceRecord = {
        key: base.key,
        provider: base.provider,
        providerSandboxId: provisioned.providerSandboxId,
        threadId: base.threadId,
        latestRunId: base.runId,
        updatedAt: Date.now(),
      };
      // Not fenced by the (possibly aborted) signal: cleanup must outlive what cancelled the work.
      const cleanup: EnsureContext = {
        signal: new AbortController().signal,
        key: base.key,
        threadId: base.threadId,
        runId: base.runId,
      };
      const destroy = options.destroy;
      await Promise.resolve()
        .then(() => destroy(orphan, cleanup))
        .catch(onError);
    }
    throw error;
  }
  return result;
}

/** What the key's record calls for, and whether a resumed record is already stamped. */
interface Decision {
  action: 'create' | 'resume' | 'recreate';
  existing: SandboxInstanceRecord | undefined;
  /** Lock mode: sandbox_ensure stamped it in the transaction (undone if anything throws). */
  stamped: boolean;
}

async function decide<S>(
  options: EnsureSandboxOptions<S>,
  decision: Decision,
  hold: Hold,
  ctx: EnsureContext,
  base: { key: string; threadId: string; runId: string; provider: string },
  onProvisioned: (p: ProvisionedSandbox<S>) => void,
): Promise<EnsureSandboxResult<S>> {
  /** Write the record as the holder (in the transaction, or fenced). */
  async function record(fields: {
    provider: string;
    providerSandboxId: string;
    latestSnapshotId: string | undefined;
  }): Promise<SandboxInstanceRecord> {
    const values = [
      base.key,
      fields.provider,
      fields.providerSandboxId,
      base.threadId,
      fields.latestSnapshotId ?? null,
      base.runId,
      null, // clock_timestamp(): the time of the write
      hold.fence,
    ];
    const result =
      hold instanceof LockTx
        ? await hold.write<RecordRow & QueryResultRow>(UPSERT_SQL, values)
        : await hold.query<RecordRow & QueryResultRow>(UPSERT_SQL, values);
    const stored = result.rows[0];
    if (stored === undefined) throw new SandboxStoreError('sandbox_upsert returned no row');
    return recordFromRow(stored);
  }

  async function create(outcome: 'created' | 'recreated'): Promise<EnsureSandboxResult<S>> {
    ctx.signal.throwIfAborted();
    const created = await options.create(ctx);
    onProvisioned(created);
    const stored = await record({
      provider: base.provider,
      providerSandboxId: created.providerSandboxId,
      latestSnapshotId: created.latestSnapshotId,
    });
    return { outcome, sandbox: created.sandbox, record: stored };
  }

  const existing = decision.existing;
  if (decision.action === 'create' || existing === undefined) return create('created');

  if (decision.action === 'recreate') {
    ctx.signal.throwIfAborted();
    if (options.destroy !== undefined) await options.destroy(existing, ctx);
    return create('recreated');
  }

  ctx.signal.throwIfAborted();
  const resumed = await options.resume(existing, ctx);
  if (resumed !== null && resumed !== undefined) {
    // Stamped only now that the resume succeeded (lock mode: in the
    // transaction already, which a throw would have rolled back).
    const stored = decision.stamped
      ? existing
      : await record({
          provider: existing.provider,
          providerSandboxId: existing.providerSandboxId,
          latestSnapshotId: existing.latestSnapshotId,
        });
    return { outcome: 'resumed', sandbox: resumed, record: stored };
  }

  if (existing.latestSnapshotId !== undefined && options.restore !== undefined) {
    ctx.signal.throwIfAborted();
    const restored = await options.restore(existing.latestSnapshotId, existing, ctx);
    if (restored !== null && restored !== undefined) {
      onProvisioned(restored);
      const stored = await record({
        provider: existing.provider,
        providerSandboxId: restored.providerSandboxId,
        latestSnapshotId: restored.latestSnapshotId ?? existing.latestSnapshotId,
      });
      return { outcome: 'restored', sandbox: restored.sandbox, record: stored };
    }
  }
  return create('created');
}

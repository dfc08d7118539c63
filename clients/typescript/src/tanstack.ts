/**
 * `sandbox-store-client/tanstack`: the stores wired into `@tanstack/ai-sandbox`
 * 0.2.x (the version npm serves), where `withSandbox(definition)` takes no
 * stores and reads them as capabilities (`SandboxStoreCapability`,
 * `LocksCapability`) that a middleware placed before it provides.
 *
 * - `withDurableSandbox(definition, { instances, locks })`: the two
 *   middlewares in the right order, `[provideSandboxStores(...),
 *   withSandbox(definition)]`, both from the same copy of the package.
 * - `provideSandboxStores({ instances, locks })`: the providing middleware
 *   alone, for apps that compose their own list (it must come before
 *   `withSandbox`).
 *
 * - `defineDurableSandbox(pool, config, options)`: `defineSandbox(config)`
 *   whose ensure is this package's `ensureSandbox` (age by the database
 *   clock, a sandbox that could not be recorded is destroyed) and whose
 *   destroy runs under the key's lock.
 *
 * The middlewares check the wiring at every run and fail the run with a
 * `SandboxStoreError` instead of letting TanStack AI fall back to its
 * in-memory stores: placed after `withSandbox`, or a `withSandbox` that
 * ensured its sandbox without taking the lock through these stores (a
 * second copy of `@tanstack/ai-sandbox`, or a version that no longer reads
 * the capabilities).
 *
 * Only this entry point imports `@tanstack/ai-sandbox` (an optional peer
 * dependency); the main entry point works without any TanStack package.
 */
import type { DefinedChatMiddleware } from '@tanstack/ai';
import {
  LocksCapability,
  SandboxCapability,
  SandboxStoreCapability,
  bootstrapWorkspace,
  defineSandbox,
  resolveAllSecrets,
  withSandbox,
} from '@tanstack/ai-sandbox';
import type { SandboxConfig, SandboxDefinition, SandboxEnsureContext, SandboxHandle } from '@tanstack/ai-sandbox';
import type { Pool } from 'pg';

import { ensureSandbox, type ProvisionedSandbox } from './ensure.js';
import { InvalidArgumentError, SandboxStoreError } from './errors.js';
import { createInstanceStore } from './instance-store.js';
import type { BackgroundErrorHandler } from './internal/pool.js';
import { createLockStore, tanstackSandboxKey } from './lock-store.js';
import type { LockMode, LockStore, SandboxInstanceStore } from './types.js';

/** The stores to provide: `createInstanceStore(pool)` and `createLockStore(pool, ...)` over one pool. */
export interface SandboxStores {
  instances: SandboxInstanceStore;
  locks: LockStore;
}

/** The middleware `provideSandboxStores` returns. */
export type SandboxStoresMiddleware = DefinedChatMiddleware<
  unknown,
  readonly [],
  readonly [typeof SandboxStoreCapability, typeof LocksCapability]
>;

/** Per run: did the sandbox ensure take its lock through the provided lock store? */
const locked = new WeakMap<object, boolean>();

/** The lock stores provideSandboxStores hands out, to what marks their run as locked. */
const markers = new WeakMap<object, () => void>();

/**
 * A middleware that provides `instances` as TanStack AI's sandbox store and
 * `locks` as its lock store, for the `withSandbox` placed after it.
 *
 * Its `setup` refuses to run after `withSandbox` (the sandbox would already
 * have been ensured with the in-memory fallbacks). Its `onStart`, which runs
 * once every middleware's `setup` is done, fails the run if `withSandbox`
 * provided a sandbox without taking a lock through `locks`.
 */
export function provideSandboxStores(stores: SandboxStores): SandboxStoresMiddleware {
  const { instances, locks } = checkStores(stores);
  return {
    name: 'sandbox-store',
    provides: [SandboxStoreCapability, LocksCapability],
    async setup(ctx) {
      const early = providedSandbox(ctx);
      if (early !== undefined) {
        // withSandbox ran first: its ensure used the in-memory fallbacks, so
        // nothing recorded the sandbox it made. Destroy it (else every such
        // run leaks one) before failing the run.
        let destroyed = 'destroyed';
        try {
          await early.destroy?.();
        } catch {
          destroyed = 'could not destroy';
        }
        throw new SandboxStoreError(
          'provideSandboxStores() runs after withSandbox(): the sandbox was already ensured without the ' +
            `PostgreSQL stores (this run ${destroyed} it); place it before withSandbox() in the middleware list, ` +
            'or use withDurableSandbox(). With defineDurableSandbox() this mistake fails before any provider call',
        );
      }
      locked.set(ctx, false);
      const mark = (): void => void locked.set(ctx, true);
      const counted: LockStore = {
        withLock: (key, fn) => {
          mark();
          return locks.withLock(key, fn);
        },
      };
      markers.set(counted, mark);
      ctx.provide(SandboxStoreCapability, instances);
      ctx.provide(LocksCapability, counted);
    },
    onStart(ctx) {
      if (sandboxProvided(ctx) && locked.get(ctx) === false) {
        throw new SandboxStoreError(
          'withSandbox() ensured its sandbox without the PostgreSQL lock store provided by ' +
            'provideSandboxStores(): it used in-memory stores, so nothing was recorded and other processes ' +
            'are not excluded. Is a second copy of @tanstack/ai-sandbox installed (npm ls @tanstack/ai-sandbox)?',
        );
      }
    },
  };
}

/** A capability handle of any copy of @tanstack/ai: `[get, provide]` with its name. */
type AnyCapability = readonly [(ctx: object, options: { optional: true }) => unknown, unknown] & {
  capabilityName?: unknown;
};

/**
 * Whether a `withSandbox` already provided its sandbox in this run: by the
 * capability of this copy of @tanstack/ai-sandbox, or by its name in the
 * run's registry (a `withSandbox` of another copy provides another object
 * of the same name; @tanstack/ai keeps the provided handles in a set,
 * read here only if it is there).
 */
function sandboxProvided(ctx: { capabilities: object }): boolean {
  return sandboxCapabilityOf(ctx) !== undefined;
}

function sandboxCapabilityOf(ctx: { capabilities: object }): AnyCapability | undefined {
  if (SandboxCapability.has(ctx as Parameters<typeof SandboxCapability.has>[0]))
    return SandboxCapability as unknown as AnyCapability;
  const provided = (ctx.capabilities as { provided?: unknown }).provided;
  if (!(provided instanceof Set)) return undefined;
  for (const handle of provided) {
    if ((handle as { capabilityName?: unknown } | null)?.capabilityName === SandboxCapability.capabilityName)
      return handle as AnyCapability;
  }
  return undefined;
}

/** The sandbox a `withSandbox` (of any copy) provided in this run, if any: `{}` when its value cannot be read. */
function providedSandbox(ctx: { capabilities: object }): { destroy?: () => Promise<void> } | undefined {
  const capability = sandboxCapabilityOf(ctx);
  if (capability === undefined) return undefined;
  let handle: unknown;
  try {
    handle = typeof capability[0] === 'function' ? capability[0](ctx, { optional: true }) : undefined;
  } catch {
    handle = undefined;
  }
  const destroy = (handle as { destroy?: unknown } | null | undefined)?.destroy;
  return typeof destroy === 'function' ? { destroy: () => (destroy as () => Promise<void>).call(handle) } : {};
}

/**
 * `withSandbox(definition)` with the PostgreSQL stores provided before it:
 * spread it into `chat()`'s middleware list.
 *
 * ```ts
 * chat({ adapter, messages, threadId, middleware: [...withDurableSandbox(sandbox, { instances, locks })] })
 * ```
 */
export function withDurableSandbox(
  definition: SandboxDefinition,
  stores: SandboxStores,
): readonly [SandboxStoresMiddleware, ReturnType<typeof withSandbox>] {
  return [provideSandboxStores(stores), withSandbox(definition)] as const;
}

function checkStores(stores: SandboxStores): SandboxStores {
  const s = stores as Partial<SandboxStores> | null | undefined;
  const instances = s?.instances;
  const locks = s?.locks;
  if (
    instances === undefined ||
    typeof instances.get !== 'function' ||
    typeof instances.upsert !== 'function' ||
    typeof instances.delete !== 'function'
  ) {
    throw new InvalidArgumentError('stores.instances must be an instance store (createInstanceStore(pool))', {
      sqlstate: '22023',
    });
  }
  if (locks === undefined || typeof locks.withLock !== 'function') {
    throw new InvalidArgumentError('stores.locks must be a lock store (createLockStore(pool, options))', {
      sqlstate: '22023',
    });
  }
  return { instances, locks };
}

/** Options of {@link defineDurableSandbox}. */
export interface DurableSandboxOptions {
  /** `'lock'` (default) or `'lease'`, as for `createLockStore`. */
  mode?: LockMode | undefined;
  /** Lease mode: the lease (default 30 000 ms). */
  leaseMs?: number | undefined;
  /** How long to wait for a busy key (unset: as `lock_timeout` allows). */
  waitMs?: number | null | undefined;
  /**
   * A record older than this, by the database clock, is recreated.  Default:
   * the config's `lifecycle.snapshotMaxAge` (`'<n>h'` or `'<n>m'`).
   */
  maxAgeMs?: number | null | undefined;
  /** Errors nobody awaits (a failed release, the destroy of a sandbox that could not be recorded). */
  onError?: BackgroundErrorHandler | undefined;
}

/** `'2h'` or `'30m'` (0.2.x's `snapshotMaxAge`) in milliseconds; anything else: no limit, as 0.2.x reads it. */
function maxAgeOf(value: string | undefined): number | null {
  const match = value === undefined ? null : /^(\d+)([hm])$/.exec(value);
  if (match === null) return null;
  return Number(match[1]) * (match[2] === 'h' ? 3_600_000 : 60_000);
}

/**
 * `defineSandbox(config)` with the resume-or-create of this package
 * (`ensureSandbox` over `pool`) instead of 0.2.x's own, for apps that want
 * what that one does not protect:
 *
 * - a sandbox created (or restored) but not recorded, because the claim was
 *   taken over meanwhile or the commit failed, is destroyed (0.2.x leaves it
 *   running);
 * - a record's age is measured by the database clock (0.2.x uses the app's
 *   `Date.now()`);
 * - `destroy` (run by `withSandbox` on abort, or after the run with
 *   `destroyOnComplete`) takes the key's lock, so it never destroys a sandbox
 *   that another run is resuming.
 *
 * The steps are 0.2.x's: resume, else restore the latest snapshot, else
 * create (with the key as the provider id) and bootstrap the workspace, then
 * snapshot after setup when the provider can.  Keys are the definition's
 * (`definition.key(ctx)`).  Wire it with `withDurableSandbox` as any
 * definition.
 */
export function defineDurableSandbox(
  pool: Pool,
  config: SandboxConfig,
  options: DurableSandboxOptions = {},
): SandboxDefinition {
  const base = defineSandbox(config);
  const mode = options.mode ?? 'lock';
  const leaseMs = options.leaseMs;
  const maxAgeMs = options.maxAgeMs !== undefined ? options.maxAgeMs : maxAgeOf(config.lifecycle?.snapshotMaxAge);
  const instances = createInstanceStore(pool);
  const locks = createLockStore(pool, {
    mode,
    lockKey: tanstackSandboxKey,
    ...(leaseMs !== undefined ? { leaseMs } : {}),
    ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
    ...(options.onError !== undefined ? { onError: options.onError } : {}),
  });
  const provider = config.provider;
  const workspace = config.workspace;
  // What create and restore get besides the id (absent fields left out).
  const setup = () => ({
    ...(workspace !== undefined ? { workspace } : {}),
    ...(config.policy !== undefined ? { policy: config.policy } : {}),
    ...(workspace?.secrets !== undefined ? { env: resolveAllSecrets(workspace.secrets) } : {}),
  });

  const ensure = async (ctx: SandboxEnsureContext): Promise<SandboxHandle> => {
    // This ensure locks through the pool itself, not through ctx.locks: tell
    // provideSandboxStores' check that the run is covered. Without the lock
    // store provideSandboxStores hands out, that middleware comes after
    // withSandbox (or belongs to another copy of @tanstack/ai-sandbox): its
    // check would fail the run after this ensure, so fail it now, before any
    // provider call.
    const mark = ctx.locks !== undefined ? markers.get(ctx.locks) : undefined;
    if (mark === undefined) {
      throw new SandboxStoreError(
        'defineDurableSandbox(): withSandbox() runs before provideSandboxStores() provided the PostgreSQL ' +
          'stores (or they come from a second copy of @tanstack/ai-sandbox: npm ls @tanstack/ai-sandbox); ' +
          'place provideSandboxStores() before withSandbox(), or use withDurableSandbox(). No provider call was made',
      );
    }
    mark();
    const key = base.key(ctx);
    const caps = provider.capabilities();
    const snapshotAfterSetup =
      (config.lifecycle?.snapshot ?? (caps.snapshots ? 'after-setup' : 'none')) === 'after-setup';
    const result = await ensureSandbox<SandboxHandle>(pool, {
      key,
      threadId: ctx.threadId,
      runId: ctx.runId,
      provider: provider.name,
      mode,
      maxAgeMs,
      ...(leaseMs !== undefined ? { leaseMs } : {}),
      ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
      ...(options.onError !== undefined ? { onError: options.onError } : {}),
      ...(ctx.signal !== undefined ? { signal: ctx.signal } : {}),
      create: async ({ signal }): Promise<ProvisionedSandbox<SandboxHandle>> => {
        const created = await provider.create({ id: key, ...setup(), signal });
        try {
          if (workspace !== undefined) await bootstrapWorkspace(created, workspace, { signal });
          const snapshot =
            snapshotAfterSetup && caps.snapshots && created.snapshot
              ? await created.snapshot('after-setup')
              : undefined;
          return { sandbox: created, providerSandboxId: created.id, latestSnapshotId: snapshot?.id };
        } catch (error) {
          // Not recorded yet, so ensureSandbox cannot clean it up: destroy it here.
          await created.destroy().catch(() => undefined);
          throw error;
        }
      },
      resume: (record, { signal }) => provider.resume({ id: record.providerSandboxId, signal }),
      restore: async (snapshotId, _record, { signal }) => {
        if (!caps.snapshots || provider.restoreSnapshot === undefined) return null;
        const restored = await provider.restoreSnapshot({ snapshotId, ...setup(), signal });
        return { sandbox: restored, providerSandboxId: restored.id };
      },
      destroy: (record) => provider.destroy({ id: record.providerSandboxId }),
    });
    return result.sandbox;
  };

  const destroy = async (ctx: SandboxEnsureContext): Promise<void> => {
    const key = base.key(ctx);
    await locks.withLock(`sandbox:${key}`, async () => {
      const record = await instances.get(key);
      if (record === null) return;
      await provider.destroy({
        id: record.providerSandboxId,
        ...(ctx.signal !== undefined ? { signal: ctx.signal } : {}),
      });
      await instances.delete(key);
    });
  };

  return { ...base, ensure, destroy };
}

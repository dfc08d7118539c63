import type { Pool } from 'pg';

import { InvalidArgumentError } from './errors.js';
import { Frame, findFrame, runInFrame } from './internal/frames.js';
import { LeaseHold, type LeaseTiming } from './internal/lease-hold.js';
import { LockTx } from './internal/lock-tx.js';
import { connectTimeoutOption, type BackgroundErrorHandler } from './internal/pool.js';
import type { WaitOptions } from './internal/wait.js';
import { CLAIM_SQL, LOCK_SQL, msOption } from './internal/sql.js';
import type { LockMode, LockStore } from './types.js';

/** Default lease of lease mode: 30 s, renewed every 10 s. */
export const DEFAULT_LEASE_MS = 30_000;

/**
 * `leaseMs` and `renewEveryMs` (the lock store's and ensureSandbox's lease
 * mode), checked, with their defaults filled in: 30 s, and a third of the lease.
 */
export function leaseTimingOptions(options: {
  leaseMs?: number | undefined;
  renewEveryMs?: number | undefined;
}): LeaseTiming {
  const leaseMs = msOption(options.leaseMs ?? DEFAULT_LEASE_MS, 'leaseMs', true) ?? DEFAULT_LEASE_MS;
  const renewEveryMs = msOption(options.renewEveryMs ?? leaseMs / 3, 'renewEveryMs', true) ?? leaseMs / 3;
  return { leaseMs, renewEveryMs };
}

export interface LockStoreOptions {
  /**
   * `'lock'` (default): a transaction-scoped lock on a dedicated connection,
   * held while the section runs. `'lease'`: a claim renewed on a timer, no
   * transaction open.
   */
  mode?: LockMode;
  /**
   * How long to wait for a busy key before `LockNotAvailableError` (55P03).
   * Unset: as long as the session's `lock_timeout` allows (by default forever);
   * `0`: do not wait.
   */
  waitMs?: number | null;
  /** Lease mode: the lease, in milliseconds (default 30 000). */
  leaseMs?: number;
  /** Lease mode: renew this often (default `leaseMs / 3`; keep it well below `leaseMs`). */
  renewEveryMs?: number;
  /**
   * Maps a `withLock` key to the extension key that is locked (default: the
   * key itself). With {@link tanstackSandboxKey} a TanStack sandbox lock
   * (`sandbox:<instance key>`) locks the instance key itself, so writes of the
   * instance store inside the section are made as the holder (fenced in
   * lease mode) and `delete` of that key is excluded from the section.
   */
  lockKey?: (key: string) => string;
  /**
   * How long a section waits for a connection of the pool before
   * `ConnectionUnavailableError` (default 30 000 ms).  Never unbounded: a
   * section that cannot get a connection fails instead of hanging.
   */
  connectTimeoutMs?: number;
  /** Errors nobody awaits (a failed release or rollback). Default: ignored; the lease expires by itself. */
  onError?: BackgroundErrorHandler;
}

/** Per call: how `withLock` waits. */
export interface WithLockOptions {
  /**
   * Gives up the wait for the key (at the process's queue or in the
   * database) when it aborts: `withLock` rejects with the signal's reason,
   * and no lock, claim or connection is left behind.  Once `fn` runs, the
   * signal `fn` gets aborts too.
   */
  signal?: AbortSignal | undefined;
  /** Overrides the store's `waitMs` for this call. */
  waitMs?: number | null | undefined;
}

/** The lock store, with the options it was made with. */
export interface PgLockStore extends LockStore {
  readonly mode: LockMode;
  withLock<T>(key: string, fn: (signal: AbortSignal) => Promise<T>, options?: WithLockOptions): Promise<T>;
}

/**
 * `lockKey` for TanStack AI sandboxes: `withSandbox`'s ensure locks
 * `sandbox:<instance key>`; this maps it to the instance key itself.
 * Other keys are left as they are.
 */
export function tanstackSandboxKey(key: string): string {
  return key.startsWith('sandbox:') ? key.slice('sandbox:'.length) : key;
}

/**
 * A {@link LockStore} over the extension's per-key lock.
 *
 * `withLock(key, fn)` serializes callers per key across connections,
 * processes and hosts; it releases the key when `fn` settles (resolve or
 * throw) and a throw does not poison later callers.
 *
 * Order: inside one process (per pool) callers of a key enter first come,
 * first served; only the first of them waits in the database.  Across
 * processes the database decides (lock mode: PostgreSQL's lock queue; lease
 * mode: whoever claims first once the key is free).
 *
 * Re-entry: a `withLock` of a key that its own call chain holds runs at once
 * (strict nesting).  Calls of that key started concurrently inside the
 * section (e.g. `Promise.all`) run one after the other.
 *
 * Lock mode: a client of its own for the section, `BEGIN`,
 * `sandbox_lock(key, wait)`, `fn(signal)`, `COMMIT` (or `ROLLBACK` if `fn`
 * threw), client released.  A lock-mode section of another key started
 * inside it (TanStack AI's `run-driver:<runId>` then `sandbox:<key>`) runs on
 * the same client and transaction: its lock joins the outer transaction's
 * and is given back when that transaction ends, so nested runs need one
 * connection each.  The client's `'error'`/`'end'` aborts `signal` with a
 * `LockLostError`, and `withLock` then rejects with it even if `fn`
 * resolved (the section's transaction did not commit).
 *
 * Lease mode: the key is claimed with `sandbox_claim(key, lease, wait)` in
 * autocommit, renewed every `renewEveryMs` with `sandbox_renew` and
 * released with `sandbox_release`.  A renewal that fails (`ClaimLostError`
 * when the claim was released or taken over, `LockLostError` otherwise) or
 * a lease that runs out before a renewal came back aborts `signal`;
 * `withLock` still returns what `fn` returns (writes of the instance store
 * were fenced and refused by the database).
 */
export function createLockStore(pool: Pool, options: LockStoreOptions = {}): PgLockStore {
  const mode: LockMode = options.mode ?? 'lock';
  if (mode !== 'lock' && mode !== 'lease') {
    throw new InvalidArgumentError(`mode must be 'lock' or 'lease'`, { sqlstate: '22023' });
  }
  const waitMs = msOption(options.waitMs, 'waitMs');
  const { leaseMs, renewEveryMs } = leaseTimingOptions(options);
  const connectTimeoutMs = connectTimeoutOption(options.connectTimeoutMs);
  const lockKey = options.lockKey ?? ((key: string) => key);
  const onError = options.onError ?? (() => undefined);

  return {
    mode,
    async withLock<T>(
      key: string,
      fn: (signal: AbortSignal) => Promise<T>,
      callOptions: WithLockOptions = {},
    ): Promise<T> {
      if (typeof key !== 'string') {
        throw new InvalidArgumentError('key must be a string', { sqlstate: key == null ? '22004' : '22023' });
      }
      if (typeof fn !== 'function') {
        throw new InvalidArgumentError('fn must be a function', { sqlstate: '22023' });
      }
      const signal = callOptions.signal;
      const wait: WaitOptions = {
        waitMs: callOptions.waitMs === undefined ? waitMs : msOption(callOptions.waitMs, 'waitMs'),
        connectTimeoutMs,
        signal,
        onError,
      };
      const dbKey = lockKey(key);
      const joined = (inner: AbortSignal): AbortSignal =>
        signal === undefined ? inner : AbortSignal.any([inner, signal]);

      // Strict nesting: this call chain holds the key; children that enter
      // it concurrently take turns.
      const outer = findFrame(pool, dbKey);
      if (outer !== undefined) {
        return outer.children.run(
          () => runInFrame(new Frame(outer.hold, dbKey), () => fn(joined(outer.hold.signal))),
          signal,
        );
      }
      const { section } =
        mode === 'lock'
          ? await LockTx.take(pool, dbKey, { text: LOCK_SQL, values: (waitMs) => [dbKey, waitMs] }, wait)
          : await LeaseHold.take(
              pool,
              dbKey,
              { text: CLAIM_SQL, values: (waitMs) => [dbKey, leaseMs, waitMs] },
              { leaseMs, renewEveryMs },
              wait,
            );
      return section.run((held) => fn(joined(held)));
    },
  };
}

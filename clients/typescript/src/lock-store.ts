import type { Pool } from 'pg';

import { InvalidArgumentError } from './errors.js';
import { LeaseHold, LockHold, findHold, type BackgroundErrorHandler, type Hold } from './internal/hold.js';
import { CLAIM_SQL, LOCK_SQL, msOption } from './internal/sql.js';
import type { LockMode, LockStore } from './types.js';

/** Default lease of lease mode: 30 s, renewed every 10 s. */
export const DEFAULT_LEASE_MS = 30_000;

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
  /** Errors nobody awaits (a failed release or rollback). Default: ignored; the lease expires by itself. */
  onError?: BackgroundErrorHandler;
}

/** The lock store, with the options it was made with. */
export interface PgLockStore extends LockStore {
  readonly mode: LockMode;
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
 * throw) and a throw does not poison later callers.  It is re-entrant: a
 * `withLock` of a key this async context already holds (over the same pool)
 * runs `fn` at once with the outer signal.
 *
 * Lock mode: a client of its own for the section, `BEGIN`,
 * `sandbox_lock(key, wait)`, `fn(signal)`, `COMMIT` (or `ROLLBACK` if `fn`
 * threw), client released.  The client's `'error'`/`'end'` (its backend was
 * terminated, the network went) aborts `signal` with a `LockLostError`, and
 * `withLock` then rejects with it even if `fn` resolved (the section's
 * transaction did not commit).
 *
 * Lease mode: the key is claimed with `sandbox_claim(key, lease, wait)` in
 * autocommit (a claim and nothing else: no record is read or stamped),
 * renewed every `renewEveryMs` with `sandbox_renew` and released with
 * `sandbox_release`.  A renewal that fails (`ClaimLostError` when the claim was released
 * or taken over, `LockLostError` otherwise) or a lease that runs out before a
 * renewal came back aborts `signal`; `withLock` still returns what `fn`
 * returns (nothing was left to commit; writes of the instance store were
 * fenced and refused by the database).
 */
export function createLockStore(pool: Pool, options: LockStoreOptions = {}): PgLockStore {
  const mode: LockMode = options.mode ?? 'lock';
  if (mode !== 'lock' && mode !== 'lease') {
    throw new InvalidArgumentError(`mode must be 'lock' or 'lease'`, { sqlstate: '22023' });
  }
  const waitMs = msOption(options.waitMs, 'waitMs');
  const leaseMs = msOption(options.leaseMs ?? DEFAULT_LEASE_MS, 'leaseMs', true) ?? DEFAULT_LEASE_MS;
  const renewEveryMs = msOption(options.renewEveryMs ?? leaseMs / 3, 'renewEveryMs', true) ?? leaseMs / 3;
  const lockKey = options.lockKey ?? ((key: string) => key);
  const onError = options.onError ?? (() => undefined);

  async function acquire(key: string): Promise<Hold> {
    if (mode === 'lock') {
      return (await LockHold.acquire(pool, key, LOCK_SQL, [key, waitMs], onError)).hold;
    }
    const values = [key, leaseMs, waitMs];
    return (await LeaseHold.acquire(pool, key, CLAIM_SQL, values, { leaseMs, renewEveryMs }, onError)).hold;
  }

  return {
    mode,
    async withLock<T>(key: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
      if (typeof key !== 'string') {
        throw new InvalidArgumentError('key must be a string', { sqlstate: key == null ? '22004' : '22023' });
      }
      if (typeof fn !== 'function') {
        throw new InvalidArgumentError('fn must be a function', { sqlstate: '22023' });
      }
      const dbKey = lockKey(key);
      const outer = findHold(pool, dbKey);
      if (outer !== undefined) return fn(outer.signal);
      const hold = await acquire(dbKey);
      return hold.run(fn);
    },
  };
}

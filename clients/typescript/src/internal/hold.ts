/**
 * Holding a key: what `withLock` and `ensureSandbox` stand on.
 *
 * Order inside a process: every key has a gate per pool (gate.ts), first
 * come first served; only the holder of the gate asks the database for the
 * key.  Across processes the database orders them (its lock queue in lock
 * mode, claim order in lease mode).
 *
 * `Hold` is what both modes share: the pool, the key, the signal that aborts
 * when ownership can no longer be guaranteed, and how the instance store
 * runs a statement as the holder.  The modes live in lock-tx.ts (`LockTx`)
 * and lease-hold.ts (`LeaseHold`); the call chain's holds in frames.ts; the
 * pool and the waits in pool.ts and wait.ts.
 */
import type { Pool, QueryResult, QueryResultRow } from 'pg';

import type { LockMode } from '../types.js';
import type { Owner } from './gate.js';
import type { BackgroundErrorHandler } from './pool.js';

export abstract class Hold {
  abstract readonly mode: LockMode;
  /** The claim's fence (lease mode), as decimal text; null in lock mode. */
  abstract readonly fence: string | null;
  /** False once the hold has ended (released, committed or rolled back). */
  active = true;
  readonly owner: Owner;
  protected readonly controller = new AbortController();

  constructor(
    readonly pool: Pool,
    readonly key: string,
    owner: Owner,
    protected readonly onError: BackgroundErrorHandler,
    readonly connectTimeoutMs: number,
  ) {
    this.owner = owner;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Abort the signal (once) with `reason`. */
  protected lose(reason: Error): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /** Whether this hold holds `key`'s lock or claim (a lock-mode transaction may hold several keys). */
  abstract holdsKey(key: string): boolean;

  /** Run one statement for the instance store, as the holder of the key. */
  abstract query<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>>;
}

/**
 * A section's hold of a key: runs the section in a frame of the key and
 * ends the hold after it (committed if it resolved, rolled back if it threw).
 */
export interface Section {
  readonly hold: Hold;
  run<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T>;
  /** End the hold without running a section (the key is given back). */
  abandon(): Promise<void>;
}

/**
 * Holding a key: the machinery under `withLock` and `ensureSandbox`.
 *
 * Lock mode (`LockHold`): a client checked out of the pool for the whole
 * critical section, `BEGIN`, the key's transaction-scoped lock
 * (`sandbox_lock` or `sandbox_ensure`), the section, then `COMMIT` (or
 * `ROLLBACK` if it threw) and the client goes back.  An `'error'` or `'end'`
 * of that client, or a statement failing because the connection is gone,
 * aborts the signal: the transaction, and with it the lock, is over.
 *
 * Lease mode (`LeaseHold`): a claim taken by an autocommit
 * `sandbox_ensure(..., lease => ...)`; nothing stays open.  A timer renews it
 * every `renewEveryMs` (default lease/3) with `sandbox_renew`; a renewal that
 * fails (SB001: released or taken over; or any other error), or a lease that
 * runs out locally before a renewal came back, aborts the signal.  At the
 * end `sandbox_release` gives the key back.
 *
 * While a section runs, its hold is in an AsyncLocalStorage context, so the
 * instance store created over the same pool writes the held key *as the
 * holder*: in lock mode inside the section's transaction (so a write after
 * the lock was lost fails instead of racing the next holder, and a delete
 * re-uses the lock instead of waiting for it), in lease mode fenced.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';

import {
  ClaimLostError,
  LockLostError,
  SandboxStoreError,
  isConnectionError,
  sqlstateOf,
  toStoreError,
} from '../errors.js';
import type { LockMode } from '../types.js';
import { RELEASE_SQL, RENEW_SQL } from './sql.js';

/** Called with errors that nobody awaits (a failed release, a failed rollback). */
export type BackgroundErrorHandler = (error: unknown) => void;

const storage = new AsyncLocalStorage<readonly Hold[]>();

/** The live hold of `key` over `pool` in the current async context, if any. */
export function findHold(pool: Pool, key: string): Hold | undefined {
  const holds = storage.getStore();
  if (holds === undefined) return undefined;
  for (let i = holds.length - 1; i >= 0; i--) {
    const hold = holds[i];
    if (hold !== undefined && hold.active && hold.pool === pool && hold.key === key) return hold;
  }
  return undefined;
}

/** Query through the pool, mapping errors to the typed ones. */
export async function poolQuery<R extends QueryResultRow>(
  pool: Pool,
  text: string,
  values: readonly unknown[],
): Promise<QueryResult<R>> {
  try {
    return await pool.query<R>(text, values as unknown[]);
  } catch (error) {
    throw toStoreError(error);
  }
}

export abstract class Hold {
  abstract readonly mode: LockMode;
  /** The claim's fence (lease mode), as decimal text; null in lock mode. */
  abstract readonly fence: string | null;
  /** False once the section has ended (released, committed or rolled back). */
  active = true;
  protected readonly controller = new AbortController();

  constructor(
    readonly pool: Pool,
    readonly key: string,
    protected readonly onError: BackgroundErrorHandler,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Abort the signal (once) with `reason`. */
  protected lose(reason: Error): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /** Run one statement for the instance store, as the holder of the key. */
  abstract query<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>>;

  /** End the hold: commit (lock mode; throws if that fails) or roll back, and give the key back. */
  abstract finish(commit: boolean): Promise<void>;

  /**
   * Run `fn` as the holder (the instance store sees the hold), then end the
   * hold: committed if `fn` resolved, rolled back if it threw.
   */
  async run<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await storage.run([...(storage.getStore() ?? []), this], () => fn(this.signal));
    } catch (error) {
      await this.finish(false);
      throw error;
    }
    await this.finish(true);
    return result;
  }
}

/** Lock mode: a dedicated client in a transaction that holds the key's lock. */
export class LockHold extends Hold {
  readonly mode = 'lock';
  readonly fence = null;
  private lost: LockLostError | undefined;
  /** Set once COMMIT/ROLLBACK is under way (statements queued before finish() still ran in the transaction). */
  private ended = false;
  /** Serializes the savepoint-wrapped statements of concurrent instance-store calls. */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly onClientError = (error: Error): void => this.connectionLost(error);
  private readonly onClientEnd = (): void => this.connectionLost(new Error('Connection ended'));

  private constructor(
    pool: Pool,
    key: string,
    private readonly client: PoolClient,
    onError: BackgroundErrorHandler,
  ) {
    super(pool, key, onError);
    client.on('error', this.onClientError);
    client.on('end', this.onClientEnd);
  }

  /**
   * Check out a client, BEGIN, and run `text` (which takes the key's lock)
   * in the transaction.  Returns the hold and that statement's rows.
   */
  static async acquire<R extends QueryResultRow>(
    pool: Pool,
    key: string,
    text: string,
    values: readonly unknown[],
    onError: BackgroundErrorHandler,
  ): Promise<{ hold: LockHold; rows: R[] }> {
    let client: PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw toStoreError(error);
    }
    const hold = new LockHold(pool, key, client, onError);
    try {
      await hold.statement('BEGIN', []);
      const result = await hold.statement<R>(text, values);
      return { hold, rows: result.rows };
    } catch (error) {
      await hold.finish(false);
      throw error;
    }
  }

  private connectionLost(cause: unknown): void {
    if (this.lost !== undefined) return;
    const what = cause instanceof Error ? cause.message : String(cause);
    this.lost = new LockLostError(`lost the lock on sandbox key "${this.key}": its connection failed (${what})`, {
      sqlstate: sqlstateOf(cause),
      cause,
    });
    this.lose(this.lost);
  }

  /** One statement on the section's client; a dead connection becomes LockLostError. */
  private async statement<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
    if (this.lost !== undefined) throw this.lost;
    try {
      return await this.client.query<R>(text, values as unknown[]);
    } catch (error) {
      if (isConnectionError(error)) this.connectionLost(error);
      if (this.lost !== undefined) throw this.lost;
      throw toStoreError(error);
    }
  }

  /**
   * A statement in the section's transaction, in a savepoint of its own, so
   * that one that fails (a bad argument, say) does not doom the transaction.
   */
  query<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
    const run = async (): Promise<QueryResult<R>> => {
      if (this.ended) throw new SandboxStoreError(`the lock on sandbox key "${this.key}" was already released`);
      await this.statement('SAVEPOINT sandbox_store_op', []);
      try {
        const result = await this.statement<R>(text, values);
        await this.statement('RELEASE SAVEPOINT sandbox_store_op', []);
        return result;
      } catch (error) {
        if (this.lost === undefined) {
          try {
            await this.statement('ROLLBACK TO SAVEPOINT sandbox_store_op', []);
            await this.statement('RELEASE SAVEPOINT sandbox_store_op', []);
          } catch {
            // The transaction is doomed: COMMIT will answer ROLLBACK, and finish() reports it.
          }
        }
        throw error;
      }
    };
    const result = this.chain.then(run, run);
    this.chain = result.catch(() => undefined);
    return result;
  }

  /** Run `text` in the transaction without a savepoint (ensureSandbox's own writes). */
  write<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
    const run = (): Promise<QueryResult<R>> => this.statement<R>(text, values);
    const result = this.chain.then(run, run);
    this.chain = result.catch(() => undefined);
    return result;
  }

  async finish(commit: boolean): Promise<void> {
    if (!this.active) return;
    this.active = false; // new instance-store calls go through the pool from now on
    await this.chain; // those already queued run in the transaction first
    this.ended = true;
    let failure: unknown;
    let broken = this.lost !== undefined;
    if (!broken) {
      try {
        const result = await this.client.query(commit ? 'COMMIT' : 'ROLLBACK');
        if (commit && result.command !== 'COMMIT') {
          failure = new SandboxStoreError(
            `the critical section of sandbox key "${this.key}" was rolled back: a statement in it failed`,
          );
        }
      } catch (error) {
        broken = isConnectionError(error);
        if (broken) this.connectionLost(error);
        failure = this.lost ?? toStoreError(error);
      }
    } else if (commit) {
      failure = this.lost;
    }
    // Hand the client back (destroyed if its connection is gone) before our
    // listeners go: the pool puts its own 'error' listener on at release.
    this.client.release(broken ? (this.lost ?? true) : undefined);
    this.client.removeListener('error', this.onClientError);
    this.client.removeListener('end', this.onClientEnd);
    if (failure !== undefined) {
      if (commit) throw failure;
      if (!(failure instanceof LockLostError)) this.onError(failure);
    }
  }
}

/** Timing of a lease: how long it lasts and how often it is renewed. */
export interface LeaseTiming {
  leaseMs: number;
  renewEveryMs: number;
}

/** Lease mode: a claim (fence + owner token), renewed on a timer while the section runs. */
export class LeaseHold extends Hold {
  readonly mode = 'lease';
  private renewTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  /**
   * When the last successful claim or renewal was *sent* (performance.now()):
   * the server set the expiry later than that, so the lease lasts at least
   * leaseMs from then.
   */
  private validFrom: number;

  private constructor(
    pool: Pool,
    key: string,
    readonly fence: string,
    readonly ownerToken: string,
    private readonly timing: LeaseTiming,
    sentAt: number,
    onError: BackgroundErrorHandler,
  ) {
    super(pool, key, onError);
    this.validFrom = sentAt;
  }

  /**
   * Claim the key with `text` (an autocommit sandbox_claim, or
   * sandbox_ensure with a lease, whose row has `fence` and `owner_token`),
   * and start renewing.
   */
  static async acquire<R extends QueryResultRow & { fence: string | null; owner_token: string | null }>(
    pool: Pool,
    key: string,
    text: string,
    values: readonly unknown[],
    timing: LeaseTiming,
    onError: BackgroundErrorHandler,
  ): Promise<{ hold: LeaseHold; rows: R[] }> {
    const sentAt = performance.now();
    const result = await poolQuery<R>(pool, text, values);
    const row = result.rows[0];
    if (row === undefined || row.fence === null || row.owner_token === null) {
      throw new SandboxStoreError(
        `no claim was returned for sandbox key "${key}" (is the extension at 1.1?)`,
      );
    }
    const hold = new LeaseHold(pool, key, row.fence, row.owner_token, timing, sentAt, onError);
    try {
      // The claim may have been granted only after a long wait for the key:
      // if a renewal is already due, make it before the section starts.
      if (performance.now() - sentAt >= timing.renewEveryMs) await hold.renew(true);
      hold.schedule();
    } catch (error) {
      await hold.finish();
      throw error;
    }
    return { hold, rows: result.rows };
  }

  /** Reads go through the pool; writes of the held key carry the fence (the instance store adds it). */
  query<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
    return poolQuery<R>(this.pool, text, values);
  }

  private schedule(): void {
    if (!this.active || this.signal.aborted) return;
    const now = performance.now();
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    this.renewTimer = setTimeout(
      () => void this.renew(false),
      Math.max(0, this.validFrom + this.timing.renewEveryMs - now),
    );
    this.expiryTimer = setTimeout(
      () => {
        this.lose(
          new LockLostError(
            `lost the claim on sandbox key "${this.key}": its lease (${this.timing.leaseMs} ms) ran out before a renewal succeeded`,
          ),
        );
      },
      Math.max(0, this.validFrom + this.timing.leaseMs - now),
    );
  }

  /** Renew once; on failure abort the signal (and throw, if asked). */
  private async renew(throwOnFailure: boolean): Promise<void> {
    if (!this.active || this.signal.aborted) return;
    const sentAt = performance.now();
    try {
      await poolQuery(this.pool, RENEW_SQL, [this.key, this.ownerToken, this.timing.leaseMs]);
    } catch (error) {
      if (!this.active) return;
      const reason =
        error instanceof ClaimLostError
          ? error
          : new LockLostError(`lost the claim on sandbox key "${this.key}": it could not be renewed`, {
              sqlstate: sqlstateOf(error),
              cause: error,
            });
      this.lose(reason);
      clearTimeout(this.renewTimer);
      clearTimeout(this.expiryTimer);
      if (throwOnFailure) throw reason;
      return;
    }
    if (!this.active || this.signal.aborted) return;
    this.validFrom = sentAt;
    this.schedule();
  }

  async finish(): Promise<void> {
    if (!this.active) return;
    this.active = false;
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    try {
      await poolQuery(this.pool, RELEASE_SQL, [this.key, this.ownerToken]);
    } catch (error) {
      // The lease runs out by itself; nobody waits on this.
      this.onError(error);
    }
  }
}

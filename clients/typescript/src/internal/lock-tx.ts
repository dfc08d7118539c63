/**
 * Lock mode (`LockTx`): a client checked out of the pool, `BEGIN`, the key's
 * transaction-scoped lock (`sandbox_lock` or `sandbox_ensure`), the section,
 * then `COMMIT` (or `ROLLBACK` if it threw) and the client goes back.  A
 * lock-mode section started inside another one of the same call chain (and
 * pool) runs on the outer section's client and transaction: its key's lock
 * joins the outer transaction's locks (advisory transaction locks stack),
 * and is held, with the key's gate, until that transaction ends.  So nested
 * sections use one connection, however deep.  An `'error'` or `'end'` of the
 * client, or a statement failing because the connection is gone, aborts the
 * signal: the transaction, and with it every lock of it, is over.
 *
 * A wait given up through the caller's signal is cancelled in the database;
 * the client is then destroyed, not reused, and a lock granted meanwhile
 * goes with its rolled-back transaction.
 */
import { performance } from 'node:perf_hooks';
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';

import { LockLostError, SandboxStoreError, isConnectionError, sqlstateOf, toStoreError } from '../errors.js';
import { Mutex, gateOf, type Gate, type Owner } from './gate.js';
import { Frame, chainOwners, innermostHold, runInFrame } from './frames.js';
import { Hold, type Section } from './hold.js';
import { connect, type BackgroundErrorHandler } from './pool.js';
import {
  BEGIN_SQL,
  COMMIT_SQL,
  RELEASE_OP_SQL,
  RELEASE_TAKE_SQL,
  ROLLBACK_SQL,
  ROLLBACK_TO_OP_SQL,
  ROLLBACK_TO_TAKE_SQL,
  SAVEPOINT_OP_SQL,
  SAVEPOINT_TAKE_SQL,
} from './sql.js';
import { remainingWait, waitingStatement, type KeyStatement, type WaitOptions } from './wait.js';

/** The innermost live lock-mode transaction over `pool` in this call chain. */
export function findTx(pool: Pool): LockTx | undefined {
  return innermostHold(pool, (hold): hold is LockTx => hold instanceof LockTx);
}

/** Lock mode: a client in a transaction that holds the locks of one or more keys. */
export class LockTx extends Hold {
  readonly mode = 'lock';
  readonly fence = null;
  private lost: LockLostError | undefined;
  /** Set once COMMIT/ROLLBACK is under way (statements queued before finish() still ran in the transaction). */
  private ended = false;
  /** A cancel request was sent on this client: never hand it back to the pool. */
  private poisoned = false;
  /** Serializes statements of concurrent sections and instance-store calls. */
  private chain: Promise<unknown> = Promise.resolve();
  /** The keys whose lock this transaction holds, with their gate and re-entry order. */
  private readonly keys = new Map<string, { gate: Gate; reentry: Mutex }>();
  private readonly onClientError = (error: Error): void => this.connectionLost(error);
  private readonly onClientEnd = (): void => this.connectionLost(new Error('Connection ended'));

  private constructor(
    pool: Pool,
    key: string,
    owner: Owner,
    private readonly client: PoolClient,
    onError: BackgroundErrorHandler,
    connectTimeoutMs: number,
  ) {
    super(pool, key, owner, onError, connectTimeoutMs);
    client.on('error', this.onClientError);
    client.on('end', this.onClientEnd);
  }

  holdsKey(key: string): boolean {
    return this.keys.has(key);
  }

  /**
   * Take `key` in lock mode by running `statement` (which takes the key's
   * lock: sandbox_lock or sandbox_ensure): on the transaction of an outer
   * lock-mode section of this call chain if there is one, else on a client
   * of its own.  Returns the section and that statement's rows.
   */
  static async take<R extends QueryResultRow>(
    pool: Pool,
    key: string,
    statement: KeyStatement,
    wait: WaitOptions,
  ): Promise<{ section: Section; rows: R[] }> {
    const outer = findTx(pool);
    if (outer !== undefined) return outer.takeNested<R>(key, statement, wait);

    const owner: Owner = { waitingFor: undefined };
    const gate = gateOf(pool, key);
    const started = performance.now();
    await gate.enter(owner, [...chainOwners(), owner], wait.waitMs, wait.signal);
    let client: PoolClient;
    try {
      client = await connect(pool, wait.connectTimeoutMs, wait.signal);
    } catch (error) {
      gate.leave();
      throw error;
    }
    const tx = new LockTx(pool, key, owner, client, wait.onError, wait.connectTimeoutMs);
    tx.keys.set(key, { gate, reentry: new Mutex() });
    try {
      await tx.statement(BEGIN_SQL, []);
      const values = statement.values(remainingWait(wait, started));
      const rows = await tx.lockStatement<R>(statement.text, values, wait.signal, false);
      return { section: tx.topSection(), rows };
    } catch (error) {
      // Given up through the signal: the rollback (and the gate) follow
      // once the cancelled statement ended; the caller does not wait.
      if (tx.poisoned) void tx.finish(false).catch(wait.onError);
      else await tx.finish(false);
      throw error;
    }
  }

  /** The section of the key this transaction was opened for: ends the transaction. */
  private topSection(): Section {
    return {
      hold: this,
      run: async <T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> => {
        let result: T;
        try {
          result = await runInFrame(new Frame(this, this.key), () => fn(this.signal));
        } catch (error) {
          await this.finish(false);
          throw error;
        }
        await this.finish(true);
        return result;
      },
      abandon: () => this.finish(false),
    };
  }

  /**
   * A section of `key` nested in this transaction: the key's lock joins the
   * transaction's (taken in a savepoint, so a refusal does not doom it), and
   * stays until the transaction ends.  A key this transaction already holds
   * is entered again at once, after the sections of it already running.
   */
  private async takeNested<R extends QueryResultRow>(
    key: string,
    statement: KeyStatement,
    wait: WaitOptions,
  ): Promise<{ section: Section; rows: R[] }> {
    const held = this.keys.get(key);
    if (held !== undefined) {
      // Re-entry of a key held by this transaction: the statement (a lock
      // it already has, or an ensure) runs at once, after the sections of
      // the key that run now.
      let release!: () => void;
      const turn = new Promise<void>((resolve) => {
        release = resolve;
      });
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => {
        entered = resolve;
      });
      const done = held.reentry.run(async () => {
        entered();
        await turn;
      }, wait.signal);
      await Promise.race([inside, done]);
      try {
        const rows = await this.lockStatement<R>(statement.text, statement.values(wait.waitMs), wait.signal, true);
        return { section: this.nestedSection(key, release), rows };
      } catch (error) {
        release();
        throw error;
      }
    }
    const gate = gateOf(this.pool, key);
    const started = performance.now();
    await gate.enter(this.owner, chainOwners(), wait.waitMs, wait.signal);
    const reentry = new Mutex();
    let release!: () => void;
    const turn = new Promise<void>((resolve) => {
      release = resolve;
    });
    void reentry.run(() => turn);
    try {
      const values = statement.values(remainingWait(wait, started));
      const rows = await this.lockStatement<R>(statement.text, values, wait.signal, true);
      this.keys.set(key, { gate, reentry });
      return { section: this.nestedSection(key, release), rows };
    } catch (error) {
      release();
      gate.leave();
      throw error;
    }
  }

  private nestedSection(key: string, release: () => void): Section {
    return {
      hold: this,
      run: async <T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> => {
        try {
          return await runInFrame(new Frame(this, key), () => fn(this.signal));
        } finally {
          release();
        }
      },
      abandon: async () => release(),
    };
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

  /** One statement on the client, after those queued before; a dead connection becomes LockLostError. */
  private statement<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
    const run = async (): Promise<QueryResult<R>> => {
      if (this.lost !== undefined) throw this.lost;
      try {
        return await this.client.query<R>(text, values as unknown[]);
      } catch (error) {
        this.failed(error);
      }
    };
    const result = this.chain.then(run, run);
    this.chain = result.catch(() => undefined);
    return result;
  }

  private failed(error: unknown): never {
    throw this.failure(error);
  }

  /** The error to raise for a failed statement (LockLostError once the connection is gone). */
  private failure(error: unknown): SandboxStoreError {
    if (isConnectionError(error)) this.connectionLost(error);
    return this.lost ?? toStoreError(error);
  }

  /**
   * The statement that takes a key's lock, cancelled if `signal` aborts while
   * it waits; in a savepoint when the transaction must survive a refusal.
   */
  private lockStatement<R extends QueryResultRow>(
    text: string,
    values: readonly unknown[],
    signal: AbortSignal | undefined,
    savepoint: boolean,
  ): Promise<R[]> {
    return new Promise<R[]>((resolve, reject) => {
      const run = async (): Promise<void> => {
        try {
          signal?.throwIfAborted();
          if (this.lost !== undefined) throw this.lost;
          if (this.ended) throw new SandboxStoreError(`the lock on sandbox key "${this.key}" was already released`);
          if (savepoint) await this.client.query(SAVEPOINT_TAKE_SQL);
        } catch (error) {
          reject(error === signal?.reason || error instanceof SandboxStoreError ? error : this.failure(error));
          return;
        }
        const outcome = await waitingStatement<R>(this.client, text, values, signal);
        if (outcome.abandoned !== undefined) {
          // The caller goes now; the transaction follows once the statement ended.
          this.poisoned = true;
          reject(outcome.error);
          await outcome.abandoned;
        } else if (outcome.result !== undefined) {
          try {
            if (savepoint) await this.client.query(RELEASE_TAKE_SQL);
            resolve(outcome.result.rows);
          } catch (error) {
            reject(this.failure(error));
          }
          return;
        } else {
          reject(this.failure(outcome.error));
        }
        if (savepoint && this.lost === undefined && !isConnectionError(outcome.error)) {
          // Undo the lock (if it came after all) and whatever the statement did.
          try {
            await this.client.query(ROLLBACK_TO_TAKE_SQL);
            await this.client.query(RELEASE_TAKE_SQL);
          } catch {
            // The transaction is doomed: COMMIT will answer ROLLBACK.
          }
        }
      };
      this.chain = this.chain.then(run, run).catch(() => undefined);
    });
  }

  /**
   * A statement of the instance store in the transaction, in a savepoint of
   * its own, so that one that fails (a bad argument, say) does not doom it.
   */
  query<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
    const run = async (): Promise<QueryResult<R>> => {
      if (this.ended) throw new SandboxStoreError(`the lock on sandbox key "${this.key}" was already released`);
      if (this.lost !== undefined) throw this.lost;
      try {
        await this.client.query(SAVEPOINT_OP_SQL);
        const result = await this.client.query<R>(text, values as unknown[]);
        await this.client.query(RELEASE_OP_SQL);
        return result;
      } catch (error) {
        if (!isConnectionError(error) && this.lost === undefined) {
          try {
            await this.client.query(ROLLBACK_TO_OP_SQL);
            await this.client.query(RELEASE_OP_SQL);
          } catch {
            // The transaction is doomed: COMMIT will answer ROLLBACK, and finish() reports it.
          }
        }
        this.failed(error);
      }
    };
    const result = this.chain.then(run, run);
    this.chain = result.catch(() => undefined);
    return result;
  }

  /** Run `text` in the transaction without a savepoint (ensureSandbox's own writes). */
  write<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
    return this.statement<R>(text, values);
  }

  /** Commit (throws if that fails) or roll back, give the client and every key's gate back. */
  async finish(commit: boolean): Promise<void> {
    if (!this.active) return;
    this.active = false; // new instance-store calls go through the pool from now on
    await this.chain; // those already queued run in the transaction first
    this.ended = true;
    let failure: unknown;
    let broken = this.lost !== undefined;
    if (!broken) {
      try {
        const result = await this.client.query(commit ? COMMIT_SQL : ROLLBACK_SQL);
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
    // Hand the client back (destroyed if its connection is gone, or if a
    // cancel request may still arrive) before our listeners go: the pool
    // puts its own 'error' listener on at release.
    const destroy = broken || this.poisoned;
    this.client.release(destroy ? (this.lost ?? true) : undefined);
    this.client.removeListener('error', this.onClientError);
    this.client.removeListener('end', this.onClientEnd);
    for (const { gate } of this.keys.values()) gate.leave();
    this.keys.clear();
    if (failure !== undefined) {
      if (commit) throw failure;
      if (!(failure instanceof LockLostError)) this.onError(failure);
    }
  }
}

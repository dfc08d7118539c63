/**
 * Holding a key: the machinery under `withLock` and `ensureSandbox`.
 *
 * Order inside a process: every key has a gate per pool (gate.ts), first
 * come first served; only the holder of the gate asks the database for the
 * key.  Across processes the database orders them (its lock queue in lock
 * mode, claim order in lease mode).
 *
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
 * Lease mode (`LeaseHold`): a claim taken in autocommit; nothing stays open.
 * A timer renews it every `renewEveryMs` (default lease/3) with
 * `sandbox_renew`; a renewal that fails (SB001: released or taken over; or
 * any other error), or a lease that runs out locally before a renewal came
 * back, aborts the signal.  At the end `sandbox_release` gives the key back.
 *
 * Re-entry: a section's own call chain may enter its key again (the frame
 * of the key is in its AsyncLocalStorage context); children started
 * concurrently inside a section run one after the other (`Frame.children`).
 *
 * Waits end when the caller's signal aborts: a wait at the gate leaves the
 * queue, a wait in the database is cancelled (PostgreSQL's cancel request)
 * and its client destroyed, and a lock or claim granted meanwhile is given
 * back.  Connections are waited for at most `connectTimeoutMs`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { connect as netConnect } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';

import {
  ClaimLostError,
  ConnectionUnavailableError,
  LockLostError,
  SandboxStoreError,
  isConnectionError,
  sqlstateOf,
  toStoreError,
} from '../errors.js';
import type { LockMode } from '../types.js';
import { Gate, Mutex, gateOf, type Owner } from './gate.js';
import { RELEASE_SQL, RENEW_SQL } from './sql.js';

/** Called with errors that nobody awaits (a failed release, a failed rollback). */
export type BackgroundErrorHandler = (error: unknown) => void;

/** Default bound of a wait for a pool connection. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

/** How a caller waits: for the key, for a connection, and until its signal aborts. */
export interface WaitOptions {
  /** For the key: null as `lock_timeout` allows, 0 not at all. */
  waitMs: number | null;
  connectTimeoutMs: number;
  signal?: AbortSignal | undefined;
  onError: BackgroundErrorHandler;
}

/** One entry of a call chain's context: `key` is held by `hold`. */
export class Frame {
  /** The children of this section that enter its key again, one at a time. */
  readonly children = new Mutex();
  constructor(
    readonly hold: Hold,
    readonly key: string,
  ) {}
}

const storage = new AsyncLocalStorage<readonly Frame[]>();

function frames(): readonly Frame[] {
  return storage.getStore() ?? [];
}

/** Run `fn` with `frame` added to the call chain's context. */
export function runInFrame<T>(frame: Frame, fn: () => Promise<T>): Promise<T> {
  return storage.run([...frames(), frame], fn);
}

/** The innermost live frame of `key` over `pool` in this call chain. */
export function findFrame(pool: Pool, key: string): Frame | undefined {
  const stack = frames();
  for (let i = stack.length - 1; i >= 0; i--) {
    const frame = stack[i];
    if (frame !== undefined && frame.hold.active && frame.hold.pool === pool && frame.key === key) return frame;
  }
  return undefined;
}

/** The innermost live lock-mode transaction over `pool` in this call chain. */
export function findTx(pool: Pool): LockTx | undefined {
  const stack = frames();
  for (let i = stack.length - 1; i >= 0; i--) {
    const hold = stack[i]?.hold;
    if (hold instanceof LockTx && hold.active && hold.pool === pool) return hold;
  }
  return undefined;
}

/**
 * The hold that writes of `key` go through: a frame of the key, or a
 * lock-mode transaction of this call chain that holds the key's lock.
 */
export function findHold(pool: Pool, key: string): Hold | undefined {
  const frame = findFrame(pool, key);
  if (frame !== undefined) return frame.hold;
  const tx = findTx(pool);
  return tx !== undefined && tx.holdsKey(key) ? tx : undefined;
}

/** The owners of this call chain (for the gates' cycle check). */
function chainOwners(): Owner[] {
  const owners: Owner[] = [];
  for (const frame of frames()) if (!owners.includes(frame.hold.owner)) owners.push(frame.hold.owner);
  return owners;
}

/** Rejects with the signal's reason once it aborts (never settles otherwise). */
function abortedPromise(signal: AbortSignal | undefined): { promise: Promise<never>; dispose: () => void } {
  if (signal === undefined) return { promise: new Promise<never>(() => undefined), dispose: () => undefined };
  let onAbort: () => void = () => undefined;
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  promise.catch(() => undefined);
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

/**
 * A client of the pool within `timeoutMs` (ConnectionUnavailableError
 * otherwise), or the signal's reason if it aborts first.  A client that
 * arrives after the caller gave up goes straight back.
 */
export async function connect(pool: Pool, timeoutMs: number, signal?: AbortSignal): Promise<PoolClient> {
  signal?.throwIfAborted();
  const pending = pool.connect();
  let timer: NodeJS.Timeout | undefined;
  const aborted = abortedPromise(signal);
  try {
    return await Promise.race([
      pending,
      aborted.promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new ConnectionUnavailableError(
                `no connection of the pool became free within ${timeoutMs} ms (connectTimeoutMs)`,
              ),
            ),
          timeoutMs,
        );
      }),
    ]);
  } catch (error) {
    pending.then((client) => client.release()).catch(() => undefined);
    throw error instanceof SandboxStoreError || error === signal?.reason ? error : toStoreError(error);
  } finally {
    clearTimeout(timer);
    aborted.dispose();
  }
}

/** One autocommit statement on a client of the pool (waited for at most connectTimeoutMs). */
export async function poolQuery<R extends QueryResultRow>(
  pool: Pool,
  text: string,
  values: readonly unknown[],
  connectTimeoutMs: number,
): Promise<QueryResult<R>> {
  const client = await connect(pool, connectTimeoutMs);
  let broken: Error | undefined;
  try {
    return await client.query<R>(text, values as unknown[]);
  } catch (error) {
    if (isConnectionError(error)) broken = error instanceof Error ? error : new Error(String(error));
    throw toStoreError(error);
  } finally {
    client.release(broken);
  }
}

/**
 * Send PostgreSQL's cancel request for the statement `client` runs: a new
 * connection to the same server carrying the backend's process id and
 * secret key, as libpq's PQcancel does (node-postgres has no public API for
 * it).  Best effort: if it cannot be sent, the caller still stops waiting
 * and closes the client, and the backend ends once it notices.
 */
function cancelStatement(client: PoolClient): void {
  const c = client as unknown as { processID: number | null; secretKey: number | null; host?: string; port?: number };
  if (typeof c.processID !== 'number' || typeof c.secretKey !== 'number') return;
  const packet = Buffer.alloc(16);
  packet.writeInt32BE(16, 0);
  packet.writeInt32BE(80877102, 4); // CancelRequest
  packet.writeInt32BE(c.processID, 8);
  packet.writeInt32BE(c.secretKey, 12);
  const port = c.port ?? 5432;
  const socket =
    c.host !== undefined && c.host.startsWith('/')
      ? netConnect(`${c.host}/.s.PGSQL.${port}`)
      : netConnect(port, c.host ?? 'localhost');
  socket.on('error', () => socket.destroy());
  socket.on('connect', () => socket.end(packet));
  socket.setTimeout(5000, () => socket.destroy());
  socket.unref();
}

/** How a statement that may wait for a key ended. */
interface WaitOutcome<R extends QueryResultRow> {
  result: QueryResult<R> | undefined;
  /** The driver's error, or the signal's reason if the caller gave up. */
  error?: unknown;
  /**
   * The caller gave up: a cancel request was sent and the outcome returned
   * at once.  `late` settles when the statement really ended (with its
   * result if it got the key after all); the client must not be reused (a
   * late cancel could hit its next statement).
   */
  abandoned?: Promise<QueryResult<R> | undefined>;
}

/**
 * Run a statement that may wait (for a key) on `client`.  If `signal`
 * aborts meanwhile, send a cancel request and return at once, abandoned.
 */
async function waitingStatement<R extends QueryResultRow>(
  client: PoolClient,
  text: string,
  values: readonly unknown[],
  signal: AbortSignal | undefined,
): Promise<WaitOutcome<R>> {
  signal?.throwIfAborted();
  const pending = client.query<R>(text, values as unknown[]);
  const late = pending.then(
    (result) => result,
    () => undefined,
  );
  if (signal === undefined) {
    try {
      return { result: await pending };
    } catch (error) {
      return { result: undefined, error };
    }
  }
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort = () => resolve('aborted');
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const first = await Promise.race([pending.then((result) => ({ result }), (error: unknown) => ({ error })), aborted]);
    if (first !== 'aborted') {
      return 'result' in first ? { result: first.result } : { result: undefined, error: first.error };
    }
    cancelStatement(client);
    return { result: undefined, error: signal.reason, abandoned: late };
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

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
   * Take `key` in lock mode by running `text` (which takes the key's lock:
   * sandbox_lock or sandbox_ensure): on the transaction of an outer
   * lock-mode section of this call chain if there is one, else on a client
   * of its own.  Returns the section and that statement's rows.
   */
  static async take<R extends QueryResultRow>(
    pool: Pool,
    key: string,
    text: string,
    values: readonly unknown[],
    waitAt: number,
    wait: WaitOptions,
  ): Promise<{ section: Section; rows: R[] }> {
    const outer = findTx(pool);
    if (outer !== undefined) return outer.takeNested<R>(key, text, values, waitAt, wait);

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
      await tx.statement('BEGIN', []);
      const rows = await tx.lockStatement<R>(text, remainingWait(values, waitAt, wait, started), wait.signal, false);
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
    text: string,
    values: readonly unknown[],
    waitAt: number,
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
        const rows = await this.lockStatement<R>(text, values, wait.signal, true);
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
      const rows = await this.lockStatement<R>(text, remainingWait(values, waitAt, wait, started), wait.signal, true);
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
          if (savepoint) await this.client.query('SAVEPOINT sandbox_store_take');
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
            if (savepoint) await this.client.query('RELEASE SAVEPOINT sandbox_store_take');
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
            await this.client.query('ROLLBACK TO SAVEPOINT sandbox_store_take');
            await this.client.query('RELEASE SAVEPOINT sandbox_store_take');
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
        await this.client.query('SAVEPOINT sandbox_store_op');
        const result = await this.client.query<R>(text, values as unknown[]);
        await this.client.query('RELEASE SAVEPOINT sandbox_store_op');
        return result;
      } catch (error) {
        if (!isConnectionError(error) && this.lost === undefined) {
          try {
            await this.client.query('ROLLBACK TO SAVEPOINT sandbox_store_op');
            await this.client.query('RELEASE SAVEPOINT sandbox_store_op');
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

/**
 * The values of a key-taking statement, its wait (milliseconds, at index
 * `waitAt`) reduced by the time already spent at the gate.
 */
function remainingWait(values: readonly unknown[], waitAt: number, wait: WaitOptions, started: number): readonly unknown[] {
  if (wait.waitMs === null || wait.waitMs === 0) return values;
  const left = Math.max(0, wait.waitMs - (performance.now() - started));
  return values.map((v, i) => (i === waitAt ? left : v));
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
    owner: Owner,
    private readonly gate: Gate,
    readonly fence: string,
    readonly ownerToken: string,
    private readonly timing: LeaseTiming,
    sentAt: number,
    onError: BackgroundErrorHandler,
    connectTimeoutMs: number,
  ) {
    super(pool, key, owner, onError, connectTimeoutMs);
    this.validFrom = sentAt;
  }

  /**
   * Claim the key with `text` (an autocommit sandbox_claim, whose row has
   * `fence` and `owner_token`), after this process's earlier callers of the
   * key, and start renewing.
   */
  static async take<R extends QueryResultRow & { fence: string | null; owner_token: string | null }>(
    pool: Pool,
    key: string,
    text: string,
    values: readonly unknown[],
    waitAt: number,
    timing: LeaseTiming,
    wait: WaitOptions,
  ): Promise<{ section: Section; rows: R[]; hold: LeaseHold }> {
    const owner: Owner = { waitingFor: undefined };
    const gate = gateOf(pool, key);
    const started = performance.now();
    await gate.enter(owner, [...chainOwners(), owner], wait.waitMs, wait.signal);
    let row: R | undefined;
    let rows: R[];
    let sentAt: number;
    let handedOff = false; // the gate is left by the cleanup of an abandoned claim
    try {
      const client = await connect(pool, wait.connectTimeoutMs, wait.signal);
      sentAt = performance.now();
      let outcome: WaitOutcome<R>;
      try {
        outcome = await waitingStatement<R>(client, text, remainingWait(values, waitAt, wait, started), wait.signal);
      } catch (error) {
        client.release();
        throw error;
      }
      const abandoned = outcome.abandoned;
      if (abandoned !== undefined) {
        // Given up through the signal: once the cancelled statement ended,
        // close its client, give back a claim granted before the cancel
        // landed, and let the next caller of the key in.
        void (async () => {
          const late = await abandoned;
          client.release(true);
          const token = late?.rows[0]?.owner_token;
          if (token != null) {
            await poolQuery(pool, RELEASE_SQL, [key, token], wait.connectTimeoutMs).catch(wait.onError);
          }
          gate.leave();
        })();
        handedOff = true;
        throw outcome.error;
      }
      client.release(isConnectionError(outcome.error) ? true : undefined);
      row = outcome.result?.rows[0];
      if (outcome.result === undefined) throw toStoreError(outcome.error);
      rows = outcome.result.rows;
    } catch (error) {
      if (!handedOff) gate.leave();
      throw error;
    }
    if (row === undefined || row.fence === null || row.owner_token === null) {
      gate.leave();
      throw new SandboxStoreError(`no claim was returned for sandbox key "${key}" (is the extension at 1.1?)`);
    }
    const hold = new LeaseHold(pool, key, owner, gate, row.fence, row.owner_token, timing, sentAt, wait.onError, wait.connectTimeoutMs);
    try {
      // The claim may have been granted only after a long wait for the key:
      // if a renewal is already due, make it before the section starts.
      if (performance.now() - sentAt >= timing.renewEveryMs) await hold.renew(true);
      hold.schedule();
    } catch (error) {
      await hold.finish();
      throw error;
    }
    return {
      hold,
      rows,
      section: {
        hold,
        run: async <T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> => {
          try {
            return await runInFrame(new Frame(hold, key), () => fn(hold.signal));
          } finally {
            await hold.finish();
          }
        },
        abandon: () => hold.finish(),
      },
    };
  }

  /** Reads go through the pool; writes of the held key carry the fence (the instance store adds it). */
  query<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
    return poolQuery<R>(this.pool, text, values, this.connectTimeoutMs);
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
      await poolQuery(this.pool, RENEW_SQL, [this.key, this.ownerToken, this.timing.leaseMs], this.connectTimeoutMs);
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
      await poolQuery(this.pool, RELEASE_SQL, [this.key, this.ownerToken], this.connectTimeoutMs);
    } catch (error) {
      // The lease runs out by itself; nobody waits on this.
      this.onError(error);
    } finally {
      this.gate.leave();
    }
  }
}

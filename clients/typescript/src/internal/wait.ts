/**
 * Waiting for a key in the database, and giving the wait up: a statement
 * that may wait (`sandbox_lock`, `sandbox_ensure`, `sandbox_claim`) is
 * cancelled with PostgreSQL's cancel request when the caller's signal
 * aborts, and its client must then be closed rather than reused.  A wait
 * bounded by `waitMs` is shortened by the time already spent at the gate.
 */
import { connect as netConnect } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { PoolClient, QueryResult, QueryResultRow } from 'pg';

import type { BackgroundErrorHandler } from './pool.js';

/** How a caller waits: for the key, for a connection, and until its signal aborts. */
export interface WaitOptions {
  /** For the key: null as `lock_timeout` allows, 0 not at all. */
  waitMs: number | null;
  connectTimeoutMs: number;
  signal?: AbortSignal | undefined;
  onError: BackgroundErrorHandler;
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

/** How often a cancel request is sent again while the given-up statement runs. */
const CANCEL_AGAIN_MS = 1000;

/** How a statement that may wait for a key ended. */
export interface WaitOutcome<R extends QueryResultRow> {
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
export async function waitingStatement<R extends QueryResultRow>(
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
    const first = await Promise.race([
      pending.then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      ),
      aborted,
    ]);
    if (first !== 'aborted') {
      return 'result' in first ? { result: first.result } : { result: undefined, error: first.error };
    }
    // A cancel request that reaches the backend before it started the
    // statement (the query still in flight on a loaded machine) is lost:
    // send it again every second until the statement has ended.
    cancelStatement(client);
    const again = setInterval(() => cancelStatement(client), CANCEL_AGAIN_MS);
    again.unref();
    void late.finally(() => clearInterval(again));
    return { result: undefined, error: signal.reason, abandoned: late };
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/**
 * A statement that takes a key and may wait for it (`sandbox_lock`,
 * `sandbox_ensure`, `sandbox_claim`): its text, and its values built from
 * the wait it may still spend on the key (milliseconds; null as
 * `lock_timeout` allows, 0 not at all).
 */
export interface KeyStatement {
  text: string;
  values(waitMs: number | null): readonly unknown[];
}

/** The caller's wait for the key (`wait.waitMs`) reduced by the time already spent at the gate since `started`. */
export function remainingWait(wait: WaitOptions, started: number): number | null {
  if (wait.waitMs === null || wait.waitMs === 0) return wait.waitMs;
  return Math.max(0, wait.waitMs - (performance.now() - started));
}

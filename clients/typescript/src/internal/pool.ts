/**
 * Connections of the pool: waiting for one (bounded by `connectTimeoutMs`,
 * given up when the caller's signal aborts) and one autocommit statement on
 * a client of the pool.  Every driver error leaves as a `SandboxStoreError`.
 */
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';

import { ConnectionUnavailableError, SandboxStoreError, isConnectionError, toStoreError } from '../errors.js';
import { msOption } from './sql.js';

/** Called with errors that nobody awaits (a failed release, a failed rollback). */
export type BackgroundErrorHandler = (error: unknown) => void;

/** Default bound of a wait for a pool connection. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

/** The `connectTimeoutMs` option, checked, with its default filled in (every entry point's). */
export function connectTimeoutOption(value: number | undefined): number {
  return msOption(value ?? DEFAULT_CONNECT_TIMEOUT_MS, 'connectTimeoutMs') ?? DEFAULT_CONNECT_TIMEOUT_MS;
}

/** Rejects with the signal's reason once it aborts (never settles otherwise). */
export function abortedPromise(signal: AbortSignal | undefined): { promise: Promise<never>; dispose: () => void } {
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

/**
 * Every column as the server's text, whatever type parsers the app set:
 * what a statement would read with its results cast to text, for a
 * statement that must stay a plain call (an uncast result) on Citus.
 */
const RAW_TEXT = { getTypeParser: () => (value: string) => value };

/**
 * One autocommit statement on a client of the pool (waited for at most
 * connectTimeoutMs); with raw, every column is read as the server's text.
 */
export async function poolQuery<R extends QueryResultRow>(
  pool: Pool,
  text: string,
  values: readonly unknown[],
  connectTimeoutMs: number,
  raw = false,
): Promise<QueryResult<R>> {
  const client = await connect(pool, connectTimeoutMs);
  let broken: Error | undefined;
  try {
    return raw
      ? await client.query<R>({ text, values: values as unknown[], types: RAW_TEXT })
      : await client.query<R>(text, values as unknown[]);
  } catch (error) {
    if (isConnectionError(error)) broken = error instanceof Error ? error : new Error(String(error));
    throw toStoreError(error);
  } finally {
    client.release(broken);
  }
}

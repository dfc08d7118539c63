/**
 * Shared test helpers.  Tests connect with the libpq environment variables
 * (PGHOST, PGPORT, PGUSER, PGPASSWORD; a superuser) to their own database,
 * which setup-db.ts drops and recreates before the suite.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

import type { SandboxInstanceRecord } from '../src/index.js';

export const TEST_DB = process.env['SANDBOX_STORE_TS_DB'] ?? 'sandbox_store_ts';

/** A pool on the test database. Idle-client errors (terminated backends) are expected in some tests. */
export function newPool(max = 5, options: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ database: TEST_DB, max, application_name: 'sandbox_store_ts', ...options });
  pool.on('error', () => undefined);
  return pool;
}

/** A key no other test uses. */
export function uniqueKey(prefix: string): string {
  return `ts-test/${prefix}/${randomUUID()}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A promise that something started (a section, a resume), and the call that says so. */
export interface Started {
  promise: Promise<void>;
  mark: () => void;
}

export function started(): Started {
  let mark!: () => void;
  const promise = new Promise<void>((resolve) => {
    mark = resolve;
  });
  return { promise, mark };
}

/**
 * Resolves once `check` is true, looking every `everyMs`; rejects with `what`
 * after `timeoutMs`.  For a state the test must wait for (a waiter in the
 * database, a reader parked) instead of a sleep that assumes it was reached:
 * the bound is generous, only a failing test waits for it.
 */
export async function eventually(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
  everyMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

/** Resolves with the abort reason once `signal` aborts; rejects after `timeoutMs`. */
export function aborted(signal: AbortSignal, timeoutMs: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`signal not aborted within ${timeoutMs} ms`)), timeoutMs);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(signal.reason);
      },
      { once: true },
    );
  });
}

/** Rejects if `promise` does not settle within `ms`. */
export async function within<T>(ms: number, promise: Promise<T>, what = 'operation'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Rows of pg_locks for the extension's lock on `key` ("pid:granted"). */
export async function keyLocks(pool: pg.Pool, key: string): Promise<string[]> {
  const result = await pool.query<{ lock: string }>(
    `SELECT pid || ':' || granted AS lock
       FROM sandbox_store.key_locks
      WHERE lock_id = sandbox_store.sandbox_lock_id($1)`,
    [key],
  );
  return result.rows.map((r) => r.lock);
}

/** Backends of `applicationName` that sit in an open transaction. */
export async function openTransactions(pool: pg.Pool, applicationName: string): Promise<number> {
  const result = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity
      WHERE datname = current_database() AND application_name = $1 AND state LIKE 'idle in transaction%'`,
    [applicationName],
  );
  return result.rows[0]?.n ?? -1;
}

/** The live claim on `key`, if any (from the claims view). */
export async function liveClaim(
  pool: pg.Pool,
  key: string,
): Promise<{ fence: string; owner_token: string } | undefined> {
  const result = await pool.query<{ fence: string; owner_token: string }>(
    'SELECT fence::text AS fence, owner_token::text AS owner_token FROM sandbox_store.claims WHERE key = $1',
    [key],
  );
  return result.rows[0];
}

/** The expiry of the live claim on `key`, as the database's text (exact), if there is one. */
export async function claimExpiry(pool: pg.Pool, key: string): Promise<string | undefined> {
  const result = await pool.query<{ expires: string }>(
    'SELECT lease_expires_at::text AS expires FROM sandbox_store.claims WHERE key = $1',
    [key],
  );
  return result.rows[0]?.expires;
}

/** Whether the database server's clock is past `at` (a timestamptz as text). */
export async function databaseClockPast(pool: pg.Pool, at: string): Promise<boolean> {
  const result = await pool.query<{ past: boolean }>('SELECT clock_timestamp() > $1::timestamptz AS past', [at]);
  return result.rows[0]?.past === true;
}

/** Provider calls the fake providers logged for a thread: { create: n, resume: n, ... }. */
export async function providerCalls(pool: pg.Pool, threadId: string): Promise<Record<string, number>> {
  const result = await pool.query<{ op: string; n: number }>(
    'SELECT op, count(*)::int AS n FROM fake_provider_calls WHERE thread_id = $1 GROUP BY op',
    [threadId],
  );
  const counts: Record<string, number> = { create: 0, resume: 0 };
  for (const row of result.rows) counts[row.op] = row.n;
  return counts;
}

/** Log a fake provider call (autocommit, through the pool: visible whatever the caller's transaction does). */
export async function logProviderCall(pool: pg.Pool, threadId: string, op: string, sandboxId: string): Promise<void> {
  await pool.query('INSERT INTO fake_provider_calls (thread_id, op, sandbox_id) VALUES ($1, $2, $3)', [
    threadId,
    op,
    sandboxId,
  ]);
}

/** A record of a fake provider for key, with extra fields overriding the defaults. */
export function record(key: string, extra: Partial<SandboxInstanceRecord> = {}): SandboxInstanceRecord {
  return {
    key,
    provider: 'fake',
    providerSandboxId: 'sbx-1',
    threadId: 'thread-1',
    updatedAt: 1767323045678,
    ...extra,
  };
}

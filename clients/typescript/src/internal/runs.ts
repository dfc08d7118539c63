/**
 * What the run store, the run log adapter and the run driver share: the SQL
 * of the run functions (extension 1.5), the record and offset conversions,
 * and the registry of this process's live driver claims.
 *
 * Records and chunks come back as jsonb's text, parsed here (whatever type
 * parsers the app installed).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool } from 'pg';

import { InvalidLogOffsetError, SandboxStoreError } from '../errors.js';
import { isRunStatus, type RunRecord } from '../run-types.js';

/** run_create_or_resume; $1 run, $2 thread, $3 startedAt, $4 status. */
export const RUN_CREATE_SQL =
  'SELECT sandbox_store.run_create_or_resume(run_id => $1::pg_catalog.text, thread_id => $2::pg_catalog.text,' +
  ' started_at => $3::pg_catalog.float8, status => $4::pg_catalog.text)::pg_catalog.text AS record';

/** run_update; $1 run, $2 patch (JSON text), $3 epoch (NULL: unfenced). */
export const RUN_UPDATE_SQL =
  'SELECT sandbox_store.run_update(run_id => $1::pg_catalog.text, patch => $2::pg_catalog.jsonb,' +
  ' epoch => $3::pg_catalog.int8) AS updated';

/** run_get; $1 run. */
export const RUN_GET_SQL = 'SELECT sandbox_store.run_get(run_id => $1::pg_catalog.text)::pg_catalog.text AS record';

/** run_list_by_thread, in the function's order; $1 thread. */
export const RUN_LIST_BY_THREAD_SQL =
  'SELECT l.r::pg_catalog.text AS record' +
  ' FROM sandbox_store.run_list_by_thread(thread_id => $1::pg_catalog.text) WITH ORDINALITY AS l(r, n) ORDER BY l.n';

/** run_list_reclaimable, in the function's order; $1 now, $2 ttl ms. */
export const RUN_LIST_RECLAIMABLE_SQL =
  'SELECT l.r::pg_catalog.text AS record' +
  ' FROM sandbox_store.run_list_reclaimable(now => $1::pg_catalog.float8, ttl_ms => $2::pg_catalog.float8)' +
  ' WITH ORDINALITY AS l(r, n) ORDER BY l.n';

/** run_find_active; $1 thread. */
export const RUN_FIND_ACTIVE_SQL =
  'SELECT sandbox_store.run_find_active(thread_id => $1::pg_catalog.text)::pg_catalog.text AS record';

/** run_claim; $1 run. */
export const RUN_CLAIM_SQL = 'SELECT sandbox_store.run_claim(run_id => $1::pg_catalog.text)::pg_catalog.text AS epoch';

/** run_log_append; $1 run, $2 chunks (a JSON array), $3 epoch. */
export const LOG_APPEND_SQL =
  'SELECT sandbox_store.run_log_append(run_id => $1::pg_catalog.text, chunks => $2::pg_catalog.jsonb,' +
  ' epoch => $3::pg_catalog.int8)::pg_catalog.text[] AS seqs';

/**
 * run_log_append with notify false (extension 1.7.0): the readers are woken
 * after the commit (run-waker.ts); $1 run, $2 chunks, $3 epoch.
 */
export const LOG_APPEND_QUIET_SQL =
  'SELECT sandbox_store.run_log_append(run_id => $1::pg_catalog.text, chunks => $2::pg_catalog.jsonb,' +
  ' epoch => $3::pg_catalog.int8, notify => false)::pg_catalog.text[] AS seqs';

/** run_log_upsert; $1 run, $2 seqs, $3 chunks (a JSON array), $4 epoch. */
export const LOG_UPSERT_SQL =
  'SELECT sandbox_store.run_log_upsert(run_id => $1::pg_catalog.text, seqs => $2::pg_catalog.int8[],' +
  ' chunks => $3::pg_catalog.jsonb, epoch => $4::pg_catalog.int8)::pg_catalog.text[] AS seqs';

/** run_log_close; $1 run, $2 epoch. */
export const LOG_CLOSE_SQL =
  'SELECT sandbox_store.run_log_close(run_id => $1::pg_catalog.text, epoch => $2::pg_catalog.int8) AS closed';

/**
 * run_log_watch; $1 run.  A reader calls it once LISTEN is in effect: from
 * then on every write of the log notifies (a log nobody watches is written
 * without notifications), and every write before it is committed.
 */
export const LOG_WATCH_SQL = 'SELECT 1 FROM sandbox_store.run_log_watch(run_id => $1::pg_catalog.text)';

/** run_log_read from the start (a snapshot); $1 run. */
export const LOG_SNAPSHOT_SQL =
  'SELECT r.seq::pg_catalog.text AS seq, r.chunk::pg_catalog.text AS chunk' +
  ' FROM sandbox_store.run_log_read(run_id => $1::pg_catalog.text, after => 0) AS r ORDER BY r.seq';

/**
 * A reader's poll, in one statement (one snapshot): the log's status (a row
 * with seq NULL; none when there is no log) and at most $3 entries after $2.
 * Entries committed with the status are all there: a reader that sees the
 * log closed has seen every entry.
 */
export const LOG_POLL_SQL =
  'SELECT NULL::pg_catalog.text AS seq, NULL::pg_catalog.text AS chunk,' +
  ' s.last_seq::pg_catalog.text AS last_seq, s.closed' +
  ' FROM sandbox_store.run_log_status(run_id => $1::pg_catalog.text) AS s' +
  ' UNION ALL' +
  ' SELECT r.seq::pg_catalog.text, r.chunk::pg_catalog.text, NULL, NULL' +
  ' FROM sandbox_store.run_log_read(run_id => $1::pg_catalog.text, after => $2::pg_catalog.int8,' +
  ' max_rows => $3::pg_catalog.int4) AS r';

/** A row of {@link LOG_POLL_SQL}. */
export interface LogPollRow {
  seq: string | null;
  chunk: string | null;
  last_seq: string | null;
  closed: boolean | null;
}

/** The NOTIFY channel of every run log write; the payload is the run id. */
export const RUN_LOG_CHANNEL = 'sandbox_store_run_log';

/**
 * A record as the run functions return it (jsonb text), checked: a status
 * that is not a {@link RunStatus} is refused, not handed on (TanStack AI's
 * readers act destructively on a terminal status).
 */
export function runRecordFromText(text: string | null, what: string): RunRecord | null {
  if (text === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new SandboxStoreError(`${what} returned a record that is not JSON`, { cause });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SandboxStoreError(`${what} returned a record that is not a JSON object`);
  }
  const record = value as Record<string, unknown>;
  if (typeof record['runId'] !== 'string' || typeof record['threadId'] !== 'string') {
    throw new SandboxStoreError(`${what} returned a record without runId or threadId`);
  }
  if (!isRunStatus(record['status'])) {
    throw new SandboxStoreError(
      `${what} returned run "${record['runId']}" with an unrecognized status ${JSON.stringify(record['status'])}`,
    );
  }
  if (typeof record['startedAt'] !== 'number') {
    throw new SandboxStoreError(`${what} returned run "${record['runId']}" without a numeric startedAt`);
  }
  return record as unknown as RunRecord;
}

/** An int8 of the database (as text) as a JS number. */
export function seqNumber(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n))
    throw new SandboxStoreError(`sandbox_store returned a log position out of range: ${text}`);
  return n;
}

/*
 * Offsets: `pg1:<encodeURIComponent(runId)>:<seq>`, naming their run; `-1`
 * (from the start) and `now` (from the tail) are memoryStream's.
 */
const OFFSET_PREFIX = 'pg1:';

export function encodeOffset(runId: string, seq: number): string {
  return `${OFFSET_PREFIX}${encodeURIComponent(runId)}:${seq}`;
}

/** The run and position of an offset this package minted; InvalidLogOffsetError (SBR03) otherwise. */
export function decodeOffset(offset: unknown): { runId: string; seq: number } {
  const fail = (): never => {
    throw new InvalidLogOffsetError(
      `invalid log offset ${JSON.stringify(offset)}: not an offset of a sandbox_store run log`,
      {
        sqlstate: 'SBR03',
      },
    );
  };
  if (typeof offset !== 'string' || !offset.startsWith(OFFSET_PREFIX)) return fail();
  const rest = offset.slice(OFFSET_PREFIX.length);
  const colon = rest.lastIndexOf(':');
  if (colon <= 0) return fail();
  const digits = rest.slice(colon + 1);
  if (!/^[1-9][0-9]{0,15}$/.test(digits)) return fail();
  const seq = Number(digits);
  if (!Number.isSafeInteger(seq)) return fail();
  let runId: string;
  try {
    runId = decodeURIComponent(rest.slice(0, colon));
  } catch {
    return fail();
  }
  // Only the canonical spelling is one this package minted.
  if (encodeOffset(runId, seq) !== offset) return fail();
  return { runId, seq };
}

/*
 * The registry of this process's live driver claims, per pool and run: the
 * run store passes a claim's epoch with its updates, and a fenced write
 * refused with SB001 aborts the claim it was made under.  Entries exist
 * only while a claim's `fn` runs.  Inside a claim's call chain its own claim
 * is found first (an AsyncLocalStorage context), so that a host's updates
 * carry its own epoch even if a later claim of the run lives in the process.
 */

/** A live claim of a run driver of this package. */
export interface LiveClaim {
  readonly runId: string;
  readonly epoch: number;
  readonly controller: AbortController;
}

const claimsByPool = new WeakMap<Pool, Map<string, LiveClaim>>();

export function registerClaim(pool: Pool, claim: LiveClaim): () => void {
  let claims = claimsByPool.get(pool);
  if (claims === undefined) {
    claims = new Map();
    claimsByPool.set(pool, claims);
  }
  const previous = claims.get(claim.runId);
  claims.set(claim.runId, claim);
  return () => {
    const current = claimsByPool.get(pool);
    if (current?.get(claim.runId) !== claim) return;
    if (previous !== undefined && !previous.controller.signal.aborted) current.set(claim.runId, previous);
    else current.delete(claim.runId);
    if (current.size === 0) claimsByPool.delete(pool);
  };
}

const claimChain = new AsyncLocalStorage<ReadonlyArray<{ pool: Pool; claim: LiveClaim }>>();

/** Run `fn` with `claim` in its call chain's context. */
export function runInClaim<T>(pool: Pool, claim: LiveClaim, fn: () => Promise<T>): Promise<T> {
  return claimChain.run([...(claimChain.getStore() ?? []), { pool, claim }], fn);
}

/** The live claim this process holds on `runId` over `pool` (the call chain's own first), if any. */
export function liveClaim(pool: Pool, runId: string): LiveClaim | undefined {
  const chain = claimChain.getStore() ?? [];
  for (let i = chain.length - 1; i >= 0; i--) {
    const entry = chain[i];
    if (entry !== undefined && entry.pool === pool && entry.claim.runId === runId) return entry.claim;
  }
  return claimsByPool.get(pool)?.get(runId);
}

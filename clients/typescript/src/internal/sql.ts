/**
 * Every SQL statement the client sends (the stores', the run functions',
 * the run log waker's and listener's, and a lock-mode section's transaction
 * control), and the value conversions they share.
 *
 * Every function is schema-qualified and called with named arguments (the
 * extension's public contract); operators are spelled OPERATOR(pg_catalog.x)
 * so the session's search_path cannot redirect them.
 */
import { InvalidArgumentError } from '../errors.js';
import type { SandboxInstanceRecord } from '../types.js';

/** `$n` (milliseconds, float8 or NULL) as an interval, NULL staying NULL. */
export function msInterval(param: string): string {
  return `(${param}::pg_catalog.float8 OPERATOR(pg_catalog.*) '1 millisecond'::pg_catalog.interval)`;
}

/**
 * The record columns of `sandbox_store.instances` (or of sandbox_ensure's
 * row), with updated_at as exact epoch milliseconds in text: extract() is
 * numeric, so nothing is lost ("1767323045678.000000").
 */
export function recordColumns(alias: string): string {
  return (
    `${alias}.key, ${alias}.provider, ${alias}.provider_sandbox_id, ${alias}.latest_snapshot_id,` +
    ` ${alias}.thread_id, ${alias}.latest_run_id,` +
    ` (EXTRACT(epoch FROM ${alias}.updated_at) OPERATOR(pg_catalog.*) 1000)::pg_catalog.text AS updated_at_ms`
  );
}

/** A row as selected by {@link recordColumns}. */
export interface RecordRow {
  key: string | null;
  provider: string | null;
  provider_sandbox_id: string | null;
  latest_snapshot_id: string | null;
  thread_id: string | null;
  latest_run_id: string | null;
  updated_at_ms: string | null;
}

/** The record of a row; NULL optional columns become absent keys. */
export function recordFromRow(row: RecordRow): SandboxInstanceRecord {
  if (
    row.key === null ||
    row.provider === null ||
    row.provider_sandbox_id === null ||
    row.thread_id === null ||
    row.updated_at_ms === null
  ) {
    throw new Error('sandbox_store returned a record with a NULL required column');
  }
  // Absent, not null: optional keys exist only when the column has a value (in the interface's key order).
  return {
    key: row.key,
    provider: row.provider,
    providerSandboxId: row.provider_sandbox_id,
    ...(row.latest_snapshot_id !== null ? { latestSnapshotId: row.latest_snapshot_id } : {}),
    threadId: row.thread_id,
    ...(row.latest_run_id !== null ? { latestRunId: row.latest_run_id } : {}),
    updatedAt: Number(row.updated_at_ms),
  };
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/**
 * Epoch milliseconds as a timestamptz literal in UTC that PostgreSQL parses
 * exactly: "2026-01-02 03:04:05.678000+00" (years before 1 AD as "... BC",
 * years past 9999 with more digits).  Integral milliseconds round-trip
 * exactly; a fractional part is kept to the microsecond, PostgreSQL's
 * resolution.  No float arithmetic on the server side.
 */
export function timestamptzLiteral(ms: number, name = 'updatedAt'): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new InvalidArgumentError(`${name} must be a finite number of epoch milliseconds`, {
      sqlstate: '22023',
    });
  }
  let whole = Math.floor(ms);
  let micros = Math.round((ms - whole) * 1000);
  if (micros === 1000) {
    whole += 1;
    micros = 0;
  }
  const date = new Date(whole);
  if (Number.isNaN(date.getTime())) {
    throw new InvalidArgumentError(`${name} is out of range`, { sqlstate: '22008' });
  }
  const year = date.getUTCFullYear();
  const bc = year <= 0;
  return (
    `${pad(bc ? 1 - year : year, 4)}-${pad(date.getUTCMonth() + 1, 2)}-${pad(date.getUTCDate(), 2)}` +
    ` ${pad(date.getUTCHours(), 2)}:${pad(date.getUTCMinutes(), 2)}:${pad(date.getUTCSeconds(), 2)}` +
    `.${pad(date.getUTCMilliseconds(), 3)}${pad(micros, 3)}+00${bc ? ' BC' : ''}`
  );
}

/** Milliseconds option: undefined/null stays NULL; otherwise a finite number >= 0 (or > 0). */
export function msOption(value: number | null | undefined, name: string, positive = false): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (positive && value === 0)) {
    throw new InvalidArgumentError(
      `${name} must be a ${positive ? 'positive' : 'non-negative'} finite number of milliseconds`,
      { sqlstate: '22023' },
    );
  }
  return value;
}

/** A required text field: a string (the server checks emptiness and length), or NULL for the server to refuse. */
export function textArg(value: unknown, name: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') {
    throw new InvalidArgumentError(`${name} must be a string`, { sqlstate: '22023' });
  }
  return value;
}

/** sandbox_get */
export const GET_SQL = `SELECT ${recordColumns('r')} FROM sandbox_store.sandbox_get(key => $1) AS r`;

/**
 * sandbox_get for a lease-mode ensure: the record and whether it is older
 * than max_age ($2, ms; NULL: never) by the database clock, as
 * sandbox_ensure decides (fresh while now() - updated_at <= max_age).
 */
export const ENSURE_GET_SQL =
  `SELECT ${recordColumns('r')},` +
  ` ($2::pg_catalog.float8 IS NOT NULL AND (pg_catalog.now() OPERATOR(pg_catalog.-) r.updated_at)` +
  ` OPERATOR(pg_catalog.>) ${msInterval('$2')}) AS stale` +
  ' FROM sandbox_store.sandbox_get(key => $1) AS r';

/** A row of {@link ENSURE_GET_SQL}. */
export interface EnsureGetRow extends RecordRow {
  stale: boolean;
}

/**
 * Whether the database can hold a record of `key` at all: a non-empty
 * string of at most 1024 bytes of UTF-8 without NUL (the extension's rule:
 * SB_MAX_TEXT_BYTES of src/sandbox_store.h).
 */
export function storableKey(key: unknown): key is string {
  return typeof key === 'string' && key.length > 0 && !key.includes('\0') && Buffer.byteLength(key, 'utf8') <= 1024;
}

/** sandbox_list, most recently updated first. */
export const LIST_SQL =
  `SELECT ${recordColumns('r')} FROM sandbox_store.sandbox_list(thread_id => $1) AS r` +
  ' ORDER BY r.updated_at DESC, r.key';

/**
 * sandbox_upsert, full replace; $7 is a timestamptz literal (or NULL for
 * clock_timestamp()), $8 the fence (NULL: unfenced).
 */
export const UPSERT_SQL =
  `SELECT ${recordColumns('r')} FROM sandbox_store.sandbox_upsert(` +
  `key => $1, provider => $2, provider_sandbox_id => $3, thread_id => $4,` +
  ` latest_snapshot_id => $5, latest_run_id => $6,` +
  ` updated_at => COALESCE($7::pg_catalog.timestamptz, pg_catalog.clock_timestamp()),` +
  ` fence => $8::pg_catalog.int8) AS r`;

/** sandbox_delete; $2 the fence (NULL: unfenced, waits for the key). */
export const DELETE_SQL = `SELECT sandbox_store.sandbox_delete(key => $1, fence => $2::pg_catalog.int8) AS deleted`;

/** sandbox_ensure; $1 key, $2 run_id, $3 max_age ms, $4 provider, $5 wait ms, $6 lease ms. */
export const ENSURE_SQL =
  `SELECT e.action, ${recordColumns('e')}, e.fence::pg_catalog.text AS fence,` +
  ` e.owner_token::pg_catalog.text AS owner_token` +
  ` FROM sandbox_store.sandbox_ensure(key => $1, run_id => $2, max_age => ${msInterval('$3')},` +
  ` provider => $4, wait => ${msInterval('$5')}, lease => ${msInterval('$6')}) AS e`;

/** A row of {@link ENSURE_SQL}. */
export interface EnsureRow extends RecordRow {
  action: 'create' | 'resume' | 'recreate';
  fence: string | null;
  owner_token: string | null;
}

/** sandbox_claim; $1 key, $2 lease ms, $3 wait ms. */
export const CLAIM_SQL =
  `SELECT c.fence::pg_catalog.text AS fence, c.owner_token::pg_catalog.text AS owner_token` +
  ` FROM sandbox_store.sandbox_claim(key => $1, lease => ${msInterval('$2')}, wait => ${msInterval('$3')}) AS c`;

/** sandbox_lock; $1 key, $2 wait ms. */
export const LOCK_SQL = `SELECT sandbox_store.sandbox_lock(key => $1, wait => ${msInterval('$2')})`;

/** sandbox_renew; $1 key, $2 owner token, $3 lease ms. */
export const RENEW_SQL =
  `SELECT sandbox_store.sandbox_renew(key => $1, owner_token => $2::pg_catalog.uuid, lease => ${msInterval('$3')})` +
  ` AS lease_expires_at`;

/** sandbox_release; $1 key, $2 owner token. */
export const RELEASE_SQL =
  'SELECT sandbox_store.sandbox_release(key => $1, owner_token => $2::pg_catalog.uuid) AS released';

/*
 * The checkpoint store.  Timestamps come back as exact epoch milliseconds in
 * text (see recordColumns); `at` is a timestamptz literal or NULL (the
 * database clock); checkpoints go in as JSON text cast to jsonb and come
 * back as jsonb's text (parsed by the client, whatever type parsers the app
 * installed).
 */

function epochMs(expr: string): string {
  return `(EXTRACT(epoch FROM ${expr}) OPERATOR(pg_catalog.*) 1000)::pg_catalog.text`;
}

/** checkpoint_acquire_writer; $1 thread, $2 lease ms, $3 at. */
export const CHECKPOINT_ACQUIRE_SQL =
  `SELECT w.fence::pg_catalog.text AS fence, w.owner_token::pg_catalog.text AS owner_token,` +
  ` ${epochMs('w.expires_at')} AS expires_at_ms` +
  ` FROM sandbox_store.checkpoint_acquire_writer(thread_id => $1::pg_catalog.text,` +
  ` lease_ms => $2::pg_catalog.int8, at => $3::pg_catalog.timestamptz) AS w`;

/** checkpoint_renew_writer; $1 thread, $2 owner token, $3 fence, $4 lease ms, $5 at. */
export const CHECKPOINT_RENEW_SQL = `SELECT ${epochMs(
  'sandbox_store.checkpoint_renew_writer(thread_id => $1::pg_catalog.text, owner_token => $2::pg_catalog.uuid,' +
    ' fence => $3::pg_catalog.int8, lease_ms => $4::pg_catalog.int8, at => $5::pg_catalog.timestamptz)',
)} AS expires_at_ms`;

/** checkpoint_release_writer; $1 thread, $2 owner token, $3 fence. */
export const CHECKPOINT_RELEASE_SQL =
  'SELECT sandbox_store.checkpoint_release_writer(thread_id => $1::pg_catalog.text,' +
  ' owner_token => $2::pg_catalog.uuid, fence => $3::pg_catalog.int8) AS released';

/** checkpoint_append; $1 checkpoint (JSON text), $2 expected head, $3 writer thread, $4 owner token, $5 fence, $6 at. */
export const CHECKPOINT_APPEND_SQL =
  'SELECT sandbox_store.checkpoint_append(checkpoint => $1::pg_catalog.jsonb, expected_head_id => $2::pg_catalog.text,' +
  ' writer_thread_id => $3::pg_catalog.text, owner_token => $4::pg_catalog.uuid, fence => $5::pg_catalog.int8,' +
  ' at => $6::pg_catalog.timestamptz) AS head_id';

/** checkpoint_delete_head; $1 thread, $2 checkpoint, $3 writer thread, $4 owner token, $5 fence, $6 at. */
export const CHECKPOINT_DELETE_HEAD_SQL =
  'SELECT sandbox_store.checkpoint_delete_head(thread_id => $1::pg_catalog.text, checkpoint_id => $2::pg_catalog.text,' +
  ' writer_thread_id => $3::pg_catalog.text, owner_token => $4::pg_catalog.uuid, fence => $5::pg_catalog.int8,' +
  ' at => $6::pg_catalog.timestamptz) AS head_id';

/**
 * checkpoint_fork, which returns the stored copy; $1 source thread, $2
 * source checkpoint, $3 destination thread, $4 destination checkpoint, $5
 * createdAt, $6 writer thread, $7 owner token, $8 fence, $9 at.
 */
export const CHECKPOINT_FORK_SQL =
  'SELECT sandbox_store.checkpoint_fork(source_thread_id => $1::pg_catalog.text,' +
  ' source_checkpoint_id => $2::pg_catalog.text, destination_thread_id => $3::pg_catalog.text,' +
  ' destination_checkpoint_id => $4::pg_catalog.text, created_at => $5::pg_catalog.int8,' +
  ' writer_thread_id => $6::pg_catalog.text, owner_token => $7::pg_catalog.uuid, fence => $8::pg_catalog.int8,' +
  ' at => $9::pg_catalog.timestamptz)::pg_catalog.text AS checkpoint';

/** checkpoint_get; $1 id. */
export const CHECKPOINT_GET_SQL =
  'SELECT sandbox_store.checkpoint_get(id => $1::pg_catalog.text)::pg_catalog.text AS checkpoint';

/** checkpoint_list, in the function's order (createdAt, then id as UTF-8 bytes); $1 thread. */
export const CHECKPOINT_LIST_SQL =
  'SELECT l.checkpoint::pg_catalog.text AS checkpoint' +
  ' FROM sandbox_store.checkpoint_list(thread_id => $1::pg_catalog.text) WITH ORDINALITY AS l(checkpoint, n)' +
  ' ORDER BY l.n';

/** checkpoint_head; $1 thread. */
export const CHECKPOINT_HEAD_SQL = 'SELECT sandbox_store.checkpoint_head(thread_id => $1::pg_catalog.text) AS head_id';

/** checkpoint_blob_references, by key as UTF-8 bytes. */
export const CHECKPOINT_BLOBS_SQL =
  'SELECT b.key, b.refs::pg_catalog.text AS refs' +
  ' FROM sandbox_store.checkpoint_blob_references() WITH ORDINALITY AS b(key, refs, n) ORDER BY b.n';

/*
 * Durable runs: the run functions (extension 1.5).  Records and chunks come
 * back as jsonb's text (runs.ts parses them).  A statement that calls one
 * run's function is a plain call, its result not cast: Citus sends only a
 * plain call to the node of the run's shard.  Its result is read as the
 * server's text (poolQuery's raw), which is what the cast gave.
 */

/** run_create_or_resume; $1 run, $2 thread, $3 startedAt, $4 status. */
export const RUN_CREATE_SQL =
  'SELECT sandbox_store.run_create_or_resume(run_id => $1::pg_catalog.text, thread_id => $2::pg_catalog.text,' +
  ' started_at => $3::pg_catalog.float8, status => $4::pg_catalog.text) AS record';

/** run_update; $1 run, $2 patch (JSON text), $3 epoch (NULL: unfenced). */
export const RUN_UPDATE_SQL =
  'SELECT sandbox_store.run_update(run_id => $1::pg_catalog.text, patch => $2::pg_catalog.jsonb,' +
  ' epoch => $3::pg_catalog.int8) AS updated';

/** run_get; $1 run. */
export const RUN_GET_SQL = 'SELECT sandbox_store.run_get(run_id => $1::pg_catalog.text) AS record';

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
export const RUN_CLAIM_SQL = 'SELECT sandbox_store.run_claim(run_id => $1::pg_catalog.text) AS epoch';

/** run_log_append; $1 run, $2 chunks (a JSON array), $3 epoch. */
export const LOG_APPEND_SQL =
  'SELECT sandbox_store.run_log_append(run_id => $1::pg_catalog.text, chunks => $2::pg_catalog.jsonb,' +
  ' epoch => $3::pg_catalog.int8)::pg_catalog.text[] AS seqs';

/**
 * run_log_append with notify false (extension 1.7.0): the readers are woken
 * after the commit (run-waker.ts); $1 run, $2 chunks, $3 epoch.  The call
 * alone, its int8[] uncast (pg gives each int8 as a string): on Citus only a
 * bare call is sent to the node that holds the run (extension 1.8.0).
 */
export const LOG_APPEND_QUIET_SQL =
  'SELECT sandbox_store.run_log_append(run_id => $1::pg_catalog.text, chunks => $2::pg_catalog.jsonb,' +
  ' epoch => $3::pg_catalog.int8, notify => false) AS seqs';

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

/** run_log_wake for every run of $1. */
export const LOG_WAKE_SQL = 'SELECT sandbox_store.run_log_wake(VARIADIC $1::pg_catalog.text[]) AS woken';

/** The channel of every run of $1 notified directly (run_log_wake's notification, without its watched check). */
export const LOG_NOTIFY_SQL =
  "SELECT pg_catalog.pg_notify('sandbox_store_run_log', r) FROM pg_catalog.unnest($1::pg_catalog.text[]) AS r";

/** Whether this role may call run_log_wake and run_log_append with notify (1.7.0). */
export const LOG_WAKE_SUPPORTED_SQL =
  'SELECT COALESCE(pg_catalog.has_function_privilege(' +
  "pg_catalog.to_regprocedure('sandbox_store.run_log_wake(pg_catalog.text[])'), 'EXECUTE')" +
  ' AND pg_catalog.has_function_privilege(' +
  "pg_catalog.to_regprocedure('sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8, pg_catalog.bool)')," +
  " 'EXECUTE'), false) AS supported";

/** The listener connection's LISTEN (run-listener.ts). */
export const RUN_LOG_LISTEN_SQL = `LISTEN ${RUN_LOG_CHANNEL}`;

/*
 * Transaction control of a lock-mode section (lock-tx.ts): its transaction,
 * a savepoint around the wait for another key's lock (take), and one around
 * each statement of the instance store (op).
 */

export const BEGIN_SQL = 'BEGIN';
export const COMMIT_SQL = 'COMMIT';
export const ROLLBACK_SQL = 'ROLLBACK';
export const SAVEPOINT_TAKE_SQL = 'SAVEPOINT sandbox_store_take';
export const RELEASE_TAKE_SQL = 'RELEASE SAVEPOINT sandbox_store_take';
export const ROLLBACK_TO_TAKE_SQL = 'ROLLBACK TO SAVEPOINT sandbox_store_take';
export const SAVEPOINT_OP_SQL = 'SAVEPOINT sandbox_store_op';
export const RELEASE_OP_SQL = 'RELEASE SAVEPOINT sandbox_store_op';
export const ROLLBACK_TO_OP_SQL = 'ROLLBACK TO SAVEPOINT sandbox_store_op';

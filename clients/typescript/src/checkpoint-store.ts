import type { Pool, QueryResult, QueryResultRow } from 'pg';

import {
  InvalidArgumentError,
  SandboxCheckpointConflictError,
  SandboxCheckpointDuplicateIdError,
  SandboxCheckpointError,
  SandboxCheckpointInvalidEntryError,
  SandboxCheckpointInvalidIdError,
  SandboxCheckpointNotHeadError,
  SandboxCheckpointParentMismatchError,
  SandboxCheckpointWriterConflictError,
  SandboxCheckpointWriterLostError,
  SandboxStoreError,
  toStoreError,
} from './errors.js';
import { connectTimeoutOption, poolQuery } from './internal/pool.js';
import {
  CHECKPOINT_ACQUIRE_SQL,
  CHECKPOINT_APPEND_SQL,
  CHECKPOINT_BLOBS_SQL,
  CHECKPOINT_DELETE_HEAD_SQL,
  CHECKPOINT_FORK_SQL,
  CHECKPOINT_GET_SQL,
  CHECKPOINT_HEAD_SQL,
  CHECKPOINT_LIST_SQL,
  CHECKPOINT_RELEASE_SQL,
  CHECKPOINT_RENEW_SQL,
  timestamptzLiteral,
} from './internal/sql.js';
import type {
  SandboxCheckpoint,
  SandboxCheckpointForkCapability,
  SandboxCheckpointForkInput,
  SandboxCheckpointStore,
  SandboxCheckpointStoreOptions,
  SandboxCheckpointWriter,
  SandboxCheckpointWriterLease,
} from './types.js';

/** Default `leaseDurationMs` of a checkpoint writer. */
export const DEFAULT_CHECKPOINT_LEASE_MS = 120_000;
/** Default `renewAfterMs` of a checkpoint writer. */
export const DEFAULT_CHECKPOINT_RENEW_AFTER_MS = 45_000;

export interface CheckpointStoreOptions extends SandboxCheckpointStoreOptions {
  /** How long a call waits for a connection of the pool (default 30 000 ms). */
  connectTimeoutMs?: number;
}

/** The checkpoint store: TanStack AI's interface, with the (optional there) atomic fork. */
// biome-ignore lint/suspicious/noExplicitAny: see SandboxCheckpoint in types.ts
export interface PgSandboxCheckpointStore<TMessage = any> extends SandboxCheckpointStore<TMessage> {
  forkFromCheckpoint: SandboxCheckpointForkCapability<TMessage>['forkFromCheckpoint'];
}

/** Longest ids the database keeps (bytes of UTF-8). */
const MAX_CHECKPOINT_ID_BYTES = 1024;
const MAX_THREAD_ID_BYTES = 1000;

/** A UTF-16 code unit of a surrogate pair without its other half. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * In JSON.stringify's output (well-formed since ES2019): an escape of
 * U+0000 or of a lone surrogate, which jsonb refuses (22P05, 22P02).  An
 * even run of backslashes before it is escaped backslashes, not an escape.
 */
const JSONB_CANNOT_HOLD = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Never an owner token (gen_random_uuid() makes version-4 UUIDs). */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * Why a string can be no id (empty, not well-formed Unicode, U+0000), or
 * undefined.  node-postgres would send a lone surrogate as U+FFFD, naming
 * another id, so such a string never leaves the process.
 */
function idProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'is not a string';
  if (value.length === 0) return 'is empty';
  if (LONE_SURROGATE.test(value)) return 'is not well-formed Unicode (it has an unpaired surrogate)';
  if (value.includes('\0')) return 'contains U+0000, which PostgreSQL text cannot hold';
  return undefined;
}

/** An id to write with: INVALID_ID (SBC07, nothing sent) if it can be no id. */
function writeId(value: unknown, what: string): string {
  const problem = idProblem(value);
  if (problem !== undefined) throw new SandboxCheckpointInvalidIdError(`${what} ${problem}`, { sqlstate: 'SBC07' });
  return value as string;
}

/**
 * An id to look up: INVALID_ID if it is not a non-empty well-formed string;
 * null if no checkpoint or thread can have it (U+0000, too long), so the
 * caller answers "none" without asking.
 */
function readId(value: unknown, what: string, maxBytes: number): string | null {
  if (typeof value === 'string' && value.length > 0 && !LONE_SURROGATE.test(value)) {
    return value.includes('\0') || Buffer.byteLength(value, 'utf8') > maxBytes ? null : value;
  }
  return writeId(value, what);
}

/** The writer's arguments; a token or fence that no writer can have is sent as one that none has. */
function writerArgs(writer: unknown): [threadId: string, ownerToken: string, fence: string] {
  const w = (typeof writer === 'object' && writer !== null ? writer : {}) as Partial<SandboxCheckpointWriter>;
  const threadId = writeId(w.threadId, 'writer thread id');
  const ownerToken = typeof w.ownerToken === 'string' && UUID.test(w.ownerToken) ? w.ownerToken : NIL_UUID;
  const fence = typeof w.fence === 'number' && Number.isSafeInteger(w.fence) && w.fence > 0 ? String(w.fence) : '0';
  return [threadId, ownerToken, fence];
}

/**
 * The checkpoint as JSON text for the jsonb parameter, after the checks
 * that must not reach the database: its ids (INVALID_ID), and strings jsonb
 * cannot hold (INVALID_ENTRY).  Every other rule is the database's.  A
 * missing parentCheckpointId is stored as null, as TanStack AI's store does.
 */
function checkpointJson(checkpoint: unknown, expectedHeadId: unknown): string {
  if (typeof checkpoint !== 'object' || checkpoint === null || Array.isArray(checkpoint)) {
    throw new SandboxCheckpointInvalidEntryError('the checkpoint must be an object', { sqlstate: 'SBC08' });
  }
  const c = checkpoint as Partial<Record<keyof SandboxCheckpoint, unknown>>;
  writeId(c.id, 'checkpoint id');
  writeId(c.threadId, 'checkpoint thread id');
  if (c.parentCheckpointId !== null && c.parentCheckpointId !== undefined) {
    writeId(c.parentCheckpointId, 'parent checkpoint id');
  }
  if (expectedHeadId !== null) writeId(expectedHeadId, 'expected head id');
  let json: string;
  try {
    json = JSON.stringify({ ...c, parentCheckpointId: c.parentCheckpointId ?? null });
  } catch (error) {
    throw new SandboxCheckpointInvalidEntryError(
      `the checkpoint cannot be written as JSON: ${error instanceof Error ? error.message : String(error)}`,
      { sqlstate: 'SBC08', cause: error },
    );
  }
  const bad = JSONB_CANNOT_HOLD.exec(json);
  if (bad !== null) {
    throw new SandboxCheckpointInvalidEntryError(
      bad[0].endsWith('\\u0000')
        ? 'the checkpoint contains U+0000 in a string, which PostgreSQL jsonb cannot hold'
        : 'the checkpoint contains a string that is not well-formed Unicode (an unpaired surrogate)',
      { sqlstate: 'SBC08' },
    );
  }
  return json;
}

type Operation = 'acquire' | 'write' | 'fork' | 'read';

/** A database error of a checkpoint call as the checkpoint error of its SQLSTATE (others unchanged). */
function checkpointError(error: unknown, operation: Operation): SandboxStoreError {
  const storeError = toStoreError(error);
  const sqlstate = storeError.sqlstate;
  if (sqlstate === undefined || !(sqlstate === 'SB001' || sqlstate.startsWith('SBC'))) return storeError;
  const driverError = error instanceof SandboxStoreError ? (error.cause ?? error) : error;
  const detail =
    typeof driverError === 'object' && driverError !== null && 'detail' in driverError
      ? (driverError as { detail?: unknown }).detail
      : undefined;
  const message =
    typeof detail === 'string' && detail !== '' ? `${storeError.message} (${detail})` : storeError.message;
  const options = { sqlstate, cause: driverError };
  switch (sqlstate) {
    case 'SBC01':
      return new SandboxCheckpointConflictError(message, options);
    case 'SBC02':
      return new SandboxCheckpointParentMismatchError(message, options);
    case 'SBC03':
      // A fork's destination id taken (by any thread) is a destination that is not empty.
      return operation === 'fork'
        ? new SandboxCheckpointError('SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY', message, options)
        : new SandboxCheckpointDuplicateIdError(message, options);
    case 'SBC04':
      return new SandboxCheckpointNotHeadError(message, options);
    case 'SBC05':
      return new SandboxCheckpointWriterConflictError(message, options);
    case 'SB001':
      return new SandboxCheckpointWriterLostError(message, options);
    case 'SBC07':
      return new SandboxCheckpointInvalidIdError(message, options);
    case 'SBC08':
      return new SandboxCheckpointInvalidEntryError(message, options);
    case 'SBC09':
      return new SandboxCheckpointError('SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND', message, options);
    case 'SBC10':
      return new SandboxCheckpointError('SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY', message, options);
    case 'SBC11':
      return new SandboxCheckpointError('SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH', message, options);
    default:
      return storeError;
  }
}

interface WriterRow {
  fence: string;
  owner_token: string;
  expires_at_ms: string;
}

function parseCheckpoint<T>(text: string | null | undefined): T | null {
  return text === null || text === undefined ? null : (JSON.parse(text) as T);
}

/**
 * A TanStack AI `SandboxCheckpointStore` on the extension's checkpoint
 * functions (`checkpoint_*`): the checkpoints of each thread, its head,
 * its single writer (a lease with an owner token and a fence) and the
 * references of the blobs the checkpoints point to.
 *
 * - Every write (`append`, `deleteHead`, `forkFromCheckpoint`) is one call
 *   that checks writer and head together in the database, so two writers,
 *   or a stale writer after a takeover, never both succeed.  Each call is
 *   autocommit on a connection of its own (it never joins a lock-mode
 *   section's transaction): resolved means committed.
 * - `now`: without it, the database server's clock decides lease expiry
 *   (one clock for every app server).  With it, every call passes `now()` as
 *   the time of the call (tests drive expiry with it); every store of one
 *   database must then use the same clock.
 * - Errors are `SandboxCheckpointError`s with TanStack AI's codes (the
 *   SQLSTATE on `sqlstate`); ids that are not well-formed Unicode, or hold
 *   U+0000, are refused with `SANDBOX_SNAPSHOT_INVALID_ID` before anything
 *   is sent.
 */
// biome-ignore lint/suspicious/noExplicitAny: see SandboxCheckpoint in types.ts
export function createCheckpointStore<TMessage = any>(
  pool: Pool,
  options: CheckpointStoreOptions = {},
): PgSandboxCheckpointStore<TMessage> {
  const connectTimeoutMs = connectTimeoutOption(options.connectTimeoutMs);
  const leaseMs = options.leaseDurationMs ?? DEFAULT_CHECKPOINT_LEASE_MS;
  if (typeof leaseMs !== 'number' || !Number.isSafeInteger(leaseMs) || leaseMs <= 0) {
    throw new InvalidArgumentError('leaseDurationMs must be a positive whole number of milliseconds', {
      sqlstate: '22023',
    });
  }
  const renewAfterMs = options.renewAfterMs ?? DEFAULT_CHECKPOINT_RENEW_AFTER_MS;
  if (typeof renewAfterMs !== 'number' || !Number.isFinite(renewAfterMs) || renewAfterMs <= 0) {
    throw new InvalidArgumentError('renewAfterMs must be a positive finite number of milliseconds', {
      sqlstate: '22023',
    });
  }
  if (renewAfterMs >= leaseMs) {
    throw new InvalidArgumentError(
      `renewAfterMs (${renewAfterMs}) must be below leaseDurationMs (${leaseMs}): a writer renews before its lease ends`,
      { sqlstate: '22023' },
    );
  }
  const now = options.now;
  if (now !== undefined && typeof now !== 'function') {
    throw new InvalidArgumentError('now must be a function that returns epoch milliseconds', { sqlstate: '22023' });
  }

  /** The time of a call: `now()` as a timestamptz literal, or NULL for the database clock. */
  function at(): string | null {
    return now === undefined ? null : timestamptzLiteral(now(), 'now()');
  }

  async function call<R extends QueryResultRow>(
    text: string,
    values: readonly unknown[],
    operation: Operation,
  ): Promise<QueryResult<R>> {
    try {
      return await poolQuery<R>(pool, text, values, connectTimeoutMs);
    } catch (error) {
      throw checkpointError(error, operation);
    }
  }

  async function get(id: string): Promise<SandboxCheckpoint<TMessage> | null> {
    const key = readId(id, 'checkpoint id', MAX_CHECKPOINT_ID_BYTES);
    if (key === null) return null;
    const result = await call<{ checkpoint: string | null }>(CHECKPOINT_GET_SQL, [key], 'read');
    return parseCheckpoint(result.rows[0]?.checkpoint);
  }

  function lease(threadId: string, row: WriterRow): SandboxCheckpointWriterLease {
    const ownerToken = row.owner_token;
    const fence = Number(row.fence);
    let expiresAt = Number(row.expires_at_ms);
    return {
      threadId,
      ownerToken,
      fence,
      get expiresAt() {
        return expiresAt;
      },
      renewAfterMs,
      async renew() {
        const result = await call<{ expires_at_ms: string }>(
          CHECKPOINT_RENEW_SQL,
          [threadId, ownerToken, String(fence), leaseMs, at()],
          'write',
        );
        expiresAt = Number(result.rows[0]?.expires_at_ms);
        return { expiresAt };
      },
      async release() {
        await call(CHECKPOINT_RELEASE_SQL, [threadId, ownerToken, String(fence)], 'write');
      },
    };
  }

  return {
    get,

    async list(threadId: string): Promise<Array<SandboxCheckpoint<TMessage>>> {
      const key = readId(threadId, 'thread id', MAX_THREAD_ID_BYTES);
      if (key === null) return [];
      const result = await call<{ checkpoint: string }>(CHECKPOINT_LIST_SQL, [key], 'read');
      return result.rows.map((row) => JSON.parse(row.checkpoint) as SandboxCheckpoint<TMessage>);
    },

    async getHead(threadId: string): Promise<string | null> {
      const key = readId(threadId, 'thread id', MAX_THREAD_ID_BYTES);
      if (key === null) return null;
      const result = await call<{ head_id: string | null }>(CHECKPOINT_HEAD_SQL, [key], 'read');
      return result.rows[0]?.head_id ?? null;
    },

    async acquireWriter(threadId: string): Promise<SandboxCheckpointWriterLease> {
      const key = writeId(threadId, 'thread id');
      const result = await call<WriterRow>(CHECKPOINT_ACQUIRE_SQL, [key, leaseMs, at()], 'acquire');
      const row = result.rows[0];
      if (row === undefined) throw new SandboxStoreError('checkpoint_acquire_writer returned no row');
      return lease(key, row);
    },

    async append(input: {
      checkpoint: SandboxCheckpoint<TMessage>;
      expectedHeadId: string | null;
      writer: SandboxCheckpointWriter;
    }): Promise<{ headId: string }> {
      const json = checkpointJson(input.checkpoint, input.expectedHeadId);
      const [threadId, ownerToken, fence] = writerArgs(input.writer);
      const result = await call<{ head_id: string }>(
        CHECKPOINT_APPEND_SQL,
        [json, input.expectedHeadId, threadId, ownerToken, fence, at()],
        'write',
      );
      const headId = result.rows[0]?.head_id;
      if (typeof headId !== 'string') throw new SandboxStoreError('checkpoint_append returned no head');
      return { headId };
    },

    async deleteHead(input: {
      threadId: string;
      checkpointId: string;
      writer: SandboxCheckpointWriter;
    }): Promise<void> {
      const threadId = writeId(input.threadId, 'thread id');
      const checkpointId = writeId(input.checkpointId, 'checkpoint id');
      const writer = writerArgs(input.writer);
      await call(CHECKPOINT_DELETE_HEAD_SQL, [threadId, checkpointId, ...writer, at()], 'write');
    },

    async listBlobReferences(): Promise<Array<{ key: string; references: number }>> {
      const result = await call<{ key: string; refs: string }>(CHECKPOINT_BLOBS_SQL, [], 'read');
      return result.rows.map((row) => ({ key: row.key, references: Number(row.refs) }));
    },

    async forkFromCheckpoint(input: SandboxCheckpointForkInput): Promise<{ checkpoint: SandboxCheckpoint<TMessage> }> {
      const sourceThreadId = writeId(input.sourceThreadId, 'source thread id');
      const sourceCheckpointId = writeId(input.sourceCheckpointId, 'source checkpoint id');
      const destinationThreadId = writeId(input.destinationThreadId, 'destination thread id');
      const destinationCheckpointId = writeId(input.destinationCheckpointId, 'destination checkpoint id');
      const writer = writerArgs(input.writer);
      const createdAt = input.createdAt;
      if (typeof createdAt !== 'number' || !Number.isInteger(createdAt)) {
        throw new SandboxCheckpointInvalidEntryError(
          'createdAt is a whole number of milliseconds since 1970-01-01 UTC',
          {
            sqlstate: 'SBC08',
          },
        );
      }
      if (sourceThreadId === destinationThreadId) {
        // The database says so too (after the writer check); TanStack AI says so first.
        throw new SandboxCheckpointError(
          'SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH',
          'a fork copies a checkpoint into another thread: source and destination thread are the same',
          { sqlstate: 'SBC11' },
        );
      }
      const result = await call<{ checkpoint: string | null }>(
        CHECKPOINT_FORK_SQL,
        [
          sourceThreadId,
          sourceCheckpointId,
          destinationThreadId,
          destinationCheckpointId,
          String(createdAt),
          ...writer,
          at(),
        ],
        'fork',
      );
      const checkpoint = parseCheckpoint<SandboxCheckpoint<TMessage>>(result.rows[0]?.checkpoint);
      if (checkpoint === null) throw new SandboxStoreError('checkpoint_fork returned no checkpoint');
      return { checkpoint };
    },
  };
}

import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';

import { ClaimLostError, InvalidArgumentError, InvalidLogOffsetError, SandboxStoreError } from './errors.js';
import { connectTimeoutOption, poolQuery } from './internal/pool.js';
import { RunLogListener } from './internal/run-listener.js';
import { isMissingOrDenied, RunLogWaker } from './internal/run-waker.js';
import { decodeOffset, encodeOffset, loseLiveClaim, seqNumber } from './internal/runs.js';
import {
  LOG_APPEND_QUIET_SQL,
  LOG_APPEND_SQL,
  LOG_CLOSE_SQL,
  LOG_POLL_SQL,
  LOG_SNAPSHOT_SQL,
  LOG_UPSERT_SQL,
  LOG_WATCH_SQL,
  msOption,
  type LogPollRow,
} from './internal/sql.js';
import type { RunLogEntry, UpsertableStreamDurability } from './run-types.js';

/** How long a from-start join waits for a run's first chunk (memoryStream's default). */
export const DEFAULT_FIRST_CHUNK_DEADLINE_MS = 100;

/** Entries a reader fetches per query. */
const READ_PAGE = 500;

/**
 * A live reader that heard nothing for this long reads the log once more:
 * a writer killed between an append's commit and its wake (run_log_wake,
 * sent after the commit) leaves no notification behind, and this bounds
 * the delay that costs.  One indexed query per idle reader per period.
 */
export const DEFAULT_IDLE_REREAD_MS = 5_000;

/** Which run (and from where) an adapter made without a `Request` attaches to. */
export interface StreamDurabilityInit {
  runId: string;
  /** The offset `resumeFrom()` returns; `null` (default) for a producer. */
  offset?: string | null | undefined;
}

export interface StreamDurabilityOptions {
  /**
   * Write under this driver epoch (a run driver's claim): every append,
   * upsert and close is refused with `ClaimLostError` (SB001) once the run
   * was claimed again, and nothing is written.  Unset: unfenced writes,
   * accepted only while no driver has claimed the run.
   */
  epoch?: number | undefined;
  /**
   * How long a from-start join (`'-1'`, `'now'`) of a run whose log holds
   * nothing waits for the first chunk before it throws (default 100 ms, as
   * memoryStream).
   */
  firstChunkDeadlineMs?: number | undefined;
  /**
   * How long a live reader that heard no notification waits before it reads
   * the log once more (default 5 000 ms): what a wake lost with its writer
   * costs at most.  Longer: fewer reads of idle logs.
   */
  idleRereadMs?: number | undefined;
  /** How long a call waits for a connection of the pool (default 30 000 ms). */
  connectTimeoutMs?: number | undefined;
}

/** The adapter: TanStack AI 0.58's `UpsertableStreamDurability<string>`, plus the run it is for. */
// biome-ignore lint/suspicious/noExplicitAny: see run-types.ts
export interface PgStreamDurability<TChunk = any> extends UpsertableStreamDurability<string, TChunk> {
  /** The run this adapter reads and writes. */
  readonly runId: string;
}

/** What the adapter reads of a `Request`: its URL and headers (a fetch `Request` is one). */
export interface RequestLike {
  url: string;
  headers: { get(name: string): string | null };
}

function isRequestLike(source: unknown): source is RequestLike {
  return (
    typeof source === 'object' &&
    source !== null &&
    typeof (source as RequestLike).url === 'string' &&
    typeof (source as RequestLike).headers?.get === 'function'
  );
}

function searchParam(request: RequestLike, name: string): string | null {
  try {
    return new URL(request.url).searchParams.get(name);
  } catch {
    return null;
  }
}

function validRunId(runId: unknown): string {
  if (typeof runId !== 'string' || runId.length === 0 || /[\r\n]/.test(runId)) {
    throw new InvalidArgumentError(`Invalid runId (must be non-empty and contain no CR/LF): ${JSON.stringify(runId)}`, {
      sqlstate: '22023',
    });
  }
  return runId;
}

function isFromStart(offset: string): boolean {
  return offset === '-1' || offset === 'now';
}

function chunksJson(chunks: readonly unknown[]): string {
  for (const [index, chunk] of chunks.entries()) {
    if (typeof chunk !== 'object' || chunk === null || Array.isArray(chunk)) {
      throw new InvalidArgumentError(`chunks[${index}] is not an object`, { sqlstate: '22023' });
    }
  }
  return JSON.stringify(chunks);
}

/**
 * A run's delivery log in the database: TanStack AI 0.58's
 * `UpsertableStreamDurability`, with memoryStream's request rules and
 * semantics, shared by every process on the database.
 *
 * From a `Request`: the resume offset is the `Last-Event-ID` header, else
 * `?offset`; the run is the one that offset names when it resumes, else the
 * `X-Run-Id` header, else `?runId`, else (a fresh producer) a new
 * `crypto.randomUUID()`.  From `{ runId, offset }`: that run, that offset.
 *
 * Offsets are `pg1:<encodeURIComponent(runId)>:<seq>`; `'-1'` reads from the
 * start and `'now'` from the tail at the time of the join.
 *
 * - `append` → `run_log_append`: one offset per chunk, in order.
 * - `upsert` → `run_log_upsert`: the whole batch is checked before anything
 *   is written (a hole, a repeated offset, an offset of another run or not
 *   minted here, a new offset not after the tail and every preceding new
 *   entry: `InvalidLogOffsetError`, nothing written).
 * - `close` → `run_log_close`: live readers end once they read everything.
 * - `snapshot` → what is stored now; never waits; `[]` for an unknown run.
 * - `read(offset, signal)`: entries strictly after `offset`, then live until
 *   the log is closed or `signal` aborts (the iteration just ends).  A read
 *   of an offset of an unknown (or empty and open) run throws; a from-start
 *   join of one waits `firstChunkDeadlineMs` for a first chunk, then throws.
 *   Readers wait on the pool's one listener connection (LISTEN
 *   sandbox_store_run_log), established before they read.
 *
 * With `epoch` (a run driver's claim) the writes are fenced: refused with
 * `ClaimLostError` once another host claimed the run; this process's claim
 * of that epoch, if any, is aborted then.  Writes to a closed log or a
 * finished run are refused with `RunFinishedError`.
 */
// biome-ignore lint/suspicious/noExplicitAny: see run-types.ts
export function createStreamDurability<TChunk = any>(
  pool: Pool,
  source: RequestLike | StreamDurabilityInit,
  options: StreamDurabilityOptions = {},
): PgStreamDurability<TChunk> {
  const resolved = resolveStreamDurabilityOptions(options);
  const { epoch } = resolved;
  // Made without the claim in hand: this process's claim of that epoch, if any, is lost.
  const onClaimLost =
    epoch === null
      ? undefined
      : (error: ClaimLostError, runId: string): void => loseLiveClaim(pool, runId, epoch, error);
  return openStreamDurability<TChunk>(pool, source, resolved, onClaimLost);
}

/** {@link StreamDurabilityOptions}, checked, with the defaults filled in. */
export interface ResolvedStreamDurabilityOptions {
  epoch: number | null;
  firstChunkDeadlineMs: number;
  idleRereadMs: number;
  connectTimeoutMs: number;
}

/** The adapter's options, checked, with the defaults filled in. */
export function resolveStreamDurabilityOptions(options: StreamDurabilityOptions): ResolvedStreamDurabilityOptions {
  const epoch = options.epoch ?? null;
  if (epoch !== null && (!Number.isSafeInteger(epoch) || epoch < 1)) {
    throw new InvalidArgumentError('epoch must be an integer >= 1', { sqlstate: '22023' });
  }
  const firstChunkDeadlineMs =
    msOption(options.firstChunkDeadlineMs ?? DEFAULT_FIRST_CHUNK_DEADLINE_MS, 'firstChunkDeadlineMs') ??
    DEFAULT_FIRST_CHUNK_DEADLINE_MS;
  const idleRereadMs =
    msOption(options.idleRereadMs ?? DEFAULT_IDLE_REREAD_MS, 'idleRereadMs', true) ?? DEFAULT_IDLE_REREAD_MS;
  const connectTimeoutMs = connectTimeoutOption(options.connectTimeoutMs);
  return { epoch, firstChunkDeadlineMs, idleRereadMs, connectTimeoutMs };
}

/** Told that a write under the adapter's epoch was refused with SB001 (its claim is lost). */
export type ClaimLostHandler = (error: ClaimLostError, runId: string) => void;

/**
 * {@link createStreamDurability} with resolved options; `onClaimLost` is
 * called when a write under `options.epoch` is refused with SB001 (before
 * the write rejects with that error).
 */
// biome-ignore lint/suspicious/noExplicitAny: see run-types.ts
export function openStreamDurability<TChunk = any>(
  pool: Pool,
  source: RequestLike | StreamDurabilityInit,
  options: ResolvedStreamDurabilityOptions,
  onClaimLost: ClaimLostHandler | undefined,
): PgStreamDurability<TChunk> {
  const { epoch, connectTimeoutMs } = options;
  const deadlineMs = options.firstChunkDeadlineMs;
  const idleRereadMs = options.idleRereadMs;

  let resumeOffset: string | null;
  let runId: string;
  if (isRequestLike(source)) {
    resumeOffset = source.headers.get('Last-Event-ID') || searchParam(source, 'offset');
    if (resumeOffset !== null && !isFromStart(resumeOffset)) {
      runId = validRunId(decodeOffset(resumeOffset).runId);
    } else {
      const requested = source.headers.get('X-Run-Id') || searchParam(source, 'runId');
      runId = requested === null ? randomUUID() : validRunId(requested);
    }
  } else if (typeof source === 'object' && source !== null) {
    runId = validRunId(source.runId);
    resumeOffset = source.offset ?? null;
  } else {
    throw new InvalidArgumentError('source must be a Request or { runId, offset? }', { sqlstate: '22023' });
  }

  /** A fenced write: SB001 tells onClaimLost (the claim of that epoch is lost). */
  const write = async <R extends object>(text: string, values: unknown[]) => {
    try {
      return await poolQuery<R & Record<string, unknown>>(pool, text, values, connectTimeoutMs);
    } catch (error) {
      if (epoch !== null && error instanceof ClaimLostError) onClaimLost?.(error, runId);
      throw error;
    }
  };
  const offsetsOf = (seqs: string[] | null): string[] => (seqs ?? []).map((s) => encodeOffset(runId, seqNumber(s)));
  const parseChunk = (text: string | null): TChunk => {
    if (text === null) throw new SandboxStoreError('sandbox_store returned a NULL chunk');
    return JSON.parse(text) as TChunk;
  };

  /** The position an offset names, for a read of this run. */
  const positionOf = (offset: string): number => {
    const decoded = decodeOffset(offset);
    if (decoded.runId !== runId) {
      throw new InvalidLogOffsetError(
        `log offset ${JSON.stringify(offset)} belongs to run ${JSON.stringify(decoded.runId)}, not ${JSON.stringify(runId)}`,
        { sqlstate: 'SBR03' },
      );
    }
    return decoded.seq;
  };

  return {
    runId,

    resumeFrom: () => resumeOffset,

    async append(chunks: TChunk[]): Promise<string[]> {
      if (!Array.isArray(chunks)) throw new InvalidArgumentError('chunks must be an array', { sqlstate: '22023' });
      const values = [runId, chunksJson(chunks), epoch];
      const waker = RunLogWaker.of(pool);
      if (await waker.supports(connectTimeoutMs)) {
        try {
          const result = await write<{ seqs: string[] | null }>(LOG_APPEND_QUIET_SQL, values);
          await waker.wake(runId);
          return offsetsOf(result.rows[0]?.seqs ?? null);
        } catch (error) {
          // The function or its grant went away: nothing ran; append as before 1.7.0.
          if (!isMissingOrDenied(error)) throw error;
          waker.forget();
        }
      }
      const result = await write<{ seqs: string[] | null }>(LOG_APPEND_SQL, values);
      return offsetsOf(result.rows[0]?.seqs ?? null);
    },

    async upsert(entries: Array<{ chunk: TChunk; offset: string }>): Promise<string[]> {
      if (!Array.isArray(entries)) throw new InvalidArgumentError('entries must be an array', { sqlstate: '22023' });
      const seqs: number[] = [];
      const chunks: unknown[] = [];
      const seen = new Set<number>();
      // Array.from visits holes too (as undefined): a sparse batch is refused.
      for (const [index, entry] of Array.from(entries).entries()) {
        if (entry === undefined || entry === null) {
          throw new InvalidArgumentError(`entries[${index}] is missing; entries must be dense`, { sqlstate: '22023' });
        }
        let seq: number;
        try {
          seq = positionOf(entry.offset);
        } catch (error) {
          throw new InvalidLogOffsetError(
            `entries[${index}].offset: ${error instanceof Error ? error.message : String(error)}`,
            { sqlstate: 'SBR03', cause: error },
          );
        }
        if (seen.has(seq)) {
          throw new InvalidLogOffsetError(
            `entries[${index}].offset ${JSON.stringify(entry.offset)} is repeated within the batch`,
            { sqlstate: 'SBR03' },
          );
        }
        seen.add(seq);
        seqs.push(seq);
        chunks.push(entry.chunk);
      }
      const result = await write<{ seqs: string[] | null }>(LOG_UPSERT_SQL, [
        runId,
        seqs.map(String),
        chunksJson(chunks),
        epoch,
      ]);
      return offsetsOf(result.rows[0]?.seqs ?? null);
    },

    async close(): Promise<void> {
      await write(LOG_CLOSE_SQL, [runId, epoch]);
    },

    async snapshot(): Promise<Array<RunLogEntry<string, TChunk>>> {
      const result = await poolQuery<{ seq: string; chunk: string | null }>(
        pool,
        LOG_SNAPSHOT_SQL,
        [runId],
        connectTimeoutMs,
      );
      return result.rows.map((row) => ({
        offset: encodeOffset(runId, seqNumber(row.seq)),
        chunk: parseChunk(row.chunk),
      }));
    },

    read(offset: string, signal?: AbortSignal): AsyncIterable<RunLogEntry<string, TChunk>> {
      return readLog(offset, signal);
    },
  };

  async function* readLog(
    offset: string,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<RunLogEntry<string, TChunk>> {
    const fromStart = isFromStart(offset);
    // A malformed offset, or one of another run, throws before anything is read.
    let after: number | undefined = offset === '-1' ? 0 : offset === 'now' ? undefined : positionOf(offset);
    const subscription = RunLogListener.of(pool).subscribe(runId);
    try {
      await subscription.ready; // LISTEN is in effect before the first read: no wake is missed
      // The log marked watched: every write committed from now on notifies.
      await poolQuery(pool, LOG_WATCH_SQL, [runId], connectTimeoutMs);
      let first = true;
      let deadlineAt: number | undefined;
      let deadlinePassed = false;
      for (;;) {
        const seen = subscription.version;
        const result = await poolQuery<LogPollRow>(
          pool,
          LOG_POLL_SQL,
          [runId, after ?? 0, after === undefined ? 0 : READ_PAGE],
          connectTimeoutMs,
        );
        let status: { lastSeq: number; closed: boolean } | undefined;
        const entries: Array<{ seq: number; chunk: string | null }> = [];
        for (const row of result.rows) {
          if (row.seq === null) status = { lastSeq: seqNumber(row.last_seq ?? '0'), closed: row.closed === true };
          else entries.push({ seq: seqNumber(row.seq), chunk: row.chunk });
        }
        entries.sort((a, b) => a.seq - b.seq);
        const empty = status === undefined || (status.lastSeq === 0 && !status.closed);
        if (first) {
          first = false;
          if (empty && !fromStart) {
            throw new SandboxStoreError(`Unknown or expired run log: ${JSON.stringify(runId)}`);
          }
          if (after === undefined) after = status?.lastSeq ?? 0; // 'now': from the tail
        }
        if (empty && deadlinePassed) {
          throw new SandboxStoreError(`Run log produced no data within ${deadlineMs}ms: ${JSON.stringify(runId)}`);
        }
        for (const entry of entries) {
          const position = entry.seq;
          yield { offset: encodeOffset(runId, position), chunk: parseChunk(entry.chunk) };
          after = position;
        }
        if (entries.length >= READ_PAGE) continue;
        if (status?.closed === true && (after ?? 0) >= status.lastSeq) return;
        if (signal?.aborted) return;
        let timeoutMs = idleRereadMs;
        let deadline = false;
        if (empty) {
          deadlineAt ??= Date.now() + deadlineMs;
          const left = deadlineAt - Date.now();
          if (left <= timeoutMs) {
            timeoutMs = left;
            deadline = true;
          }
        }
        const outcome = await subscription.wait(seen, timeoutMs, signal);
        if (outcome === 'abort') return;
        // At the deadline: one more look, then throw if still nothing.  Idle:
        // one more look (a wake lost with its writer).
        if (outcome === 'timeout' && deadline) deadlinePassed = true;
      }
    } finally {
      subscription.close();
    }
  }
}

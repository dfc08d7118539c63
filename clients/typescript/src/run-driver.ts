import type { Pool } from 'pg';

import { ClaimLostError, InvalidArgumentError, SandboxStoreError } from './errors.js';
import { connectTimeoutOption, poolQuery } from './internal/pool.js';
import { newClaim, registerClaim, runInClaim, runRecordFromText, seqNumber, type LiveClaim } from './internal/runs.js';
import { RUN_CLAIM_SQL, RUN_GET_SQL, RUN_UPDATE_SQL, msOption } from './internal/sql.js';
import type { RunClaim, RunError, RunRecordPatch, RunStatus, RunUsage } from './run-types.js';
import { DEFAULT_FIRST_CHUNK_DEADLINE_MS, DEFAULT_IDLE_REREAD_MS, openStreamDurability } from './stream-durability.js';
import type { LockStore } from './types.js';

/** Default most chunks per append of `pipe`. */
const DEFAULT_BATCH = 64;
/** Default period of a claim's epoch check. */
const DEFAULT_CHECK_EPOCH_EVERY_MS = 5_000;

export interface RunDriverOptions {
  /** How long a call waits for a connection of the pool (default 30 000 ms). */
  connectTimeoutMs?: number;
  /**
   * `pipe` appends what the stream produced while its previous append was
   * on its way, at most this many chunks at once (default 64).
   */
  batch?: number;
  /**
   * How often a claim reads the run's record to find out whether another
   * host claimed it (default 5 000 ms; `null`: never, the lease and the
   * fenced writes still tell).  Its signal aborts when it was.
   */
  checkEpochEveryMs?: number | null;
}

/** What `claim` takes: TanStack AI 0.58's `{ runs, locks, runId }` (`runs` is not used). */
export interface RunClaimInput {
  runId: string;
  locks: LockStore;
  runs?: unknown;
  /**
   * Passed to `locks.withLock` as its `signal` (a lock store of this
   * package): an abort during the wait for the lock or lease gives the
   * wait up (`claim` rejects with the signal's reason); an abort once the
   * run is claimed aborts the claim's signal too (the lock store joins the
   * two), so stop using it then.
   */
  signal?: AbortSignal | undefined;
}

/** What `pipe` takes: TanStack AI 0.58's `{ runId, threadId, signal }`; `signal` is a claim's. */
export interface RunPipeInput {
  runId: string;
  threadId?: string;
  signal: AbortSignal;
}

/** The `claim` and `pipe` of TanStack AI 0.58's `RunDriverOptions`. */
export interface PgRunDriver {
  claim: <T>(input: RunClaimInput, fn: (claim: RunClaim) => Promise<T>) => Promise<T>;
  // biome-ignore lint/suspicious/noExplicitAny: TanStack AI's StreamChunk, not imported (see run-types.ts)
  pipe: (stream: AsyncIterable<any>, input: RunPipeInput) => Promise<void>;
}

interface ClaimState extends LiveClaim {
  readonly pool: Pool;
  ended: boolean;
}

/** A `PgRunDriver` whose `claimLive` gives `fn` the claim itself (its `lose` too). */
export interface OpenRunDriver extends PgRunDriver {
  claimLive: <T>(input: RunClaimInput, fn: (claim: LiveClaim) => Promise<T>) => Promise<T>;
}

/** {@link RunDriverOptions}, checked, with the defaults filled in. */
export interface ResolvedRunDriverOptions {
  connectTimeoutMs: number;
  batch: number;
  checkEpochEveryMs: number | null;
}

/**
 * The driver's options, checked, with the defaults filled in
 * (`connectTimeoutMs`: one resolved already, if given).
 */
export function resolveRunDriverOptions(
  options: RunDriverOptions,
  connectTimeoutMs = connectTimeoutOption(options.connectTimeoutMs),
): ResolvedRunDriverOptions {
  const batch = options.batch ?? DEFAULT_BATCH;
  if (!Number.isSafeInteger(batch) || batch < 1) {
    throw new InvalidArgumentError('batch must be a positive integer', { sqlstate: '22023' });
  }
  const checkEpochEveryMs =
    options.checkEpochEveryMs === null
      ? null
      : msOption(options.checkEpochEveryMs ?? DEFAULT_CHECK_EPOCH_EVERY_MS, 'checkEpochEveryMs', true);
  return { connectTimeoutMs, batch, checkEpochEveryMs };
}

/** The claims of every driver, by the signal `fn` got: how `pipe` learns the epoch. */
const claimsBySignal = new WeakMap<AbortSignal, ClaimState>();

function isAbortShaped(error: unknown): boolean {
  const name = typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined;
  return name === 'AbortError' || name === 'APIUserAbortError' || name === 'RequestAbortedError';
}

function runErrorOf(value: unknown, fallback: string): RunError {
  if (typeof value === 'object' && value !== null) {
    const { message, code } = value as { message?: unknown; code?: unknown };
    return {
      message: typeof message === 'string' && message.length > 0 ? message : fallback,
      ...(typeof code === 'string' ? { code } : typeof code === 'number' ? { code: String(code) } : {}),
    };
  }
  return { message: typeof value === 'string' && value.length > 0 ? value : fallback };
}

function isUsage(value: unknown): value is RunUsage {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const usage = value as Record<string, unknown>;
  return (
    typeof usage['promptTokens'] === 'number' &&
    typeof usage['completionTokens'] === 'number' &&
    typeof usage['totalTokens'] === 'number'
  );
}

export interface Outcome {
  status: RunStatus;
  error?: RunError;
  usage?: RunUsage;
}

/** The outcome a terminal chunk of TanStack AI 0.58 records: RUN_FINISHED, RUN_ERROR (code 'aborted': aborted). */
export function terminalOutcome(chunk: unknown): Outcome | undefined {
  if (typeof chunk !== 'object' || chunk === null) return undefined;
  const { type } = chunk as { type?: unknown };
  if (type === 'RUN_FINISHED') {
    const usage = (chunk as { usage?: unknown }).usage;
    return { status: 'completed', ...(isUsage(usage) ? { usage } : {}) };
  }
  if (type === 'RUN_ERROR') {
    const event = chunk as { message?: unknown; code?: unknown; error?: unknown };
    const error = runErrorOf(event.error ?? event, 'the run failed');
    if (error.code === undefined && typeof event.code === 'string') error.code = event.code;
    return { status: error.code === 'aborted' ? 'aborted' : 'failed', error };
  }
  return undefined;
}

/**
 * The run driver: the `claim` and `pipe` of TanStack AI 0.58's
 * `RunDriverOptions`, over the extension's run functions (1.5).
 *
 * ```ts
 * resumeServerSentEventsResponse({
 *   adapter: createStreamDurability(pool, request),
 *   driver: { request, runs, locks, drive, ...createRunDriver(pool) },
 * })
 * ```
 *
 * `claim({ locks, runId }, fn)` takes `locks.withLock('run-driver:' +
 * runId)`, then `run_claim` (the run gets a new, greater driver epoch, never
 * handed out before, not even before a crash of the database: every write
 * of an earlier epoch is refused from then on), then runs `fn({ runId,
 * epoch, signal })`.  `signal` aborts when the lock or lease is lost, when a
 * write under the epoch is refused (SB001), or when the epoch check finds
 * the run claimed again.  A claim of an unknown run rejects with
 * `RunNotFoundError` (SBR01), of a finished run with `RunFinishedError`
 * (SBR02).  While `fn` runs, `createRunStore(pool).update` of the run in
 * this process is made under the epoch.
 *
 * Configure `locks` as `createLockStore(pool, { mode: 'lease', waitMs: null })`:
 * a claim then WAITS for the lease of a host that stopped answering (a
 * paused or partitioned process) and takes the run over when the lease runs
 * out.  A claim that is refused instead (a `waitMs` that runs out) makes
 * TanStack AI 0.58 serve the log and drive nothing.
 *
 * `pipe(stream, { runId, signal })` needs the `signal` of a claim of this
 * driver (it rejects otherwise): it appends the stream to the run's log
 * under the claim's epoch (what arrived while the previous append was on
 * its way goes in one append), closes the log, and writes the run's
 * terminal status with that epoch: `completed` on RUN_FINISHED (with its
 * usage), `failed` on RUN_ERROR (with its error), `aborted` on a RUN_ERROR
 * of code `aborted` or a stream that throws an abort error; a stream that
 * throws anything else is recorded as a RUN_ERROR chunk and `failed`.  It
 * resolves once the run is finished.  When the claim is lost (superseded:
 * its writes are refused with `ClaimLostError`), it stops, writes nothing
 * more, leaves the log open for the new driver and rejects.
 */
export function createRunDriver(pool: Pool, options: RunDriverOptions = {}): PgRunDriver {
  const { claim, pipe } = openRunDriver(pool, resolveRunDriverOptions(options));
  return { claim, pipe };
}

/** {@link createRunDriver} with resolved options, and `claimLive`. */
export function openRunDriver(pool: Pool, options: ResolvedRunDriverOptions): OpenRunDriver {
  const { connectTimeoutMs, batch: batchMax, checkEpochEveryMs: checkEveryMs } = options;

  function claim<T>(input: RunClaimInput, fn: (claim: RunClaim) => Promise<T>): Promise<T> {
    return claimLive(input, ({ runId, epoch, signal }) => fn({ runId, epoch, signal }));
  }

  async function claimLive<T>(input: RunClaimInput, fn: (claim: LiveClaim) => Promise<T>): Promise<T> {
    if (typeof input !== 'object' || input === null || typeof input.runId !== 'string') {
      throw new InvalidArgumentError('claim needs { runId, locks }', { sqlstate: '22023' });
    }
    if (typeof input.locks?.withLock !== 'function') {
      throw new InvalidArgumentError('claim needs a lock store (locks.withLock)', { sqlstate: '22023' });
    }
    if (typeof fn !== 'function') throw new InvalidArgumentError('fn must be a function', { sqlstate: '22023' });
    const { runId } = input;
    const section = async (lockSignal: AbortSignal): Promise<T> => {
      lockSignal.throwIfAborted();
      const result = await poolQuery<{ epoch: string | null }>(pool, RUN_CLAIM_SQL, [runId], connectTimeoutMs, true);
      const text = result.rows[0]?.epoch ?? null;
      if (text === null) throw new SandboxStoreError(`run_claim returned no epoch for run "${runId}"`);
      const epoch = seqNumber(text);
      const state: ClaimState = { ...newClaim(runId, epoch), pool, ended: false };
      const onLockLost = (): void => state.lose(lockSignal.reason);
      if (lockSignal.aborted) onLockLost();
      else lockSignal.addEventListener('abort', onLockLost, { once: true });
      const unregister = registerClaim(pool, state);
      claimsBySignal.set(state.signal, state);
      let timer: NodeJS.Timeout | undefined;
      if (checkEveryMs !== null) {
        timer = setInterval(() => void checkEpoch(state), checkEveryMs);
        timer.unref();
      }
      try {
        return await runInClaim(pool, state, () => fn(state));
      } finally {
        state.ended = true;
        clearInterval(timer);
        lockSignal.removeEventListener('abort', onLockLost);
        unregister();
      }
    };
    const key = `run-driver:${runId}`;
    if (input.signal === undefined) return input.locks.withLock(key, section);
    // A lock store of this package takes a third argument, { signal }; TanStack's LockStore type has two.
    const withLock = input.locks.withLock as (
      key: string,
      fn: (signal: AbortSignal) => Promise<T>,
      options: { signal: AbortSignal },
    ) => Promise<T>;
    return withLock.call(input.locks, key, section, { signal: input.signal });
  }

  /** Abort the claim if the run's record shows a later epoch (or no record). */
  async function checkEpoch(state: ClaimState): Promise<void> {
    if (state.ended || state.signal.aborted) return;
    let current: number | undefined;
    try {
      const result = await poolQuery<{ record: string | null }>(
        pool,
        RUN_GET_SQL,
        [state.runId],
        connectTimeoutMs,
        true,
      );
      const record = runRecordFromText(result.rows[0]?.record ?? null, 'run_get');
      current = record?.driverEpoch;
    } catch {
      return; // the lease (or the next write) tells
    }
    if (state.ended || current === state.epoch) return;
    state.lose(
      new ClaimLostError(
        `the driver epoch of run "${state.runId}" is not current: this claim holds ${state.epoch}, the run ${current ?? 'none'}`,
        { sqlstate: 'SB001' },
      ),
    );
  }

  // biome-ignore lint/suspicious/noExplicitAny: see PgRunDriver
  async function pipe(stream: AsyncIterable<any>, input: RunPipeInput): Promise<void> {
    const state = typeof input === 'object' && input !== null ? claimsBySignal.get(input.signal) : undefined;
    if (state === undefined || state.pool !== pool) {
      throw new InvalidArgumentError(
        "pipe needs the signal of a claim of this run driver (call it inside createRunDriver(pool).claim's fn)",
        { sqlstate: '22023' },
      );
    }
    if (state.ended) throw new InvalidArgumentError('pipe: the claim has ended', { sqlstate: '22023' });
    if (input.runId !== state.runId) {
      throw new InvalidArgumentError(`pipe: the claim is of run "${state.runId}", not "${input.runId}"`, {
        sqlstate: '22023',
      });
    }
    const { runId, epoch } = state;
    const { signal } = state;
    // Its writes refused with SB001 lose the claim.
    const log = openStreamDurability(
      pool,
      { runId },
      {
        epoch,
        firstChunkDeadlineMs: DEFAULT_FIRST_CHUNK_DEADLINE_MS,
        idleRereadMs: DEFAULT_IDLE_REREAD_MS,
        connectTimeoutMs,
      },
      state.lose,
    );

    // Appends: one on its way at a time; what arrives meanwhile goes in the next one.
    const pending: unknown[] = [];
    let inFlight: Promise<void> | undefined;
    let failure: { error: unknown } | undefined;
    const kick = (): void => {
      if (inFlight !== undefined || failure !== undefined || pending.length === 0) return;
      inFlight = (async () => {
        try {
          while (pending.length > 0 && failure === undefined) await log.append(pending.splice(0, batchMax));
        } catch (error) {
          failure = { error };
        } finally {
          inFlight = undefined;
        }
      })();
    };
    const drain = async (): Promise<void> => {
      kick();
      while (inFlight !== undefined) await inFlight;
      if (failure !== undefined) throw failure.error;
    };

    let outcome: Outcome | undefined;
    let thrown: { error: unknown } | undefined;
    const iterator = stream[Symbol.asyncIterator]();
    let done = false;
    try {
      while (failure === undefined && !signal.aborted) {
        const next = await iterator.next();
        if (next.done === true) {
          done = true;
          break;
        }
        outcome = terminalOutcome(next.value) ?? outcome;
        pending.push(next.value);
        kick();
        // Backpressure: do not pull far ahead of the log.
        if (pending.length >= batchMax * 4 && inFlight !== undefined) await inFlight;
      }
    } catch (error) {
      done = true;
      thrown = { error };
    } finally {
      if (!done) await Promise.resolve(iterator.return?.()).catch(() => undefined);
    }

    await drain();
    // A claim lost (lease gone, or superseded): leave the run to its new driver.
    if (signal.aborted) throw signal.reason;
    if (thrown !== undefined && outcome === undefined) {
      const aborted = isAbortShaped(thrown.error);
      const error: RunError = aborted
        ? { message: 'Request aborted', code: 'aborted' }
        : runErrorOf(thrown.error, 'the run failed');
      outcome = { status: aborted ? 'aborted' : 'failed', error };
      pending.push({
        type: 'RUN_ERROR',
        timestamp: Date.now(),
        message: error.message,
        ...(error.code === undefined ? {} : { code: error.code }),
        error,
      });
      await drain();
    }
    await log.close();
    const finished = outcome ?? { status: 'completed' as const };
    const patch: RunRecordPatch = { status: finished.status, finishedAt: Date.now() };
    if (finished.error !== undefined) patch.error = finished.error;
    if (finished.usage !== undefined) patch.usage = finished.usage;
    try {
      await poolQuery(pool, RUN_UPDATE_SQL, [runId, JSON.stringify(patch), epoch], connectTimeoutMs);
    } catch (error) {
      if (error instanceof ClaimLostError) state.lose(error);
      throw error;
    }
  }

  return { claim, claimLive, pipe };
}

/**
 * The route of a durable chat for `@tanstack/ai` 0.58 and
 * `@tanstack/ai-client` 0.33: `createChatHandlers({ pool, chat })` returns
 * its `POST` and `GET` handlers.
 *
 * Every answer is produced by a run driver under a claim (lease and
 * driver epoch) and streamed into the run's log in the database; every
 * response is a reader of that log.  So the answer does not depend on the
 * connection that asked for it:
 *
 * - a fresh POST records the run, claims it and starts the agent (the
 *   claim holds from before the first chunk), then answers with the log
 *   from the start;
 * - a POST that carries a resume offset (`Last-Event-ID`: how
 *   `@tanstack/ai-client` reconnects, re-sending the same body) and a GET
 *   (`?runId` and `?offset`, or `Last-Event-ID`: a join) answer with the
 *   log after that offset and, while the run is not finished, wait to
 *   claim it: while its producer is alive (it renews its lease) they only
 *   read; when the producer is gone (killed, stopped, partitioned) the
 *   lease runs out and the waiting replica takes the run over under a new
 *   epoch (every later write of the old producer is refused) and continues
 *   the answer after the log's last entry (`chat` gets `resume`);
 * - whoever finishes the run records its terminal status (`completed`,
 *   `failed`, `aborted`);
 * - while a response has nothing to send it sends an SSE comment every
 *   `heartbeatMs`, so that a page (with `stallFetch` of
 *   `sandbox-store-client/browser`) can tell a live replica that waits
 *   from a stopped one, and proxies do not close an idle stream.
 *
 * The responses are TanStack AI's own (`resumeServerSentEventsResponse`,
 * loaded from `@tanstack/ai` when the first request comes).
 */
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';

import {
  InvalidArgumentError,
  InvalidLogOffsetError,
  LockNotAvailableError,
  RunFinishedError,
  RunNotFoundError,
} from './errors.js';
import { connectTimeoutOption } from './internal/pool.js';
import { decodeOffset, type LiveClaim } from './internal/runs.js';
import { createLockStore } from './lock-store.js';
import { continueAfterLog, resumeOf, type RunResume } from './run-continue.js';
import { openRunDriver, resolveRunDriverOptions, terminalOutcome, type OpenRunDriver } from './run-driver.js';
import { openRunStore } from './run-store.js';
import type { RunRecord, RunRecordPatch } from './run-types.js';
import { DEFAULT_FIRST_CHUNK_DEADLINE_MS, DEFAULT_IDLE_REREAD_MS, openStreamDurability } from './stream-durability.js';
import type { LockStore } from './types.js';

// biome-ignore lint/suspicious/noExplicitAny: TanStack AI's StreamChunk, not imported (see run-types.ts)
type Chunk = any;

/** Default driver lease. */
const DEFAULT_LEASE_MS = 30_000;
/** Default period of the SSE heartbeat comment. */
const DEFAULT_HEARTBEAT_MS = 5_000;
/** Default period of the driver's look for a cancel request. */
const DEFAULT_CANCEL_CHECK_MS = 1_000;
/** TanStack AI's RUN_CANCEL_REASON: the abort reason of an explicit cancel. */
const CANCEL_REASON = 'tanstack-ai:cancel-requested';
/** The marker a producer appends before it asks the agent for anything (TanStack AI's RUN_ACCEPTED_EVENT). */
const RUN_ACCEPTED = 'run.accepted';
const HEARTBEAT = new TextEncoder().encode(': keep-alive\n\n');

/** What `chat` gets: the run, the request's input, and on a takeover what the log holds. */
export interface ChatInput {
  runId: string;
  threadId: string;
  /** The POST's JSON body (TanStack's `RunAgentInput`); `undefined` for a takeover served by a GET. */
  body: unknown;
  /** `body.messages`; `undefined` for a takeover served by a GET: load the thread's messages yourself. */
  messages: unknown[] | undefined;
  /**
   * Aborts when this replica loses the run (its claim's signal) or the run
   * is cancelled (reason `'tanstack-ai:cancel-requested'`, TanStack's
   * `RUN_CANCEL_REASON`): stop producing then.
   */
  signal: AbortSignal;
  /**
   * On a takeover: what the log holds.  Continue the answer after
   * `resume.text` (for example, give the model the messages and the
   * partial answer as the start of its reply); the handlers continue it
   * in the same message (`continueAfterLog`).  `undefined` for a fresh run.
   */
  resume: RunResume | undefined;
}

export interface ChatHandlersOptions {
  pool: Pool;
  /** Your agent: `chat({ adapter, messages, ... })` of `@tanstack/ai`, for this run. */
  chat: (input: ChatInput) => AsyncIterable<Chunk>;
  /**
   * The lock store the driver's claim takes (default: `createLockStore(pool,
   * { mode: 'lease', waitMs: 0, leaseMs })`, in lease mode).  With the
   * default, a replica that waits to take a run over tries the claim again
   * every `min(500, leaseMs / 6)` ms and holds no connection in between; a
   * store of your own that waits (`waitMs: null`) holds a connection of the
   * pool for each run it waits for.
   */
  locks?: LockStore;
  /** The driver's lease (default 30 000 ms): how long a stopped producer holds the run. */
  leaseMs?: number;
  /** A comment is sent on a response that had nothing to send for this long (default 5 000 ms). */
  heartbeatMs?: number;
  /** Whether a GET takes an abandoned run over (default true); `chat` then gets no `body`. */
  driveOnGet?: boolean;
  /** How long a call waits for a connection of the pool (default 30 000 ms). */
  connectTimeoutMs?: number;
  /** How often a claim checks that the run was not claimed by another replica (default 5 000 ms). */
  checkEpochEveryMs?: number | null;
  /**
   * How often the replica that drives a run looks for a cancel request
   * (`runs.update(runId, { cancelRequested: true })` from any replica, as
   * TanStack's `requestRunCancel` writes it; default 1 000 ms; `null`:
   * never).  On one, the agent's `signal` aborts with TanStack's cancel
   * reason and the run ends `aborted`.
   */
  cancelCheckMs?: number | null;
  /** Errors of drives nobody awaits (a failed agent, a lost claim). Default: ignored. */
  onError?: (error: unknown, context: { runId: string }) => void;
}

/** The route's handlers. */
export interface ChatHandlers {
  POST: (request: Request) => Promise<Response>;
  GET: (request: Request) => Promise<Response>;
}

interface TanstackResponses {
  resumeServerSentEventsResponse: (options: { adapter: unknown }) => Response;
}

let tanstack: Promise<TanstackResponses> | undefined;

function loadTanstack(): Promise<TanstackResponses> {
  tanstack ??= import('@tanstack/ai').then((module) => {
    const loaded = module as unknown as Partial<TanstackResponses>;
    if (typeof loaded.resumeServerSentEventsResponse !== 'function') {
      throw new InvalidArgumentError('createChatHandlers needs @tanstack/ai 0.58 (resumeServerSentEventsResponse)', {
        sqlstate: '22023',
      });
    }
    return loaded as TanstackResponses;
  });
  return tanstack;
}

function resumeOffsetOf(request: Request): string | null {
  const header = request.headers.get('Last-Event-ID');
  if (header) return header;
  try {
    return new URL(request.url).searchParams.get('offset');
  } catch {
    return null;
  }
}

function requestedRunId(request: Request, offset: string | null, body: unknown): string | null {
  const runId = namedRunId(request, offset, body);
  if (runId !== null && (runId.length === 0 || /[\r\n]/.test(runId))) {
    throw new InvalidArgumentError(`Invalid run id (empty, or with CR/LF): ${JSON.stringify(runId)}`, {
      sqlstate: '22023',
    });
  }
  return runId;
}

function namedRunId(request: Request, offset: string | null, body: unknown): string | null {
  if (offset !== null && offset !== '-1' && offset !== 'now') return decodeOffset(offset).runId;
  const header = request.headers.get('X-Run-Id');
  if (header) return header;
  try {
    const param = new URL(request.url).searchParams.get('runId');
    if (param) return param;
  } catch {
    // no URL: no ?runId
  }
  const fromBody = typeof body === 'object' && body !== null ? (body as { runId?: unknown }).runId : undefined;
  return typeof fromBody === 'string' && fromBody.length > 0 ? fromBody : null;
}

function threadIdOf(body: unknown, runId: string): string {
  const threadId = typeof body === 'object' && body !== null ? (body as { threadId?: unknown }).threadId : undefined;
  return typeof threadId === 'string' && threadId.length > 0 ? threadId : runId;
}

function isMarker(chunk: unknown): boolean {
  return (
    typeof chunk === 'object' &&
    chunk !== null &&
    (chunk as { type?: unknown }).type === 'CUSTOM' &&
    (chunk as { name?: unknown }).name === RUN_ACCEPTED
  );
}

/**
 * The POST and GET handlers of a durable chat route (see the module
 * comment).  `chat` is your agent for one run; it is called by the
 * replica that drives the run: the one that got the fresh POST, or the
 * one that took the run over (then with `resume`).
 */
export function createChatHandlers(options: ChatHandlersOptions): ChatHandlers {
  if (typeof options !== 'object' || options === null || typeof options.chat !== 'function') {
    throw new InvalidArgumentError('createChatHandlers needs { pool, chat }', { sqlstate: '22023' });
  }
  const { pool, chat } = options;
  const leaseMs = timerOption(options.leaseMs ?? DEFAULT_LEASE_MS, 'leaseMs');
  const heartbeatMs = timerOption(options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, 'heartbeatMs');
  const connectTimeoutMs = connectTimeoutOption(options.connectTimeoutMs);
  const driveOnGet = options.driveOnGet ?? true;
  const cancelCheckMs =
    options.cancelCheckMs === null
      ? null
      : timerOption(options.cancelCheckMs ?? DEFAULT_CANCEL_CHECK_MS, 'cancelCheckMs');
  const userOnError = options.onError ?? (() => undefined);
  const onError = (error: unknown, context: { runId: string }): void => {
    try {
      userOnError(error, context);
    } catch {
      // an onError that throws must not become an unhandled rejection
    }
  };
  // The default lock store does not wait in the database: a replica that waits to take a
  // run over looks again every pollMs, and holds no connection in between.
  const locks = options.locks ?? createLockStore(pool, { mode: 'lease', waitMs: 0, leaseMs, connectTimeoutMs });
  const pollMs = Math.max(50, Math.min(500, leaseMs / 6));
  const runs = openRunStore(pool, { connectTimeoutMs });
  const driver: OpenRunDriver = openRunDriver(
    pool,
    resolveRunDriverOptions(
      options.checkEpochEveryMs === undefined ? {} : { checkEpochEveryMs: options.checkEpochEveryMs },
      connectTimeoutMs,
    ),
  );

  /**
   * This process's drive of each run: one per run, however many responses
   * of this process read it.  Until it has claimed the run, it is given up
   * when every response that waits for it has ended.  If it ends without
   * finishing the run (its claim lost, the database gone), the responses
   * that read it fail, so that their pages reconnect (and a new drive
   * starts).
   */
  interface Drive {
    giveUp: AbortController;
    waiting: number;
    claimed: boolean;
    readers: Set<(error: unknown) => void>;
  }
  const drives = new Map<string, Drive>();

  /** Attach a response (`fail` errors its body) to the run's drive, started if none; returns the release. */
  function drive(
    runId: string,
    threadId: string,
    body: unknown,
    tied: boolean,
    fail: (error: unknown) => void,
  ): () => void {
    let entry = drives.get(runId);
    if (entry === undefined || (entry.giveUp.signal.aborted && !entry.claimed)) {
      const created: Drive = { giveUp: new AbortController(), waiting: 0, claimed: false, readers: new Set() };
      entry = created;
      drives.set(runId, created);
      void produce(runId, threadId, body, created)
        .then(
          () => undefined,
          (error: unknown) => {
            if (error instanceof RunFinishedError || error instanceof RunNotFoundError) return; // finished meanwhile
            if (created.giveUp.signal.aborted && !created.claimed) return; // nobody waits any more
            for (const failReader of created.readers) failReader(error);
            onError(error, { runId });
          },
        )
        .finally(() => {
          if (drives.get(runId) === created) drives.delete(runId);
        });
    }
    const held = entry;
    held.readers.add(fail);
    held.waiting += 1; // an untied response never gives the drive up: it goes on whoever reads
    let released = false;
    return () => {
      if (released) return;
      released = true;
      held.readers.delete(fail);
      if (!tied) return;
      held.waiting -= 1;
      if (held.waiting === 0 && !held.claimed) held.giveUp.abort(new Error('no response waits for this drive'));
    };
  }

  /** `driver.claim`, looking again every pollMs while another replica holds the run's lease. */
  async function claimRun(runId: string, entry: Drive, fn: (claim: LiveClaim) => Promise<void>): Promise<void> {
    for (;;) {
      try {
        await driver.claimLive({ runs, locks, runId, signal: entry.giveUp.signal }, async (claim) => {
          entry.claimed = true;
          await fn(claim);
        });
        return;
      } catch (error) {
        if (!(error instanceof LockNotAvailableError) || entry.claimed) throw error;
        await sleepUnless(pollMs, entry.giveUp.signal);
        entry.giveUp.signal.throwIfAborted();
      }
    }
  }

  async function produce(runId: string, threadId: string, body: unknown, entry: Drive): Promise<void> {
    await claimRun(runId, entry, async ({ epoch, signal, lose }) => {
      signal.throwIfAborted(); // given up while the claim was on its way
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
        lose,
      );
      const stored = (await log.snapshot()).map((entry) => entry.chunk);
      if (stored.length === 0) {
        // Joiners find a first entry at once, however long the agent takes to start.
        await log.append([{ type: 'CUSTOM', name: RUN_ACCEPTED, value: {}, timestamp: Date.now() }]);
      }
      const resume = resumeOf(stored);
      if (resume.terminal === undefined && (await runs.get(runId))?.cancelRequested === true) {
        // Cancelled while nobody drove it: end it as the driver would have.
        const error = { message: 'The run was cancelled.', code: 'aborted' };
        await log.append([
          { type: 'RUN_ERROR', timestamp: Date.now(), message: error.message, code: error.code, error },
        ]);
        await log.close();
        await runs.update(runId, { status: 'aborted', finishedAt: Date.now(), error });
        return;
      }
      if (resume.terminal !== undefined) {
        // The producer wrote the end and stopped before it finished the run: finish it.
        await log.close();
        const outcome = terminalOutcome(resume.terminal) ?? { status: 'completed' as const };
        const patch: RunRecordPatch = { status: outcome.status, finishedAt: Date.now() };
        if (outcome.error !== undefined) patch.error = outcome.error;
        if (outcome.usage !== undefined) patch.usage = outcome.usage;
        await runs.update(runId, patch);
        return;
      }
      const taken = stored.some((chunk) => !isMarker(chunk));
      const messages =
        typeof body === 'object' && body !== null && Array.isArray((body as { messages?: unknown }).messages)
          ? ((body as { messages: unknown[] }).messages as unknown[])
          : undefined;
      // The agent's signal: the claim's, or a cancel request found on the record.
      const stop = new AbortController();
      const onLost = (): void => stop.abort(signal.reason);
      if (signal.aborted) onLost();
      else signal.addEventListener('abort', onLost, { once: true });
      let timer: NodeJS.Timeout | undefined;
      if (cancelCheckMs !== null) {
        timer = setInterval(() => {
          runs.get(runId).then(
            (record) => {
              if (record?.cancelRequested === true && !stop.signal.aborted) stop.abort(CANCEL_REASON);
            },
            () => undefined, // the next look, or the claim, tells
          );
        }, cancelCheckMs);
        timer.unref();
      }
      try {
        const stream = chat({
          runId,
          threadId,
          body,
          messages,
          signal: stop.signal,
          resume: taken ? resume : undefined,
        });
        const produced = untilCancelled(taken ? continueAfterLog(stored, stream) : stream, stop.signal);
        await driver.pipe(produced, { runId, threadId, signal });
      } finally {
        clearInterval(timer);
        signal.removeEventListener('abort', onLost);
      }
    });
  }

  /**
   * The log after `offset`, as TanStack AI's SSE response, with heartbeats.
   * `attach(fail)` is called once the response exists and returns its
   * release (called when the response ends).  A read that fails (the
   * database gone) fails the body, rather than end it with a RUN_ERROR
   * event, so that the page reconnects.
   */
  async function logResponse(
    runId: string,
    offset: string,
    attach: (fail: (error: unknown) => void) => () => void,
  ): Promise<Response> {
    const { resumeServerSentEventsResponse } = await loadTanstack();
    const adapter = openStreamDurability(
      pool,
      { runId, offset },
      // A join from the start may come before the producer's first entry: wait up to a lease for it.
      {
        epoch: null,
        firstChunkDeadlineMs: leaseMs + heartbeatMs,
        idleRereadMs: DEFAULT_IDLE_REREAD_MS,
        connectTimeoutMs,
      },
      undefined,
    );
    let fail: (error: unknown) => void = () => undefined;
    const guarded = {
      ...adapter,
      read: (from: string, signal?: AbortSignal) => failOnError(adapter.read(from, signal), (error) => fail(error)),
    };
    let release: () => void = () => undefined;
    const sent = withHeartbeats(resumeServerSentEventsResponse({ adapter: guarded }), heartbeatMs, () => release());
    fail = sent.fail;
    release = attach(sent.fail);
    return sent.response;
  }

  async function readBody(request: Request): Promise<unknown> {
    try {
      return await request.json();
    } catch {
      return undefined;
    }
  }

  async function POST(request: Request): Promise<Response> {
    const offset = resumeOffsetOf(request);
    const body = await readBody(request);
    if (body === undefined) return new Response('The body is not JSON.', { status: 400 });
    return answer(async () => {
      let runId = requestedRunId(request, offset, body);
      if (offset === null) {
        runId ??= randomUUID();
        const threadId = threadIdOf(body, runId);
        const record = await runs.createOrResume({ runId, threadId, startedAt: Date.now() });
        // A new run is driven whoever reads it; one driven before (the same POST again) is taken over only if abandoned.
        return serve(record, '-1', body, record.driverEpoch !== undefined, true);
      }
      if (runId === null) return new Response('No run to resume.', { status: 400 });
      const record = await runs.get(runId);
      if (record === null) return new Response(`Unknown run: ${JSON.stringify(runId)}`, { status: 404 });
      return serve(record, offset, body, true, true);
    });
  }

  async function GET(request: Request): Promise<Response> {
    const offset = resumeOffsetOf(request);
    if (offset === null) {
      return new Response('No resume offset (a Last-Event-ID header or an ?offset parameter).', { status: 400 });
    }
    return answer(async () => {
      const runId = requestedRunId(request, offset, undefined);
      if (runId === null) return new Response('No run id (an X-Run-Id header or a ?runId parameter).', { status: 400 });
      const record = await runs.get(runId);
      if (record === null) return new Response(`Unknown run: ${JSON.stringify(runId)}`, { status: 404 });
      return serve(record, offset, undefined, true, driveOnGet);
    });
  }

  /** A request's answer; a bad run id or offset is a 400, not an error of the route. */
  async function answer(fn: () => Promise<Response>): Promise<Response> {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof InvalidArgumentError || error instanceof InvalidLogOffsetError) {
        return new Response(error.message, { status: 400 });
      }
      throw error;
    }
  }

  async function serve(
    record: RunRecord,
    offset: string,
    body: unknown,
    tied: boolean,
    mayDrive: boolean,
  ): Promise<Response> {
    // A cancelled run is driven too: to its end, `aborted`, if its producer is gone.
    const live = record.status === 'running' && mayDrive;
    return logResponse(record.runId, offset, (fail) =>
      live ? drive(record.runId, record.threadId, body, tied, fail) : () => undefined,
    );
  }

  return { POST, GET };
}

/**
 * `stream` until `stop` aborts with the cancel reason: then a RUN_ERROR of
 * code `aborted` ends it (the driver records the run `aborted`).  Any other
 * abort (the claim lost) just stops it.
 */
async function* untilCancelled(stream: AsyncIterable<Chunk>, stop: AbortSignal): AsyncGenerator<Chunk> {
  const iterator = stream[Symbol.asyncIterator]();
  let stopped: () => void = () => undefined;
  const aborted = new Promise<'stop'>((resolve) => {
    stopped = () => resolve('stop');
    if (stop.aborted) resolve('stop');
    else stop.addEventListener('abort', stopped, { once: true });
  });
  let finished = false;
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), aborted]);
      if (next === 'stop') break;
      if (next.done === true) {
        finished = true;
        return;
      }
      yield next.value;
    }
  } finally {
    stop.removeEventListener('abort', stopped);
    // Stopped, or left early by the consumer: let the agent wind down without waiting for it.
    if (!finished) void Promise.resolve(iterator.return?.()).catch(() => undefined);
  }
  if (stop.reason === CANCEL_REASON) {
    const error = { message: 'The run was cancelled.', code: 'aborted' };
    yield { type: 'RUN_ERROR', timestamp: Date.now(), message: error.message, code: error.code, error };
  }
}

/**
 * `response` with an SSE comment whenever it sent nothing for
 * `heartbeatMs` (and one at once, so that the headers and a first byte go
 * out); `onEnd` when its body ends, fails or is cancelled; `fail(error)`
 * errors the body (the page's client reconnects).
 */
function withHeartbeats(
  response: Response,
  heartbeatMs: number,
  onEnd: () => void,
): { response: Response; fail: (error: unknown) => void } {
  const source = response.body;
  if (source === null) {
    onEnd();
    return { response, fail: () => undefined };
  }
  const reader = source.getReader();
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    onEnd();
  };
  let beat = (): void => undefined;
  let fail: (error: unknown) => void = () => undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      beat = (): void => {
        clearTimeout(timer);
        if (ended) return;
        try {
          controller.enqueue(HEARTBEAT);
        } catch {
          return;
        }
        timer = setTimeout(beat, heartbeatMs);
      };
      fail = (error: unknown): void => {
        if (ended) return;
        end();
        controller.error(error);
        reader.cancel(error).catch(() => undefined);
      };
      beat();
    },
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (ended) return;
        if (done) {
          end();
          controller.close();
          return;
        }
        // TanStack's stream hands over whole events: a comment never splits one.
        controller.enqueue(value);
        clearTimeout(timer);
        timer = setTimeout(beat, heartbeatMs);
      } catch (error) {
        if (ended) return;
        end();
        controller.error(error);
      }
    },
    async cancel(reason) {
      end();
      await reader.cancel(reason).catch(() => undefined);
    },
  });
  return {
    response: new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    }),
    fail: (error) => fail(error),
  };
}

/** `source`, but an error ends it quietly after `onError` (which fails the response instead). */
async function* failOnError<T>(source: AsyncIterable<T>, onError: (error: unknown) => void): AsyncGenerator<T> {
  try {
    yield* source;
  } catch (error) {
    onError(error);
  }
}

/** Resolve after `ms`, or at once when `signal` aborts. */
function sleepUnless(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A period for a timer: a positive number of milliseconds a timer can hold (at most 2^31 - 1). */
function timerOption(value: number, name: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > 2_147_483_647) {
    throw new InvalidArgumentError(`${name} must be a positive number of milliseconds, at most 2147483647`, {
      sqlstate: '22023',
    });
  }
  return value;
}

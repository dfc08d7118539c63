/**
 * One app server (node:http) for takeover.test.ts, on TanStack AI 0.58 and
 * its own pool:
 *
 *   node server.js '{"host":"A"|"B","claim":bool,"leaseMs":n,"chunks":n,"delayMs":n}'
 *
 * - POST /chat (X-Run-Id): records the run (createRunStore) and streams a
 *   chat() of a fake model (`chunks` deltas "<host>:<i>;", one every
 *   `delayMs`) with toServerSentEventsResponse, durable through
 *   createStreamDurability(pool, request).  With `claim`, it does so under
 *   createRunDriver(pool).claim with the adapter fenced by the epoch, and
 *   records `completed` through the run store at the end.
 * - GET /chat (Last-Event-ID, X-Run-Id): resumeServerSentEventsResponse
 *   with the run driver: it takes the run over (claim waits for a lease),
 *   drives the rest of the deltas (after those the log holds) and finishes.
 *
 * Prints "listening <port>", then one line "@ <JSON>" per write it made under a
 * claim ({ op, ok, sqlstate }) and per takeover ({ drove, epoch }).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';

import {
  chat,
  resumeServerSentEventsResponse,
  toServerSentEventsResponse,
  type DefaultMessageMetadataByModality,
  type StreamChunk,
} from '@tanstack/ai';
import { BaseTextAdapter, type StructuredOutputResult } from '@tanstack/ai/adapters';

import {
  createLockStore,
  createRunDriver,
  createRunStore,
  createStreamDurability,
  type PgStreamDurability,
} from '../../../src/index.js';
import { newPool, sleep } from '../../helpers.js';

interface Args {
  host: string;
  claim: boolean;
  leaseMs: number;
  chunks: number;
  delayMs: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;

function emit(line: Record<string, unknown>): void {
  process.stdout.write(`@ ${JSON.stringify(line)}\n`);
}

/** A model that streams deltas `from`..`to - 1`, one every delayMs. */
class CountingAdapter extends BaseTextAdapter<
  'fake-model',
  Record<string, never>,
  readonly ['text'],
  DefaultMessageMetadataByModality
> {
  readonly name = 'fake';

  constructor(
    private readonly from: number,
    private readonly to: number,
  ) {
    super({}, 'fake-model');
  }

  async *chatStream(): AsyncIterable<StreamChunk> {
    const messageId = randomUUID();
    yield { type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', timestamp: Date.now() } as StreamChunk;
    for (let i = this.from; i < this.to; i++) {
      await sleep(args.delayMs);
      yield {
        type: 'TEXT_MESSAGE_CONTENT',
        messageId,
        delta: `${args.host}:${i};`,
        timestamp: Date.now(),
      } as StreamChunk;
    }
    yield { type: 'TEXT_MESSAGE_END', messageId, timestamp: Date.now() } as StreamChunk;
    yield { type: 'RUN_FINISHED', threadId: '', runId: '', finishReason: 'stop', timestamp: Date.now() } as StreamChunk;
  }

  async structuredOutput(): Promise<StructuredOutputResult<unknown>> {
    return { data: null, rawText: '' };
  }
}

function stream(from: number): AsyncIterable<StreamChunk> {
  return chat({
    adapter: new CountingAdapter(from, args.chunks),
    messages: [{ role: 'user', content: 'count' }],
    debug: false,
  });
}

/** Each chunk marked with this host (to tell whose chunks the log holds). */
async function* tagged(source: AsyncIterable<StreamChunk>): AsyncIterable<StreamChunk> {
  for await (const chunk of source) yield { ...chunk, host: args.host } as StreamChunk;
}

const pool = newPool(6);
const runs = createRunStore(pool);
const locks = createLockStore(pool, { mode: 'lease', waitMs: null, leaseMs: args.leaseMs });
const driver = createRunDriver(pool, { checkEpochEveryMs: 200 });

function toRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
  }
  return new Request(`http://localhost${req.url ?? '/'}`, { method: req.method ?? 'GET', headers });
}

/** Send the Response; resolves when its body is done (read to the end even if the client left). */
async function send(res: ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.flushHeaders();
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!res.destroyed) res.write(value);
  }
  res.end();
}

/** The adapter, with every write's outcome printed. */
function logged(adapter: PgStreamDurability): PgStreamDurability {
  const wrap =
    <A extends unknown[], R>(op: string, fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      try {
        const result = await fn(...a);
        emit({ op, ok: true, result });
        return result;
      } catch (error) {
        emit({ op, ok: false, sqlstate: (error as { sqlstate?: string }).sqlstate, message: String(error) });
        throw error;
      }
    };
  return { ...adapter, append: wrap('append', adapter.append), close: wrap('close', adapter.close) };
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const request = toRequest(req);
  if (req.method === 'POST') {
    const adapter = createStreamDurability(pool, request);
    const runId = adapter.runId;
    await runs.createOrResume({ runId, threadId: `thread-${runId}`, startedAt: Date.now() });
    if (!args.claim) {
      await send(res, toServerSentEventsResponse(tagged(stream(0)), { durability: { adapter } }));
      return;
    }
    await driver.claim({ runs, locks, runId }, async ({ epoch }) => {
      emit({ claimed: true, epoch });
      const fenced = logged(createStreamDurability(pool, request, { epoch }));
      await send(res, toServerSentEventsResponse(tagged(stream(0)), { durability: { adapter: fenced } }));
      try {
        await runs.update(runId, { status: 'completed', finishedAt: Date.now() });
        emit({ op: 'finish', ok: true });
      } catch (error) {
        emit({ op: 'finish', ok: false, sqlstate: (error as { sqlstate?: string }).sqlstate });
      }
    });
    emit({ done: true });
    return;
  }
  // GET: serve the log, and take the run over.
  const adapter = createStreamDurability(pool, request);
  const response = resumeServerSentEventsResponse({
    adapter,
    driver: {
      request,
      runs,
      locks,
      ...driver,
      drive: ({ runId, signal }) =>
        (async function* () {
          const stored = await createStreamDurability(pool, { runId }).snapshot();
          const done = stored.filter((e) => (e.chunk as { type?: string }).type === 'TEXT_MESSAGE_CONTENT').length;
          const epoch = (await runs.get(runId))?.driverEpoch;
          emit({ drove: runId, from: done, epoch });
          for await (const chunk of tagged(stream(done))) {
            if (signal.aborted) return;
            yield chunk;
          }
        })(),
    },
  });
  await send(res, response);
}

const server = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    emit({ error: String(error) });
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address !== null ? address.port : 0}\n`);
});

/**
 * createChatHandlers (sandbox-store-client/chat) in one process, two
 * "replicas" (two pools, two sets of handlers), the responses read as
 * fetch Responses: a fresh POST records the run and its terminal status;
 * a reconnect to another replica while the producer lives serves the log
 * and waits, it does not take the run over; heartbeats flow while a
 * response waits; bad requests get 400/404.  (Takeovers after a kill -9,
 * a SIGSTOP or a cut connection are the browser tests', test/browser.)
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';

import { createChatHandlers, type ChatInput } from '../../../src/chat-handlers.js';
import { createRunStore, createStreamDurability } from '../../../src/index.js';
import { newPool, sleep, within } from '../../helpers.js';

const TOKENS = 60;

let poolA: ReturnType<typeof newPool>;
let poolB: ReturnType<typeof newPool>;
before(() => {
  poolA = newPool(6);
  poolB = newPool(6, { application_name: 'sandbox_store_ts_chat_b' });
});
after(async () => {
  await poolA.end();
  await poolB.end();
});

/** A model that streams TOKENS tokens "t<i> " (after those `resume.text` holds), one every `tokenMs`. */
function counting(drives: string[], name: string, tokenMs: number) {
  return async function* ({ resume, signal, runId }: ChatInput) {
    drives.push(`${name}:${runId}`);
    const messageId = randomUUID();
    const from = resume === undefined ? 0 : (resume.text.match(/t\d+ /g) ?? []).length;
    yield { type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', timestamp: Date.now() };
    for (let i = from; i < TOKENS; i++) {
      await sleep(tokenMs);
      if (signal.aborted) return;
      yield { type: 'TEXT_MESSAGE_CONTENT', messageId, delta: `t${i} `, timestamp: Date.now() };
    }
    yield { type: 'TEXT_MESSAGE_END', messageId, timestamp: Date.now() };
    yield { type: 'RUN_FINISHED', runId, threadId: '', finishReason: 'stop', timestamp: Date.now() };
  };
}

interface Read {
  events: Array<{ id: string | undefined; type: string; delta?: string }>;
  comments: number;
}

/** Read an SSE response to its end; `onEvent` may stop the read early (returns true). */
async function readSse(response: Response, onEvent: (read: Read) => boolean = () => false): Promise<Read> {
  assert.equal(response.status, 200, await (response.status === 200 ? '' : response.text()));
  const read: Read = { events: [], comments: 0 };
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return read;
    text += decoder.decode(value, { stream: true });
    for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      if (block.startsWith(':')) {
        read.comments += 1;
        continue;
      }
      const id = /^id: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data === undefined) continue;
      const chunk = JSON.parse(data) as { type: string; delta?: string };
      read.events.push({ id, type: chunk.type, ...(chunk.delta === undefined ? {} : { delta: chunk.delta }) });
      if (onEvent(read)) {
        await reader.cancel();
        return read;
      }
    }
  }
}

const tokensOf = (read: Read): string[] =>
  read.events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => (e.delta ?? '').trim());
const all = Array.from({ length: TOKENS }, (_, i) => `t${i}`);

function post(runId: string, lastEventId?: string): Request {
  return new Request('http://replica/api/chat', {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Run-Id': runId,
      ...(lastEventId === undefined ? {} : { 'Last-Event-ID': lastEventId }),
    },
    body: JSON.stringify({ threadId: `thread-${runId}`, runId, messages: [], tools: [], context: [], state: {} }),
  });
}

async function finished(runId: string) {
  const runs = createRunStore(poolA);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const record = await runs.get(runId);
    if (record?.status !== 'running' || Date.now() > deadline) return record;
    await sleep(20);
  }
}

test('a fresh POST produces the answer under a claim and records the run completed', async () => {
  const drives: string[] = [];
  const a = createChatHandlers({ pool: poolA, chat: counting(drives, 'A', 2), leaseMs: 60_000 });
  const runId = `ts-test/chat/${randomUUID()}`;
  const read = await within(30_000, readSse(await a.POST(post(runId))), 'the answer');
  assert.deepEqual(tokensOf(read), all);
  assert.equal(read.events[0]?.type, 'CUSTOM', 'the run.accepted marker comes first');
  assert.equal(read.events.at(-1)?.type, 'RUN_FINISHED');
  assert.ok(
    read.events.every((e) => e.id?.startsWith('pg1:')),
    'every event has an offset',
  );
  const record = await finished(runId);
  assert.equal(record?.status, 'completed');
  assert.ok((record?.driverEpoch ?? 0) > 0, 'it was produced under a claim');
  assert.deepEqual(drives, [`A:${runId}`]);
});

test('a reconnect to another replica while the producer lives reads and waits; it does not take the run over', async () => {
  const drives: string[] = [];
  // A's lease (a minute) outlasts the answer (6 s) many times; B beats every 30 ms, A's tokens come 100 ms apart.
  const a = createChatHandlers({ pool: poolA, chat: counting(drives, 'A', 100), leaseMs: 60_000 });
  const b = createChatHandlers({ pool: poolB, chat: counting(drives, 'B', 1), leaseMs: 60_000, heartbeatMs: 30 });
  const runId = `ts-test/chat/${randomUUID()}`;
  const first = await readSse(await a.POST(post(runId)), (r) => tokensOf(r).length === 10);
  const epoch = (await createRunStore(poolA).get(runId))?.driverEpoch;
  assert.ok(epoch !== undefined);
  const lastId = first.events.at(-1)?.id;
  assert.ok(lastId !== undefined);
  const reading = within(30_000, readSse(await b.POST(post(runId, lastId))), 'the rest, through B');
  // B waits for A's lease without a statement waiting in the database (it looks again every pollMs).
  await sleep(2_000);
  const { rows } = await poolA.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity
      WHERE application_name = 'sandbox_store_ts_chat_b' AND state = 'active'
        AND query LIKE '%sandbox_claim%' AND now() - query_start > interval '1 second'`,
  );
  assert.equal(rows[0]?.n, 0, 'no claim of B waits in the database');
  const rest = await reading;
  assert.deepEqual([...tokensOf(first), ...tokensOf(rest)], all, 'every token once, in order');
  assert.ok(rest.comments >= 2, `B sent heartbeats while it waited (${rest.comments})`);
  const record = await finished(runId);
  assert.equal(record?.status, 'completed');
  assert.equal(record?.driverEpoch, epoch, 'the epoch of the first claim: nobody took the run over');
  assert.deepEqual(drives, [`A:${runId}`]);
});

test('a cancel request from another replica stops the producer: the answer ends with RUN_ERROR aborted, the run is aborted', async () => {
  const drives: string[] = [];
  const a = createChatHandlers({ pool: poolA, chat: counting(drives, 'A', 100), leaseMs: 60_000, cancelCheckMs: 50 });
  const runId = `ts-test/chat/${randomUUID()}`;
  let cancelled = false;
  const read = await within(
    30_000,
    readSse(await a.POST(post(runId)), (r) => {
      if (!cancelled && tokensOf(r).length === 5) {
        cancelled = true;
        void createRunStore(poolB).update(runId, { cancelRequested: true }); // the stop button, through B
      }
      return false;
    }),
    'the answer',
  );
  assert.ok(tokensOf(read).length < TOKENS, `stopped early (${tokensOf(read).length} tokens)`);
  assert.equal(read.events.at(-1)?.type, 'RUN_ERROR');
  const record = await finished(runId);
  assert.equal(record?.status, 'aborted');
  assert.equal(record?.error?.code, 'aborted');
});

test('a run cancelled after its producer died is finished by the replica that takes it over: its log ends RUN_ERROR aborted, the run aborted', async () => {
  const runId = `ts-test/chat/${randomUUID()}`;
  await createRunStore(poolA).createOrResume({ runId, threadId: 't', startedAt: Date.now() });
  // A producer that claimed the run, wrote three tokens and died (its lease gone with it).
  const { rows } = await poolA.query<{ epoch: string }>('SELECT sandbox_store.run_claim($1)::text AS epoch', [runId]);
  const log = createStreamDurability(poolA, { runId }, { epoch: Number(rows[0]?.epoch) });
  await log.append([
    { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' },
    ...['t0 ', 't1 ', 't2 '].map((delta) => ({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta })),
  ]);
  await createRunStore(poolB).update(runId, { cancelRequested: true }); // the stop button
  const drives: string[] = [];
  const b = createChatHandlers({ pool: poolB, chat: counting(drives, 'B', 1), leaseMs: 60_000 });
  const read = await within(
    30_000,
    readSse(await b.GET(new Request(`http://replica/api/chat?runId=${encodeURIComponent(runId)}&offset=-1`))),
    'the join',
  );
  assert.deepEqual(tokensOf(read), ['t0', 't1', 't2']);
  assert.equal(read.events.at(-1)?.type, 'RUN_ERROR');
  const record = await finished(runId);
  assert.equal(record?.status, 'aborted');
  assert.deepEqual(drives, [], 'the agent was not asked for more');
});

test('a malformed Last-Event-ID, or a run id with a line break, is a 400', async () => {
  const { POST } = createChatHandlers({ pool: poolA, chat: counting([], 'A', 1) });
  const runId = `ts-test/chat/${randomUUID()}`;
  assert.equal((await POST(post(runId, 'not-an-offset'))).status, 400);
  const request = new Request('http://replica/api/chat', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ threadId: 't', runId: 'a\nb', messages: [] }),
  });
  assert.equal((await POST(request)).status, 400);
});

test('bad requests: a POST that is not JSON (400), a GET without an offset (400), a run nobody knows (404)', async () => {
  const { POST, GET } = createChatHandlers({ pool: poolA, chat: counting([], 'A', 1) });
  const notJson = await POST(new Request('http://replica/api/chat', { method: 'POST', body: '{' }));
  assert.equal(notJson.status, 400);
  assert.equal((await GET(new Request('http://replica/api/chat?runId=x'))).status, 400);
  const unknown = `ts-test/chat/${randomUUID()}`;
  assert.equal((await GET(new Request(`http://replica/api/chat?runId=${unknown}&offset=-1`))).status, 404);
  assert.equal((await POST(post(unknown, `pg1:${encodeURIComponent(unknown)}:3`))).status, 404);
});

/**
 * Two app servers (server.ts) on one database, TanStack AI 0.58 from npm: a
 * reader starts a run on A, A dies (kill -9) or stops answering (SIGSTOP)
 * mid-stream, the reader reconnects to B with Last-Event-ID and B takes the
 * run over (resumeServerSentEventsResponse with createRunDriver) and
 * finishes it.  The reader sees every event once, in order, to the end;
 * the log holds each offset once; a paused A that wakes up after B's claim
 * is refused every write (SB001).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { createRunStore } from '../../../src/index.js';
import { claimExpiry, databaseClockPast, newPool, sleep, within } from '../../helpers.js';

const SERVER = fileURLToPath(new URL('./server.js', import.meta.url));
const CHUNKS = 40;

let pool: ReturnType<typeof newPool>;
before(() => {
  pool = newPool(4);
});
after(async () => {
  await pool.end();
});

interface Server {
  child: ChildProcess;
  port: number;
  lines: Array<Record<string, unknown>>;
  stderr: () => string;
}

async function startServer(args: Record<string, unknown>): Promise<Server> {
  const child = spawn(process.execPath, [SERVER, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Array<Record<string, unknown>> = [];
  let err = '';
  let buffer = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    err += chunk;
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`server exited with ${code}: ${err}`)));
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      buffer += chunk;
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        const listening = /^listening (\d+)$/.exec(line);
        if (listening) resolve(Number(listening[1]));
        else if (line.startsWith('@ ')) lines.push(JSON.parse(line.slice(2)) as Record<string, unknown>);
        newline = buffer.indexOf('\n');
      }
    });
  });
  return { child, port, lines, stderr: () => err };
}

/**
 * The run's record once its driver wrote a status other than running: the
 * driver closes the log, then writes the status, so a reader that saw the
 * log end may look before that write (at most 10 s).
 */
async function finishedRecord(runId: string) {
  const runs = createRunStore(pool);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const record = await runs.get(runId);
    if (record?.status !== 'running' || Date.now() > deadline) return record;
    await sleep(20);
  }
}

function stop(server: Server): void {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
}

interface Event {
  id: string | undefined;
  data: { type: string; delta?: string; host?: string };
}

/**
 * Read SSE events from `url`; `onEvent` returns true to disconnect.
 * Resolves with the events read (a dropped connection just ends the read).
 */
async function readEvents(
  url: string,
  init: RequestInit,
  events: Event[],
  onEvent: (event: Event) => boolean = () => false,
): Promise<void> {
  const controller = new AbortController();
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: controller.signal });
  } catch {
    return;
  }
  assert.equal(response.status, 200, await (response.status === 200 ? Promise.resolve('') : response.text()));
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      text += decoder.decode(value, { stream: true });
      let end = text.indexOf('\n\n');
      while (end >= 0) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        let id: string | undefined;
        let data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) id = line.slice(4);
          else if (line.startsWith('data: ')) data += line.slice(6);
        }
        if (data !== '') {
          const event: Event = { id, data: JSON.parse(data) as Event['data'] };
          events.push(event);
          if (onEvent(event)) {
            controller.abort();
            return;
          }
        }
        end = text.indexOf('\n\n');
      }
    }
  } catch {
    // the server went away
  } finally {
    controller.abort();
  }
}

const seqOf = (id: string | undefined): number => Number(id?.slice(id.lastIndexOf(':') + 1));

/** What every takeover must show the reader and leave in the database. */
async function checkRun(runId: string, events: Event[]): Promise<void> {
  const ids = events.map((e) => e.id);
  assert.ok(
    ids.every((id) => id !== undefined && id.startsWith(`pg1:${encodeURIComponent(runId)}:`)),
    'every event has an offset of the run',
  );
  const seqs = ids.map(seqOf);
  for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! > seqs[i - 1]!, `ids strictly increase: ${seqs.join(',')}`);
  assert.equal(new Set(ids).size, ids.length, 'no event twice');
  assert.equal(events.at(-1)?.data.type, 'RUN_FINISHED', 'the terminal event came');
  // Every delta once, in order: A's, then B's from where A's stored ones end.
  const deltas = events.filter((e) => e.data.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.data.delta ?? '');
  assert.deepEqual(
    deltas.map((d) => Number(d.slice(2, -1))),
    Array.from({ length: CHUNKS }, (_, i) => i),
    deltas.join(''),
  );
  assert.ok(deltas.some((d) => d.startsWith('A:')) && deltas.some((d) => d.startsWith('B:')), deltas.join(''));
  // The log (as superuser): each offset once, 1..n without a gap, and the reader saw exactly those after its first.
  const { rows } = await pool.query<{ seq: string }>(
    'SELECT e.seq::text AS seq FROM sandbox_store.run_log_entries AS e WHERE e.run_id = $1 ORDER BY e.seq',
    [runId],
  );
  const stored = rows.map((r) => Number(r.seq));
  assert.equal(new Set(stored).size, stored.length, 'each offset once in the log');
  assert.deepEqual(
    stored,
    Array.from({ length: stored.length }, (_, i) => i + 1),
  );
  assert.deepEqual(seqs, stored.slice(stored.length - seqs.length), 'the reader saw the log from its first event on');
}

test('A is killed (kill -9) mid-stream; the reader reconnects to B with Last-Event-ID; B takes over and finishes', async () => {
  const a = await startServer({ host: 'A', claim: false, leaseMs: 2000, chunks: CHUNKS, delayMs: 40 });
  const b = await startServer({ host: 'B', claim: false, leaseMs: 2000, chunks: CHUNKS, delayMs: 10 });
  try {
    const runId = `ts-test/takeover/${randomUUID()}`;
    const events: Event[] = [];
    let contents = 0;
    await within(
      20_000,
      readEvents(`http://127.0.0.1:${a.port}/chat`, { method: 'POST', headers: { 'X-Run-Id': runId } }, events, (e) => {
        if (e.data.type === 'TEXT_MESSAGE_CONTENT' && ++contents === 12) a.child.kill('SIGKILL');
        return false;
      }),
      'the read on A',
    );
    assert.ok(a.child.killed, 'A was killed mid-stream');
    assert.notEqual(events.at(-1)?.data.type, 'RUN_FINISHED');
    const last = events.at(-1)?.id;
    assert.ok(last !== undefined);
    await within(
      20_000,
      readEvents(
        `http://127.0.0.1:${b.port}/chat`,
        { headers: { 'Last-Event-ID': last, 'X-Run-Id': runId } },
        events,
        (e) => e.data.type === 'RUN_FINISHED',
      ),
      'the read on B',
    );
    await checkRun(runId, events);
    const record = await finishedRecord(runId);
    assert.equal(record?.status, 'completed');
    // (B's claim, the run's first: an epoch the database drew)
    assert.ok(typeof record?.driverEpoch === 'number' && record.driverEpoch >= 1, JSON.stringify(record));
    assert.ok(
      b.lines.some((l) => l['drove'] === runId && l['epoch'] === record?.driverEpoch),
      JSON.stringify(b.lines),
    );
  } finally {
    stop(a);
    stop(b);
  }
});

test("A is paused (SIGSTOP) past its claim; B takes over once A's lease ran out; A, resumed, is refused every write", async (t) => {
  const leaseMs = 3000; // renewed every 1 s: a loaded machine still renews in time
  const a = await startServer({ host: 'A', claim: true, leaseMs, chunks: CHUNKS, delayMs: 40 });
  const b = await startServer({ host: 'B', claim: false, leaseMs, chunks: CHUNKS, delayMs: 10 });
  try {
    const runId = `ts-test/paused/${randomUUID()}`;
    const events: Event[] = [];
    let contents = 0;
    await within(
      20_000,
      readEvents(`http://127.0.0.1:${a.port}/chat`, { method: 'POST', headers: { 'X-Run-Id': runId } }, events, (e) => {
        if (e.data.type === 'TEXT_MESSAGE_CONTENT' && ++contents === 12) {
          a.child.kill('SIGSTOP');
          return true; // the reader gives up on A
        }
        return false;
      }),
      'the read on A',
    );
    const aEpoch = a.lines.find((l) => l['claimed'] === true)?.['epoch'];
    assert.ok(typeof aEpoch === 'number' && aEpoch >= 1, JSON.stringify(a.lines));
    // A's claim as A left it (none if it ran out already): B can drive only
    // once it has run out, by the database's clock.
    const heldUntil = await claimExpiry(pool, `run-driver:${runId}`);
    const writesBefore = a.lines.length;
    const last = events.at(-1)?.id;
    assert.ok(last !== undefined);
    await within(
      30_000,
      readEvents(
        `http://127.0.0.1:${b.port}/chat`,
        { headers: { 'Last-Event-ID': last, 'X-Run-Id': runId } },
        events,
        (e) => e.data.type === 'RUN_FINISHED',
      ),
      'the read on B',
    );
    // B finished after A's lease ran out (what B waited for; not a guess at
    // when A last renewed before the pause).
    if (heldUntil === undefined) t.diagnostic("A's lease had run out before the test looked at it");
    else assert.ok(await databaseClockPast(pool, heldUntil), `B waited for A's lease (to ${heldUntil})`);
    await checkRun(runId, events);
    const runs = createRunStore(pool);
    const byB = await finishedRecord(runId);
    assert.equal(byB?.status, 'completed');
    const bEpoch = byB?.driverEpoch;
    assert.ok(typeof bEpoch === 'number' && bEpoch > aEpoch, `the run is B's (epoch ${bEpoch}, above A's ${aEpoch})`);
    assert.ok(
      b.lines.some((l) => l['drove'] === runId && l['epoch'] === bEpoch),
      JSON.stringify(b.lines),
    );

    // A wakes up: everything it tries now is refused.
    a.child.kill('SIGCONT');
    await within(
      20_000,
      (async () => {
        while (!a.lines.some((l) => l['done'] === true)) await sleep(50);
      })(),
      'A finishing',
    );
    const afterWake = a.lines.slice(writesBefore).filter((l) => typeof l['op'] === 'string');
    assert.ok(
      afterWake.some((l) => l['op'] === 'append'),
      `A tried to append after it woke: ${JSON.stringify(afterWake)}`,
    );
    assert.ok(
      afterWake.some((l) => l['op'] === 'finish'),
      `A tried to finish: ${JSON.stringify(afterWake)}`,
    );
    for (const line of afterWake) {
      assert.equal(line['ok'], false, `refused: ${JSON.stringify(line)}`);
      assert.equal(line['sqlstate'], 'SB001', JSON.stringify(line));
    }
    // The log: A's entries, then from B's first on only B's.
    const snapshot = await pool.query<{ seq: string; host: string | null }>(
      "SELECT e.seq::text AS seq, e.chunk->>'host' AS host FROM sandbox_store.run_log_entries AS e WHERE e.run_id = $1 ORDER BY e.seq",
      [runId],
    );
    const hosts = snapshot.rows.map((r) => r.host);
    const firstB = hosts.indexOf('B');
    assert.ok(firstB > 0);
    assert.ok(
      hosts.slice(firstB).every((h) => h === 'B'),
      `nothing of A's after B's claim: ${hosts.join(',')}`,
    );
    assert.ok(
      hosts.slice(0, firstB).every((h) => h !== 'B'),
      hosts.join(','),
    );
    assert.deepEqual(await runs.get(runId), byB, "the run record is still B's");
  } finally {
    if (a.child.signalCode === null) a.child.kill('SIGCONT');
    stop(a);
    stop(b);
  }
});

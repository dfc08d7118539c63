/**
 * clients/typescript/test/citus/tails.mjs: live tails on Citus, with the
 * package as an app uses it (its built dist/, a pg.Pool, nothing that knows
 * of Citus).  test/citus/tails.pl (the repository's Perl TAP test) runs it
 * against the coordinator of a 3-node cluster and checks what it prints.
 *
 *   node tails.mjs URL [RUNS CHUNKS BATCH DEADLINE_MS]
 *
 * URL is the coordinator's (postgresql://user@host:port/db).  RUNS runs
 * (tail-1 .. tail-RUNS, default 50) each get CHUNKS chunks (default 40),
 * appended BATCH at a time (default 4) by one writer per run, all at once,
 * on a pool of its own; then each writer closes its run's log.  One reader
 * per run tails it from '-1' with `read(offset, signal)`, the 50 of them on
 * ONE pool (so one listener connection, as an app server):
 *
 *   - start (odd runs): tails before anything is written (the writers begin
 *     once every start reader's log is watched);
 *   - mid (even runs): joins after its run's third batch, and its writer
 *     goes on once the reader got its first entry (history, then live).
 *
 * Nothing decides by time: DEADLINE_MS (default 120 000) only aborts a
 * hung run (its readers then print end=aborted).  It prints, per reader:
 *
 *   reader RUN group=start|mid count=N order=ok|bad offsets=ok|bad chunks=ok|bad end=closed|aborted|error:...
 *
 * (order: the seqs are 1..N, ascending, none repeated; offsets: exactly the
 * offsets the writer's appends returned, in order; chunks: each the chunk
 * written at that place), then
 *
 *   listeners start=N live=N   the reader pool's listener connections on the
 *                              server (once the start readers watched, and
 *                              once every reader tails and no log is closed)
 *   woken-before-close N       runs whose readers' wakes (run_log_wake after
 *                              each append) an observer LISTENing on the same
 *                              server heard before any log was closed
 *   elapsed-ms N
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

import { createStreamDurability } from '../../dist/index.js';

const [url, runsArg = '50', chunksArg = '40', batchArg = '4', deadlineArg = '120000'] = process.argv.slice(2);
if (url === undefined) {
  console.error('usage: node tails.mjs URL [RUNS CHUNKS BATCH DEADLINE_MS]');
  process.exit(2);
}
const RUNS = Number(runsArg);
const CHUNKS = Number(chunksArg);
const BATCH = Number(batchArg);
const DEADLINE_MS = Number(deadlineArg);
const MID_AFTER_BATCHES = 3;
const CHANNEL = 'sandbox_store_run_log';

const started = Date.now();
const deadline = AbortSignal.timeout(DEADLINE_MS);
const runIds = Array.from({ length: RUNS }, (_, i) => `tail-${i + 1}`);
const groupOf = (runId) => (Number(runId.slice('tail-'.length)) % 2 === 1 ? 'start' : 'mid');

const readerPool = new pg.Pool({ connectionString: url, max: 8, application_name: 'tails-readers' });
const writerPool = new pg.Pool({ connectionString: url, max: 8, application_name: 'tails-writers' });
// The test's own eyes (not the client's): LISTENs as the readers' listener
// does, and reads what the checks need.
const observer = new pg.Client({ connectionString: url, application_name: 'tails-observer' });
const heard = new Map();

async function waitFor(what, check) {
  while (!(await check())) {
    if (deadline.aborted) throw new Error(`gave up waiting for ${what} after ${DEADLINE_MS} ms`);
    await sleep(20);
  }
}

/** One reader of runId: from '-1' until the log is closed (or the deadline aborts it). */
function tail(runId) {
  // (no idle re-read before the deadline: only a wake can bring an entry)
  const log = createStreamDurability(
    readerPool,
    { runId, offset: '-1' },
    { firstChunkDeadlineMs: DEADLINE_MS, idleRereadMs: DEADLINE_MS },
  );
  const reader = { runId, entries: [], end: 'running' };
  let gotFirst;
  reader.first = new Promise((resolve) => {
    gotFirst = resolve;
  });
  reader.done = (async () => {
    try {
      for await (const entry of log.read(log.resumeFrom() ?? '-1', deadline)) {
        reader.entries.push(entry);
        gotFirst();
      }
      reader.end = deadline.aborted ? 'aborted' : 'closed';
    } catch (error) {
      reader.end = `error:${error instanceof Error ? error.message : String(error)}`.replace(/\s+/g, '_');
    } finally {
      gotFirst();
    }
  })();
  return reader;
}

/** The chunks of runId's batch b (0-based). */
function batchOf(runId, b) {
  return Array.from({ length: BATCH }, (_, k) => {
    const n = b * BATCH + k + 1;
    return { run: runId, n, text: `chunk ${n} of ${runId}` };
  });
}

/** runId's writer: every batch, a mid reader started after the third; the log is left open. */
async function write(runId, readers) {
  const log = createStreamDurability(writerPool, { runId });
  const offsets = [];
  for (let b = 0; b < CHUNKS / BATCH; b++) {
    if (groupOf(runId) === 'mid' && b === MID_AFTER_BATCHES) {
      const reader = tail(runId);
      readers.set(runId, reader);
      await reader.first;
    }
    offsets.push(...(await log.append(batchOf(runId, b))));
  }
  return { log, offsets };
}

async function listeners() {
  const result = await observer.query(
    "SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity WHERE application_name = 'tails-readers/run_log_listener'",
  );
  return result.rows[0].n;
}

function verdict(runId, reader, offsets) {
  const seqs = reader.entries.map((entry) => Number(entry.offset.slice(entry.offset.lastIndexOf(':') + 1)));
  const order = seqs.length === CHUNKS && seqs.every((seq, i) => seq === i + 1);
  const sameOffsets =
    reader.entries.length === offsets.length && reader.entries.every((entry, i) => entry.offset === offsets[i]);
  const chunks = reader.entries.every((entry, i) => {
    const { chunk } = entry;
    return chunk?.run === runId && chunk?.n === i + 1 && chunk?.text === `chunk ${i + 1} of ${runId}`;
  });
  const ok = (flag) => (flag ? 'ok' : 'bad');
  return (
    `reader ${runId} group=${groupOf(runId)} count=${reader.entries.length} order=${ok(order)}` +
    ` offsets=${ok(sameOffsets)} chunks=${ok(chunks)} end=${reader.end}`
  );
}

async function main() {
  await observer.connect();
  observer.on('notification', (message) => {
    if (message.channel === CHANNEL) heard.set(message.payload, (heard.get(message.payload) ?? 0) + 1);
  });
  await observer.query(`LISTEN ${CHANNEL}`);

  const readers = new Map();
  const startIds = runIds.filter((runId) => groupOf(runId) === 'start');
  for (const runId of startIds) readers.set(runId, tail(runId));
  await waitFor('the start readers to watch their logs', async () => {
    const result = await observer.query(
      'SELECT count(*)::int AS n FROM sandbox_store.run_logs WHERE watched AND run_id = ANY($1::text[])',
      [startIds],
    );
    return result.rows[0].n === startIds.length;
  });
  const listenersAtStart = await listeners();

  const written = await Promise.all(runIds.map((runId) => write(runId, readers)));
  const listenersLive = await listeners();
  // Notifications reach a listener in commit order: once the observer hears
  // its own marker, it heard every wake committed before.
  await observer.query('SELECT pg_catalog.pg_notify($1, $2)', [CHANNEL, 'tails-marker']);
  await waitFor('the marker notification', async () => heard.has('tails-marker'));
  const wokenBeforeClose = runIds.filter((runId) => heard.has(runId)).length;

  await Promise.all(written.map(({ log }) => log.close()));
  await Promise.all([...readers.values()].map((reader) => reader.done));

  for (const [i, runId] of runIds.entries()) {
    const reader = readers.get(runId);
    console.log(reader === undefined ? `reader ${runId} missing` : verdict(runId, reader, written[i].offsets));
  }
  console.log(`listeners start=${listenersAtStart} live=${listenersLive}`);
  console.log(`woken-before-close ${wokenBeforeClose}`);
  console.log(`elapsed-ms ${Date.now() - started}`);
}

try {
  await main();
} finally {
  await Promise.allSettled([readerPool.end(), writerPool.end(), observer.end()]);
}

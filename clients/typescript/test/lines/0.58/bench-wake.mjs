// bench-wake.mjs: the client's side of make bench's run log phase
// (bench/runlog.sh runs it as BENCH_RUNLOG_WAKE_COMPARE when the 0.58 line
// is installed).  Append-to-reader wake latency, from the moment a writer
// starts an append until a parked reader has the chunk, in one process:
//
//   - @tanstack/ai 0.58's memoryStream (in-process, nothing durable);
//   - createStreamDurability (the run log in PostgreSQL: the append's round
//     trip, the notification through the pool's one listener, the reader's
//     read);
//   - the same with 200 readers tailing 200 runs, one append per run at a
//     time, and the connections those readers use (pg_stat_activity).
//
// Prints one line per measurement, "label<TAB>p50_ms<TAB>p99_ms".  Connects
// like psql (PGHOST, PGPORT, PGUSER, PGDATABASE); needs the client built
// (npm run build in clients/typescript) and this line installed (npm ci).
import { memoryStream } from '@tanstack/ai';
import pg from 'pg';

import { createStreamDurability } from '../../../dist/index.js';

const iterations = Number(process.env.WAKE_ITERATIONS ?? 500);
const readers = Number(process.env.WAKE_READERS ?? 200);
const chunk = (i) => ({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: `token ${i}`, timestamp: 0 });

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
function line(label, samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  console.log(`${label}\t${quantile(sorted, 0.5).toFixed(3)}\t${quantile(sorted, 0.99).toFixed(3)}`);
}

// One writer, one parked reader of the same run: the time from the start of
// an append to the reader's next chunk.
async function oneReader(make, runId, n) {
  const writer = make(runId);
  await writer.append([chunk(0)]);
  const abort = new AbortController();
  const it = make(runId).read('-1', abort.signal)[Symbol.asyncIterator]();
  await it.next();
  const samples = [];
  for (let i = 1; i <= n; i++) {
    const t0 = performance.now();
    const next = it.next();
    await writer.append([chunk(i)]);
    await next;
    samples.push(performance.now() - t0);
  }
  abort.abort();
  await it.return?.();
  return samples;
}

const pool = new pg.Pool({ max: 10, application_name: 'bench-wake' });
try {
  const tag = `${process.pid}-${Date.now()}`;
  line(
    'memoryStream (@tanstack/ai 0.58, in-process)',
    await oneReader((runId) => memoryStream({ runId }), `mem-${tag}`, iterations),
  );
  line(
    'createStreamDurability, 1 reader',
    await oneReader((runId) => createStreamDurability(pool, { runId }), `one-${tag}`, iterations),
  );

  // 200 readers tailing 200 runs: each round appends one chunk to every run
  // (at most the pool's 10 at a time) and waits until each reader has it.
  const runIds = Array.from({ length: readers }, (_, i) => `many-${tag}-${i}`);
  const writers = runIds.map((runId) => createStreamDurability(pool, { runId }));
  await Promise.all(writers.map((w) => w.append([chunk(0)])));
  const aborts = runIds.map(() => new AbortController());
  const its = runIds.map((runId, i) =>
    createStreamDurability(pool, { runId }).read('-1', aborts[i].signal)[Symbol.asyncIterator](),
  );
  await Promise.all(its.map((it) => it.next()));
  const samples = [];
  for (let round = 1; round <= 5; round++) {
    await Promise.all(
      its.map(async (it, i) => {
        const t0 = performance.now();
        const next = it.next();
        await writers[i].append([chunk(round)]);
        await next;
        samples.push(performance.now() - t0);
      }),
    );
  }
  const { rows } = await pool.query(
    "SELECT count(*) FILTER (WHERE application_name LIKE '%run_log_listener') AS listeners, count(*) AS total" +
      " FROM pg_catalog.pg_stat_activity WHERE application_name LIKE 'bench-wake%'",
  );
  line(
    `createStreamDurability, ${readers} readers on ${readers} runs (connections: ${rows[0].listeners} listener, ${rows[0].total} in all)`,
    samples,
  );
  for (const abort of aborts) abort.abort();
  await Promise.all(its.map((it) => it.return?.()));
} finally {
  await pool.end();
}

// bench/capacity.mjs: N live streams at once, each one producer and one
// reader, on one backend (bench/capacity.sh runs it; the method is in that
// script's header).  One process holds every producer and every reader.
//
//   BACKEND   pg (createStreamDurability, PGDATABASE) or memory (@tanstack/ai's
//             memoryStream, in-process: the floor)
//   NS        the stream counts, raised in order ("10 25 50")
//   WARMUP_MS, WINDOW_MS  per N: producers run WARMUP_MS, then WINDOW_MS
//             measured (the chunks sent in the window)
//   STOP_P99_MS (100)  no higher N once p99 is above this or appends fell
//             behind (more than 5% of the window's slots late or missed);
//             0: run every N
//   POOL_MAX (20)  connections of each pool (producers', readers')
//   SAMPLE_PIDS  a command printing the server's process ids (one a line),
//             for the CPU count; empty: none
//
// Prints per N one line, tab-separated:
//   N p50_ms p99_ms max_ms samples slots late missed server_cpu_s node_cpu_s
//   machine_busy_pct loop_p99_ms waits
// and fails (exit 1) if a reader did not get every chunk exactly once, in
// order.  Connects like psql (PGHOST, PGPORT, PGUSER, PGDATABASE).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const require = createRequire(new URL('../clients/typescript/package.json', import.meta.url));
const backend = process.env.BACKEND ?? 'pg';
const ns = (process.env.NS ?? '10 25 50').trim().split(/\s+/).map(Number);
const warmupMs = Number(process.env.WARMUP_MS ?? 3000);
const windowMs = Number(process.env.WINDOW_MS ?? 8000);
const stopP99 = Number(process.env.STOP_P99_MS ?? 100);
const poolMax = Number(process.env.POOL_MAX ?? 20);
const intervalMs = 50;
const chunksPerBatch = 4;
const tag = `${process.pid}-${Date.now()}`;

let make; // (runId, role) => durability
let admin;
const pools = [];
if (backend === 'memory') {
  const { memoryStream } = await import(
    new URL('../clients/typescript/test/lines/0.58/node_modules/@tanstack/ai/dist/esm/index.js', import.meta.url)
  );
  make = (runId) => memoryStream({ runId }, { firstChunkDeadlineMs: 60000 });
} else {
  const pg = require('pg');
  const { createStreamDurability } = await import('../clients/typescript/dist/index.js');
  // Two pools, as a producing server and a reading server would have.
  const producers = new pg.Pool({ max: poolMax, application_name: 'capacity-producer' });
  const readers = new pg.Pool({ max: poolMax, application_name: 'capacity-reader' });
  admin = new pg.Client({ application_name: 'capacity-admin' });
  await admin.connect();
  pools.push(producers, readers);
  make = (runId, role) =>
    createStreamDurability(role === 'reader' ? readers : producers, { runId }, { firstChunkDeadlineMs: 60000 });
}

const quantile = (sorted, q) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** utime + stime (seconds) of the server's processes, of this process, and the machine's busy/total jiffies. */
function serverCpu() {
  if (!process.env.SAMPLE_PIDS) return NaN;
  const pids = execFileSync('bash', ['-c', process.env.SAMPLE_PIDS], { encoding: 'utf8' }).split(/\s+/).filter(Boolean);
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
    } catch {
      // gone meanwhile
    }
  }
  return ticks / 100;
}
function machineCpu() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

async function sampleWaits(until, counts) {
  while (Date.now() < until) {
    const { rows } = await admin.query(
      "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS w, count(*)::int AS n FROM pg_catalog.pg_stat_activity" +
        " WHERE state = 'active' AND pid <> pg_catalog.pg_backend_pid() AND backend_type = 'client backend' GROUP BY 1",
    );
    counts.samples++;
    for (const r of rows) counts.by.set(r.w, (counts.by.get(r.w) ?? 0) + r.n);
    await sleep(100);
  }
}

async function measure(n) {
  const runIds = Array.from({ length: n }, (_, i) => `cap-${tag}-${n}-${i}`);
  const producers = runIds.map((runId) => make(runId, 'producer'));
  const batch = (runIndex, k, sentAt) =>
    Array.from({ length: chunksPerBatch }, (_, i) => ({
      type: 'TEXT_MESSAGE_CONTENT',
      messageId: `msg-${runIndex}`,
      timestamp: Date.now(),
      delta: ` token ${k}.${i} of the streamed answer`,
      n: k * chunksPerBatch + i,
      sentAt,
    }));
  // The first batch before the reader joins: its read from '-1' starts on data.
  await Promise.all(producers.map((p, r) => p.append(batch(r, 0, performance.now()))));
  const start = performance.now();
  const windowFrom = start + warmupMs;
  const windowTo = windowFrom + windowMs;
  const delays = [];
  const got = new Array(n).fill(0);
  const errors = [];

  const readerDone = runIds
    .map(async (runId, r) => {
      let expect = 0;
      for await (const entry of make(runId, 'reader').read('-1')) {
        const c = entry.chunk;
        if (c.n !== expect) throw new Error(`run ${runId}: chunk ${c.n} where ${expect} was due`);
        expect++;
        got[r] = expect;
        if (c.sentAt >= windowFrom && c.sentAt < windowTo) delays.push(performance.now() - c.sentAt);
      }
    })
    .map((done) => done.catch((error) => errors.push(String(error))));

  let slots = 0;
  let late = 0;
  let missed = 0;
  const sent = new Array(n).fill(chunksPerBatch);
  const producerDone = producers.map(async (p, r) => {
    let k = 1;
    let prevEnd = 0;
    const offset = (r / n) * intervalMs; // spread over the slot, as independent answers are
    for (let slot = 1; ; slot++) {
      const due = start + offset + slot * intervalMs;
      if (due >= windowTo) break;
      const inWindow = due >= windowFrom;
      if (inWindow) slots++;
      if (prevEnd - due >= intervalMs) {
        if (inWindow) missed++; // the previous append ended after this whole slot: skipped
        continue;
      }
      await sleep(due - performance.now());
      const t0 = performance.now();
      await p.append(batch(r, k, t0));
      prevEnd = performance.now();
      k++;
      sent[r] += chunksPerBatch;
      if (inWindow && prevEnd - t0 > intervalMs) late++; // the append took longer than its slot
    }
    await p.close();
  });

  const loop = monitorEventLoopDelay({ resolution: 10 });
  await sleep(windowFrom - performance.now());
  loop.enable();
  const cpu0 = serverCpu();
  const node0 = process.cpuUsage();
  const m0 = machineCpu();
  const waits = { samples: 0, by: new Map() };
  const sampler = admin ? sampleWaits(Date.now() + windowMs - 200, waits) : Promise.resolve();
  await sleep(windowTo - performance.now());
  const cpu1 = serverCpu();
  const node1 = process.cpuUsage(node0);
  const m1 = machineCpu();
  loop.disable();
  await sampler;
  await Promise.all(producerDone);
  // Every reader gets every chunk, once, in order (its log closed after the last).
  const catchUp = Promise.all(readerDone);
  const timeout = sleep(120000).then(() => 'timeout');
  if ((await Promise.race([catchUp.then(() => 'ok'), timeout])) !== 'ok')
    errors.push('readers did not finish in 120 s');
  for (let r = 0; r < n; r++) {
    if (got[r] !== sent[r]) errors.push(`run ${runIds[r]}: ${got[r]} of ${sent[r]} chunks read`);
  }
  if (errors.length) throw new Error(errors.slice(0, 5).join('; '));
  if (admin) {
    await admin.query('DELETE FROM sandbox_store.run_log_entries WHERE run_id = ANY ($1)', [runIds]);
    await admin.query('DELETE FROM sandbox_store.run_logs WHERE run_id = ANY ($1)', [runIds]);
  }
  delays.sort((a, b) => a - b);
  const topWaits = [...waits.by.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([w, c]) => `${w}=${(c / Math.max(1, waits.samples)).toFixed(1)}`)
    .join(' ');
  return {
    n,
    p50: quantile(delays, 0.5),
    p99: quantile(delays, 0.99),
    max: delays.at(-1) ?? NaN,
    samples: delays.length,
    slots,
    late,
    missed,
    serverCpu: cpu1 - cpu0,
    nodeCpu: (node1.user + node1.system) / 1e6,
    busy: (100 * (m1.busy - m0.busy)) / (m1.total - m0.total),
    loopP99: loop.percentile(99) / 1e6,
    waits: topWaits || '-',
  };
}

const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '?');
try {
  for (const n of ns) {
    const r = await measure(n);
    console.log(
      [
        r.n,
        f(r.p50, 3),
        f(r.p99, 3),
        f(r.max),
        r.samples,
        r.slots,
        r.late,
        r.missed,
        f(r.serverCpu),
        f(r.nodeCpu),
        f(r.busy, 0),
        f(r.loopP99),
        r.waits,
      ].join('\t'),
    );
    const behind = r.late + r.missed > 0.05 * r.slots;
    if (stopP99 > 0 && (r.p99 > stopP99 || behind)) break;
  }
} finally {
  for (const pool of pools) await pool.end();
  await admin?.end();
}
// memoryStream's eviction timer would keep the process alive for minutes.
process.exit(0);

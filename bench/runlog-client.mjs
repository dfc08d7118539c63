// bench/runlog-client.mjs: the client's appends to watched and unwatched
// logs, side by side (bench/runlog.sh runs it when the client is built).
//
// CLIENTS producers in one process, each appending batches of 16 chunks to
// a run of its own through createStreamDurability (one pool), as fast as
// they can for SECONDS; three modes, interleaved, REPEATS rounds:
//
//   unwatched  nobody watches the logs: no notification at all;
//   watched    a reader watches every log (run_log_watch) and one LISTEN
//              connection takes the notifications: the client appends
//              with notify false and wakes the readers after the commits,
//              its wakes gathered into one run_log_wake at a time;
//   in_txn     the same logs, written by a role that may not execute
//              run_log_wake: the client appends as before 1.7.0, each
//              watched append notifying at its commit.
//
// Prints "mode<TAB>appends/s" per run, then "ratio<TAB>mode<TAB>median
// appends/s / unwatched's".  Connects like psql (PGHOST, PGPORT, PGUSER,
// PGDATABASE: a superuser); makes and drops the role sandbox_store_bench_old.
import { createRequire } from 'node:module';

const require = createRequire(new URL('../clients/typescript/package.json', import.meta.url));
const pg = require('pg');
const { createStreamDurability } = await import('../clients/typescript/dist/index.js');

const clients = Number(process.env.CLIENTS ?? 8);
const seconds = Number(process.env.SECONDS_PER_RUN ?? 5);
const repeats = Number(process.env.REPEATS ?? 3);
const chunks = Array.from({ length: 16 }, (_, i) => ({
  type: 'TEXT_MESSAGE_CONTENT',
  messageId: 'msg-7f3a9c',
  timestamp: 1767225600000 + i,
  delta: `Step ${i}: the build passed, 42 tests green; now updating the README and the changelog for the release.`,
}));

const admin = new pg.Pool({ max: 2 });
const oldRole = 'sandbox_store_bench_old';
await admin.query(`DROP ROLE IF EXISTS ${oldRole}`);
await admin.query(`CREATE ROLE ${oldRole} LOGIN`);
await admin.query(`GRANT USAGE ON SCHEMA sandbox_store TO ${oldRole}`);
await admin.query(`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO ${oldRole}`);
await admin.query(`REVOKE EXECUTE ON FUNCTION sandbox_store.run_log_wake(text[]) FROM ${oldRole}`);

async function run(mode, round) {
  const pool = new pg.Pool({ max: clients + 2, ...(mode === 'in_txn' ? { user: oldRole } : {}) });
  const listener = new pg.Client();
  await listener.connect();
  let notifications = 0;
  listener.on('notification', () => notifications++);
  await listener.query('LISTEN sandbox_store_run_log');
  const runs = Array.from({ length: clients }, (_, c) => `bench-${mode}-${round}-${c}`);
  if (mode !== 'unwatched') {
    for (const runId of runs) await admin.query('SELECT sandbox_store.run_log_watch($1)', [runId]);
  }
  const logs = runs.map((runId) => createStreamDurability(pool, { runId }));
  await Promise.all(logs.map((log) => log.append(chunks))); // warm: connections, plans, the wake's support
  let appends = 0;
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    logs.map(async (log) => {
      while (Date.now() < end) {
        await log.append(chunks);
        appends++;
      }
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 200));
  await pool.end();
  await listener.end();
  if (mode !== 'unwatched' && notifications === 0) throw new Error(`${mode}: no notification`);
  await admin.query('DELETE FROM sandbox_store.run_log_entries WHERE run_id = ANY ($1)', [runs]);
  await admin.query('DELETE FROM sandbox_store.run_logs WHERE run_id = ANY ($1)', [runs]);
  await admin.query('CHECKPOINT');
  return appends / seconds;
}

const modes = ['unwatched', 'watched', 'in_txn'];
const results = Object.fromEntries(modes.map((m) => [m, []]));
for (let round = 0; round < repeats; round++) {
  for (let i = 0; i < modes.length; i++) {
    const mode = modes[(i + round) % modes.length];
    const rate = await run(mode, round);
    results[mode].push(rate);
    console.log(`${mode}\t${rate.toFixed(0)}`);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const mode of ['watched', 'in_txn']) {
  console.log(`ratio\t${mode}\t${(median(results[mode]) / median(results.unwatched)).toFixed(2)}`);
}
await admin.query(`REVOKE ALL ON SCHEMA sandbox_store FROM ${oldRole}`);
await admin.query(`REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store FROM ${oldRole}`);
await admin.query(`DROP ROLE ${oldRole}`);
await admin.end();

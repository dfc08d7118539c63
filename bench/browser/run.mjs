/**
 * bench/browser/run.mjs: the browser phase's driver (bench/browser.sh
 * starts it; see there for what it measures and the report it writes).
 *
 * Runs the chat-resume example as it is (its server.js twice, its
 * balancer.js in front, its page in Debian's chromium through
 * playwright-core), puts a question, waits until the page shows the
 * answer's token BB_FAULT_AT, makes a fault, and times, in the page's DOM,
 * when the answer goes on.  The same page on resumable-stream (Redis) for a
 * kill -9 of the producer (bench/browser/resumable-replica.mjs).
 *
 * Times (ms after the fault F, the moment before the signal is sent):
 *
 *   new       the page shows token L+1, where L is the highest token whose
 *             chunk was produced at or before F (the chunk's timestamp, in
 *             the run's log): the first token produced after the fault.
 *             Tokens up to L that the page had not shown are replay.
 *   produced  token L+1 was produced (its timestamp in the log): what the
 *             takeover costs on the server's side, before delivery.
 *   next      the page shows one token more than it showed at F, whatever
 *             it is (replay of stored tokens included).
 *
 * Every trial then checks the outcome: the page shows one assistant
 * message, exactly "t0 t1 ... t<N-1> ", never showed a token out of order
 * or twice (checked at every change of the DOM), no error; the run is
 * recorded completed and its log holds each token once, in order; after a
 * SIGCONT, the woken producer got nothing into the log.  A trial that fails
 * a check is reported with what failed, and its times are left out of the
 * medians (they are in the TSV).
 *
 * Environment: BB_OUT (output dir), BB_EXAMPLE (the built example),
 * BB_SCENARIOS, BB_TRIALS, BB_LEASE_MS, BB_HEARTBEAT_MS, BB_TOKENS,
 * BB_TOKEN_MS, BB_FAULT_AT, BB_TRIAL_TIMEOUT_MS, BB_CHROMIUM,
 * BB_REDIS_SOCKET (for the redis-* scenarios), BB_SMOKE; libpq's PG*
 * (PGDATABASE: a database with sandbox_store, emptied of runs here).
 */
import { spawn } from 'node:child_process';
import { appendFileSync, createWriteStream, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { pathToFileURL } from 'node:url';

import { chromium } from 'playwright-core';

import { twoProducers } from './two-producers.mjs';

const env = (name, fallback) => process.env[name] ?? fallback;
const out = env('BB_OUT', '.');
const example = env('BB_EXAMPLE', '').replace(/\/$/, '');
const exampleUrl = pathToFileURL(`${example}/`);
const scenarios = env('BB_SCENARIOS', 'kill stop cut chain redis-kill redis-second redis-two').split(/\s+/).filter(Boolean);
const trials = Number(env('BB_TRIALS', 10));
const leaseMs = Number(env('BB_LEASE_MS', 3000));
const heartbeatMs = Number(env('BB_HEARTBEAT_MS', 500));
const tokens = Number(env('BB_TOKENS', 400));
const tokenMs = Number(env('BB_TOKEN_MS', 20));
const faultAt = Number(env('BB_FAULT_AT', 100));
const trialTimeoutMs = Number(env('BB_TRIAL_TIMEOUT_MS', 60_000));
const chromiumPath = env('BB_CHROMIUM', '/usr/bin/chromium');
const redisSocket = env('BB_REDIS_SOCKET', '');
const smoke = env('BB_SMOKE', '0') === '1';

const pg = (await import(new URL('node_modules/pg/lib/index.js', exampleUrl).href)).default;
const db = new pg.Pool({ max: 2 });

const log = createWriteStream(`${out}/browser.log`, { flags: 'w' });
const note = (line) => {
  const text = `bench-browser: ${line}`;
  process.stdout.write(`${text}\n`);
  log.write(`${text}\n`);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// --- processes ---------------------------------------------------------------------

/** A child process that prints `listening <port>` and maybe `@ <json>` lines. */
function startProcess(name, file, vars) {
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, ...vars },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = { name, child, events: [], port: 0, exited: false };
  child.on('exit', () => {
    proc.exited = true;
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => log.write(text.replace(/^/gm, `[${name} stderr] `)));
  let buffer = '';
  proc.listening = new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => reject(new Error(`${name} exited (${code ?? signal}) before listening`)));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text) => {
      buffer += text;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        const listening = /^listening (\d+)$/.exec(line);
        if (listening) {
          proc.port = Number(listening[1]);
          resolve(proc.port);
        } else if (line.startsWith('@ ')) proc.events.push(JSON.parse(line.slice(2)));
        else log.write(`[${name}] ${line}\n`);
      }
    });
  });
  return proc;
}

async function healthy(port) {
  try {
    return (await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) })).ok;
  } catch {
    return false;
  }
}

async function until(what, check, timeoutMs = 30_000, everyMs = 20) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

/** Two replicas (kind 'pg': the example's server.js; 'redis': resumable-replica.mjs) and the balancer. */
class Cluster {
  constructor(kind, vars) {
    this.kind = kind;
    this.vars = vars;
    this.replicas = [];
  }

  spawnReplica(name, port) {
    const file =
      this.kind === 'pg' ? `${example}/dist/server.js` : new URL('./resumable-replica.mjs', import.meta.url).pathname;
    const vars = {
      ...this.vars,
      PORT: String(port),
      REPLICA: name,
      PGAPPNAME: `bench-browser-${name}`,
      TOKENS: String(tokens),
      TOKEN_MS: String(tokenMs),
    };
    return startProcess(name, file, vars);
  }

  async start() {
    for (const name of ['a', 'b']) {
      const replica = this.spawnReplica(name, 0);
      await replica.listening;
      this.replicas.push(replica);
    }
    this.balancer = startProcess('balancer', `${example}/dist/balancer.js`, {
      BACKENDS: this.replicas.map((r) => `127.0.0.1:${r.port}`).join(','),
      PORT: '0',
    });
    await this.balancer.listening;
    await this.ready();
  }

  /** Both replicas up and answering (a killed one started again on its port, a stopped one continued). */
  async ready() {
    for (const [i, replica] of this.replicas.entries()) {
      if (replica.stopped) {
        replica.child.kill('SIGCONT');
        replica.stopped = false;
      }
      if (replica.exited) {
        const again = this.spawnReplica(replica.name, replica.port);
        await again.listening;
        this.replicas[i] = again;
      }
    }
    for (const replica of this.replicas) await until(`${replica.name} healthy`, () => healthy(replica.port));
    // The balancer checks every 200 ms: let it see them.
    await sleep(500);
  }

  byName(name) {
    return this.replicas.find((r) => r.name === name);
  }

  async stop() {
    for (const proc of [...this.replicas, this.balancer]) {
      if (proc === undefined || proc.exited) continue;
      proc.child.kill('SIGCONT');
      proc.child.kill('SIGKILL');
    }
    await sleep(200);
  }
}

// --- the page ---------------------------------------------------------------------

/**
 * Installed in the page before its question: a MutationObserver on the
 * message list that keeps, on the page's clock (performance.timeOrigin +
 * now()), when each token index was first shown, when the page first
 * showed n tokens in all, any moment the tokens were not 0, 1, 2, ... in
 * order, and the status line's loading flag and error.
 */
function observe() {
  const now = () => performance.timeOrigin + performance.now();
  const b = { first: {}, grow: [], anomalies: [], assistants: 0, loadingSeen: false, loading: '', error: '', errorAt: 0 };
  window.__bench = b;
  const list = document.querySelector('#messages');
  const status = document.querySelector('#status');
  const look = () => {
    const t = now();
    const items = [...list.querySelectorAll('li[data-role="assistant"]')];
    b.assistants = items.length;
    const found = [];
    for (const item of items) for (const m of (item.textContent ?? '').matchAll(/t(\d+) /g)) found.push(Number(m[1]));
    for (let n = b.grow.length; n < found.length; n++) b.grow[n] = t; // grow[n]: when n + 1 tokens were first shown
    for (const k of found) if (!(k in b.first)) b.first[k] = t;
    const bad = found.findIndex((k, i) => k !== i);
    if (bad >= 0 && b.anomalies.length < 5) {
      b.anomalies.push({ at: t, index: bad, around: found.slice(Math.max(0, bad - 3), bad + 3).join(' ') });
    }
    b.max = found.length === 0 ? -1 : Math.max(...found);
    b.count = found.length;
    const loading = status?.dataset.loading ?? '';
    if (loading === 'true') b.loadingSeen = true;
    b.loading = loading;
    const error = status?.textContent ?? '';
    if (error !== '' && b.error === '') b.errorAt = t;
    b.error = error;
  };
  new MutationObserver(look).observe(list, { childList: true, subtree: true, characterData: true });
  new MutationObserver(look).observe(status, { attributes: true, childList: true, subtree: true, characterData: true });
  look();
}

/**
 * One TCP connection to the balancer, closed at once: its round robin moves
 * on by one.  Every other trial does it, so that the answer's producer is
 * each replica in turn (a page makes as many connections in every trial).
 */
async function turn(port) {
  await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve();
    });
    socket.on('error', () => resolve());
  });
  await sleep(50);
}

async function openPage(browser, port, trial) {
  if (trial % 2 === 0) await turn(port);
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('console', (m) => log.write(`[page ${m.type()}] ${m.text()}\n`));
  await page.goto(`http://127.0.0.1:${port}/`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#ask input');
  await page.evaluate(observe);
  // The page's clock against ours: the midpoint of a round trip.
  let offset = 0;
  let spread = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const before = Date.now();
    const theirs = await page.evaluate(() => performance.timeOrigin + performance.now());
    const after = Date.now();
    if (after - before < spread) {
      spread = after - before;
      offset = theirs - (before + after) / 2;
    }
  }
  return { context, page, offset, spread };
}

const state = (page) => page.evaluate(() => window.__bench);

async function ask(page) {
  await page.fill('#ask input', 'Count for me, please.');
  await page.press('#ask input', 'Enter');
}

const waitShown = (page, n, timeoutMs = trialTimeoutMs) =>
  page.waitForFunction((k) => (window.__bench.max ?? -1) >= k || window.__bench.error !== '', n, {
    polling: 10,
    timeout: timeoutMs,
  });

const waitEnd = (page, timeoutMs = trialTimeoutMs) =>
  page
    .waitForFunction(() => (window.__bench.loadingSeen && window.__bench.loading === 'false') || window.__bench.error !== '', null, {
      polling: 20,
      timeout: timeoutMs,
    })
    .then(
      () => true,
      () => false,
    );

// --- the database -----------------------------------------------------------------

async function latestRun(since) {
  const { rows } = await db.query(
    'SELECT run_id FROM sandbox_store.runs WHERE started_at >= $1 ORDER BY started_at DESC LIMIT 1',
    [since],
  );
  return rows[0]?.run_id;
}

/** The replica whose pool appended to a run log within the last half second (by its PGAPPNAME). */
async function producer() {
  const { rows } = await db.query(`
    SELECT DISTINCT substr(application_name, length('bench-browser-') + 1) AS name FROM pg_stat_activity
     WHERE application_name LIKE 'bench-browser-%' AND query LIKE '%run_log_append%'
       AND state_change > clock_timestamp() - interval '500 ms'`);
  return rows.length === 1 ? rows[0].name : undefined;
}

/** The run's log: token index -> [production timestamps], in seq order; the run's status; the entry count. */
async function runLog(runId) {
  const { rows } = await db.query(
    `SELECT chunk->>'type' AS type, chunk->>'delta' AS delta, (chunk->>'timestamp')::float8 AS ts
       FROM sandbox_store.run_log_entries WHERE run_id = $1 ORDER BY seq`,
    [runId],
  );
  const { rows: run } = await db.query('SELECT status FROM sandbox_store.runs WHERE run_id = $1', [runId]);
  const order = [];
  const produced = new Map();
  for (const row of rows) {
    if (row.type !== 'TEXT_MESSAGE_CONTENT') continue;
    const k = Number(/^t(\d+) $/.exec(row.delta ?? '')?.[1] ?? Number.NaN);
    order.push(k);
    if (!produced.has(k)) produced.set(k, row.ts);
  }
  return { order, produced, status: run[0]?.status, entries: rows.length };
}

// --- one trial ----------------------------------------------------------------------

/**
 * Tokens past BB_FAULT_AT at which trial k faults: the trials spread evenly
 * over one lease renewal period (the driver renews every leaseMs / 3), so
 * that the fault does not always land at the same point of the producer's
 * renewal cycle, which the takeover's wait depends on.
 */
const renewTokens = Math.max(1, Math.round(leaseMs / 3 / tokenMs));
const phase = (trial) => Math.floor(((trial - 1) * renewTokens) / trials);

const results = [];
const twoLines = [];
const tsv = `${out}/browser.tsv`;
writeFileSync(
  tsv,
  `${['system', 'scenario', 'trial', 'fault', 'victim', 'shown_at_fault', 'last_produced_before', 'next_ms', 'new_ms', 'produced_ms', 'error_ms', 'outcome', 'detail', 'clock_offset_ms', 'clock_spread_ms'].join('\t')}\n`,
);

function record(r) {
  results.push(r);
  const cells = [r.system, r.scenario, r.trial, r.fault, r.victim, r.shown, r.last, r.next, r.new, r.produced, r.errorMs, r.outcome, r.detail, r.offset, r.spread];
  appendFileSync(tsv, `${cells.map((c) => (c === undefined || Number.isNaN(c) ? '' : typeof c === 'number' ? c.toFixed(1).replace(/\.0$/, '') : String(c))).join('\t')}\n`);
  note(
    `${r.system} ${r.scenario} #${r.trial}${r.fault > 1 ? ` fault ${r.fault}` : ''}: victim ${r.victim}, shown ${r.shown}, last produced ${r.last ?? '-'}; ` +
      `next ${fmt(r.next)} ms, new ${fmt(r.new)} ms, produced ${fmt(r.produced)} ms${r.errorMs === undefined ? '' : `, error after ${fmt(r.errorMs)} ms`}: ${r.outcome}${r.detail ? ` (${r.detail})` : ''}`,
  );
}
const fmt = (v) => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(0));

/** The times of one fault at F (our clock), from the page's record and the log. */
function timesOf(b, offset, F, logged) {
  const page = (t) => t - offset; // the page's clock to ours
  const shownBefore = b.grow.filter((t) => page(t) <= F).length; // tokens shown at F
  const next = b.grow[shownBefore] === undefined ? undefined : page(b.grow[shownBefore]) - F;
  const shown = Math.max(-1, ...Object.entries(b.first).filter(([, t]) => page(t) <= F).map(([k]) => Number(k)));
  let last;
  let newMs;
  let produced;
  if (logged !== undefined) {
    last = -1;
    for (const [k, ts] of logged.produced) if (ts <= F && k > last) last = k;
    const ts = logged.produced.get(last + 1);
    produced = ts === undefined ? undefined : ts - F;
    const seen = b.first[last + 1];
    newMs = seen === undefined ? undefined : page(seen) - F;
  }
  const errorMs = b.errorAt > 0 && page(b.errorAt) > F ? page(b.errorAt) - F : undefined;
  return { shown, last, next, new: newMs, produced, errorMs };
}

/** What went wrong with a sandbox_store trial's answer, or 'ok'. */
function checkOutcome(b, logged, ended, extra) {
  const problems = [];
  if (!ended) problems.push('did not finish in time');
  if (b.error !== '') problems.push(`page error: ${b.error}`);
  if (b.assistants !== 1) problems.push(`${b.assistants} assistant messages`);
  const shownSet = new Set(Object.keys(b.first).map(Number));
  const lost = tokens - [...shownSet].filter((k) => k >= 0 && k < tokens).length;
  if (lost > 0) problems.push(`${lost} tokens never shown`);
  if (b.count !== tokens || b.max !== tokens - 1) problems.push(`page ends with ${b.count} tokens (max t${b.max})`);
  for (const a of b.anomalies) problems.push(`shown out of order or twice at #${a.index} (${a.around})`);
  if (logged !== undefined) {
    if (logged.status !== 'completed') problems.push(`run ${logged.status ?? 'missing'}`);
    const inOrder = logged.order.length === tokens && logged.order.every((k, i) => k === i);
    if (!inOrder) problems.push(`log holds ${logged.order.length} tokens, not 0..${tokens - 1} once each`);
  }
  problems.push(...extra);
  return problems.length === 0 ? 'ok' : problems.join('; ');
}

async function signal(proc, sig) {
  const F = Date.now();
  proc.child.kill(sig);
  if (sig === 'SIGSTOP') proc.stopped = true;
  return F;
}

/** After a SIGCONT of a replica stopped mid-answer: did anything of it land in the log? */
async function lateWrites(cluster, runId) {
  const stopped = cluster.replicas.filter((r) => r.stopped);
  if (stopped.length === 0) return [];
  const before = (await runLog(runId)).entries;
  for (const r of stopped) {
    r.child.kill('SIGCONT');
    r.stopped = false;
  }
  await sleep(Math.max(1500, leaseMs / 2));
  const after = (await runLog(runId)).entries;
  return after === before ? [] : [`${after - before} entries landed after the stopped producer was continued`];
}

async function pgTrial(browser, cluster, scenario, trial) {
  await cluster.ready();
  const { context, page, offset, spread } = await openPage(browser, cluster.balancer.port, trial);
  const base = { system: 'sandbox_store', scenario, trial, offset, spread };
  try {
    const since = Date.now() - 1;
    await ask(page);
    await waitShown(page, (scenario === 'chain' ? Math.min(faultAt, 60) : faultAt) + phase(trial));
    const runId = await until('the run', () => latestRun(since), 5000);
    const victim = await until('the producer', producer, 5000);
    const faults = [];
    if (scenario === 'kill') faults.push({ victim, F: await signal(cluster.byName(victim), 'SIGKILL') });
    else if (scenario === 'stop') faults.push({ victim, F: await signal(cluster.byName(victim), 'SIGSTOP') });
    else if (scenario === 'cut') faults.push({ victim: 'connections', F: await signal(cluster.balancer, 'SIGUSR2') });
    else if (scenario === 'chain') {
      // kill A; B takes over; A starts again; B stops.
      faults.push({ victim, F: await signal(cluster.byName(victim), 'SIGKILL') });
      const other = await until('the takeover', async () => {
        const p = await producer();
        return p !== undefined && p !== victim ? p : undefined;
      });
      await cluster.ready(); // A again, on its port, healthy
      const at = (await state(page)).max;
      await waitShown(page, at + 40 + phase(trial));
      const now = await until('the producer', producer, 5000);
      if (now !== other) throw new Error(`after the takeover ${now} produces, not ${other}`);
      faults.push({ victim: other, F: await signal(cluster.byName(other), 'SIGSTOP') });
    }
    const ended = await waitEnd(page);
    const b = await state(page);
    const extra = await lateWrites(cluster, runId);
    const logged = await runLog(runId);
    const outcome = checkOutcome(b, logged, ended, extra);
    for (const [i, f] of faults.entries()) {
      record({ ...base, fault: i + 1, victim: f.victim, ...timesOf(b, offset, f.F, logged), outcome });
    }
  } catch (error) {
    record({ ...base, fault: 1, victim: '?', outcome: `harness: ${error.message}` });
  } finally {
    await context.close();
  }
}

async function redisTrial(browser, cluster, scenario, trial) {
  await cluster.ready();
  const { context, page, offset, spread } = await openPage(browser, cluster.balancer.port, trial);
  const base = { system: 'resumable-stream', scenario, trial, offset, spread };
  try {
    const since = Date.now() - 1;
    await ask(page);
    await waitShown(page, faultAt + phase(trial));
    const produce = cluster.replicas
      .flatMap((r) => r.events.filter((e) => e.event === 'produce' && e.at >= since).map((e) => ({ ...e, name: r.name })))
      .at(-1);
    if (produce === undefined) throw new Error('no replica said it produces');
    const F = await signal(cluster.byName(produce.name), 'SIGKILL');
    const ended = await waitEnd(page, Math.min(trialTimeoutMs, 45_000));
    const b = await state(page);
    const times = timesOf(b, offset, F, undefined);
    // What the page kept: the tokens it shows, in order or not; what it lost; what came twice.
    const seen = new Map();
    const items = await page.$$eval('#messages li[data-role="assistant"]', (lis) => lis.map((li) => li.textContent ?? ''));
    for (const text of items) for (const m of text.matchAll(/t(\d+) /g)) seen.set(Number(m[1]), (seen.get(Number(m[1])) ?? 0) + 1);
    const lost = tokens - [...seen.keys()].filter((k) => k < tokens).length;
    const twice = [...seen.values()].filter((n) => n > 1).length;
    if (ended) await sleep(200); // the second producer's last line
    const resumes = cluster.replicas.flatMap((r) => r.events.filter((e) => e.event === 'resume' && e.at >= F));
    const second = cluster.replicas.flatMap((r) => r.events.filter((e) => e.second && e.at >= F));
    const secondStart = second.find((e) => e.event === 'produce');
    const secondEnd = second.find((e) => e.event === 'produced');
    const parts = [];
    parts.push(ended ? 'page stopped loading' : 'page still loading at the deadline');
    parts.push(`${items.length} assistant message${items.length === 1 ? '' : 's'}`);
    parts.push(`${lost} tokens never shown`, `${twice} shown twice`);
    if (b.error !== '') parts.push(`page error: ${b.error}`);
    parts.push(`resumes: ${resumes.map((e) => e.result).join(',') || 'none'}`);
    const ok = lost === 0 && twice === 0 && items.length === 1 && b.error === '' && ended;
    // What the second producer did, ok or not: it generated the answer again from its start.
    const detail = [];
    if (secondStart !== undefined) detail.push(`a second producer started ${fmt(secondStart.at - F)} ms after the fault`);
    if (secondEnd !== undefined) {
      detail.push(`it generated the answer again from t0, all ${secondEnd.tokens} tokens (t0..t${times.shown}, which the page had, dropped by the page as already seen)`);
    }
    // Nothing of the answer is stored: a token shown after the fault beyond what the page had is produced after it.
    const fresh = twice === 0 ? times.next : undefined;
    record({
      ...base,
      fault: 1,
      victim: produce.name,
      ...times,
      new: fresh,
      outcome: ok ? 'ok' : parts.join('; '),
      detail: detail.join('; '),
    });
  } catch (error) {
    record({ ...base, fault: 1, victim: '?', outcome: `harness: ${error.message}` });
  } finally {
    await context.close();
  }
}

// --- the report -----------------------------------------------------------------------

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return undefined;
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const max = (xs) => (xs.length === 0 ? undefined : Math.max(...xs));
const cell = (xs) => (xs.length === 0 ? '—' : `${fmt(median(xs))} / ${fmt(max(xs))}`);

const labels = {
  kill: '(a) kill -9 of the producing replica',
  stop: '(b) SIGSTOP of the producing replica',
  cut: '(c) the balancer cuts the connections (both replicas live)',
  'chain:1': '(d) chain: kill -9 of A',
  'chain:2': '(d) chain: then SIGSTOP of B (A restarted)',
  'redis-kill': 'resumable-stream: kill -9 of the producer, resume only',
  'redis-second': 'resumable-stream: kill -9, then a second producer for the id (the answer made again from t0)',
};

function report(started) {
  const lines = [];
  const rows = new Map();
  for (const r of results) {
    const key = r.scenario === 'chain' ? `chain:${r.fault}` : r.scenario;
    if (!rows.has(key)) rows.set(key, []);
    rows.get(key).push(r);
  }
  lines.push(`### A streamed answer in the browser after a fault: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`);
  lines.push('');
  if (smoke) lines.push('SMOKE RUN (one trial): checks the harness, measures nothing.', '');
  lines.push(
    `The chat-resume example (two replicas of its server, its balancer, its page on @tanstack/ai-client 0.33.2 in headless chromium),`,
    `LEASE_MS=${leaseMs}, HEARTBEAT_MS=${heartbeatMs}, ${tokens} tokens one every ${tokenMs} ms, the fault once the page shows token ${faultAt}`,
    `(${Math.min(faultAt, 60)} in the chain; its second fault 40 tokens after A is back) plus 0 to ${renewTokens - 1} tokens, spread evenly over the trials`,
    `(one renewal period of the lease); ${trials} trial${trials === 1 ? '' : 's'} per scenario. ms after the fault, median / max over the trials whose outcome is ok:`,
    `"new": the page shows the first token produced after the fault (the highest token produced before it, by its timestamp in the`,
    `log, plus one); "produced": that token was produced; "next": the page shows any token beyond what it showed at the fault.`,
    '',
    '| scenario | ok / trials | new (ms) | produced (ms) | next (ms) | page error (ms) |',
    '|---|---:|---:|---:|---:|---:|',
  );
  for (const [key, rs] of rows) {
    const ok = rs.filter((r) => r.outcome === 'ok');
    const nums = (f) => ok.map(f).filter((v) => v !== undefined && !Number.isNaN(v));
    const errs = rs.map((r) => r.errorMs).filter((v) => v !== undefined);
    lines.push(
      `| ${labels[key] ?? key} | ${ok.length} / ${rs.length} | ${cell(nums((r) => r.new))} | ${cell(nums((r) => r.produced))} | ${cell(nums((r) => r.next))} | ${cell(errs)} |`,
    );
  }
  const redis = results.filter((r) => r.system === 'resumable-stream');
  if (redis.length > 0) {
    lines.push('', 'resumable-stream, what each trial showed:', '');
    const seen = new Map();
    for (const r of redis) {
      // The same story with other numbers counts once: numbers of ms and tokens as #.
      const story = `${r.scenario}: ${r.outcome}${r.detail ? `; ${r.detail}` : ''}`.replace(/\d+/g, '#');
      seen.set(story, [...(seen.get(story) ?? []), r]);
    }
    for (const [story, rs] of seen) {
      const errs = rs.map((r) => r.errorMs).filter((v) => v !== undefined);
      const of = redis.filter((r) => r.scenario === rs[0].scenario).length;
      lines.push(`- ${rs[0].scenario}, ${rs.length} of ${of} trials like trial ${rs[0].trial}: ${rs[0].outcome}` +
        `${rs[0].detail ? `; ${rs[0].detail}` : ''}${errs.length > 0 ? `; the page's error ${cell(errs)} ms after the fault (median / max)` : ''}`);
    }
  }
  if (twoLines.length > 0) {
    lines.push('', 'resumable-stream, a second producer for one id (no browser: two contexts with their own Redis connections, 50 tokens every 20 ms):', '');
    for (const line of twoLines) lines.push(`- ${line}`);
  }
  const failed = results.filter((r) => r.outcome !== 'ok' && r.system !== 'resumable-stream');
  if (failed.length > 0) {
    lines.push('', 'Trials whose outcome was not ok (what the page and the log showed):', '');
    const seen = new Set();
    for (const r of failed) {
      const key = `${r.system} ${r.scenario} #${r.trial}`;
      if (seen.has(key)) continue;
      seen.add(key);
      lines.push(`- ${key}: ${r.outcome}${r.next === undefined ? '' : `; next token shown ${fmt(r.next)} ms after the fault`}`);
    }
  }
  lines.push('', `Phase time: ${Math.round((Date.now() - started) / 1000)} s. One line per fault in browser.tsv; the processes' output in browser.log.`);
  writeFileSync(`${out}/browser.md`, `${lines.join('\n')}\n`);
}

// --- main -----------------------------------------------------------------------------

const started = Date.now();
const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  chromiumSandbox: false,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
note(`chromium ${browser.version()}, scenarios: ${scenarios.join(' ')}, ${trials} trials each`);
let failures = 0;
try {
  const pgScenarios = scenarios.filter((s) => !s.startsWith('redis-'));
  if (pgScenarios.length > 0) {
    await db.query('TRUNCATE sandbox_store.runs, sandbox_store.run_logs, sandbox_store.run_log_entries');
    const cluster = new Cluster('pg', { LEASE_MS: String(leaseMs), HEARTBEAT_MS: String(heartbeatMs) });
    await cluster.start();
    try {
      for (const scenario of pgScenarios) for (let t = 1; t <= trials; t++) await pgTrial(browser, cluster, scenario, t);
    } finally {
      await cluster.stop();
    }
  }
  for (const scenario of scenarios.filter((s) => s.startsWith('redis-'))) {
    if (redisSocket === '') throw new Error(`${scenario}: BB_REDIS_SOCKET is not set`);
    if (scenario === 'redis-two') {
      twoLines.push(...(await twoProducers(redisSocket, { n: 50, tokenMs })));
      for (const line of twoLines) note(`resumable-stream, a second producer: ${line}`);
      continue;
    }
    const cluster = new Cluster('redis', {
      REDIS_SOCKET: redisSocket,
      EXAMPLE: example,
      ON_LOST: scenario === 'redis-second' ? 'restart' : 'fail',
    });
    await cluster.start();
    try {
      for (let t = 1; t <= trials; t++) await redisTrial(browser, cluster, scenario, t);
    } finally {
      await cluster.stop();
    }
  }
  failures = results.filter((r) => r.outcome.startsWith('harness:')).length;
} catch (error) {
  note(`failed: ${error?.stack ?? error}`);
  failures += 1;
} finally {
  await browser.close();
  await db.end();
  report(started);
}
// Exit when the log is written: Redis connections the library keeps (its subscriptions) would hold the process.
log.end(() => process.exit(failures === 0 ? 0 : 1));

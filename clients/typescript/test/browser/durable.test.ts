/**
 * Durable chat runs in a real browser (Debian's chromium, headless, through
 * playwright-core): the page (page.ts) streams a run through a load
 * balancer (the chat-resume example's) in front of two replicas (replica.ts), each
 * createChatHandlers over its own pool on one database.  Mid-stream, at a
 * point the test sees in the page (token FAULT_AT shown), a fault:
 *
 *   (a) the producing replica is killed (kill -9): the other takes the run
 *       over once the lease ran out;
 *   (b) the producer is stopped (SIGSTOP) past its lease: the other takes
 *       over; woken (SIGCONT), the stopped one lands nothing (SB001);
 *   (c) the balancer cuts the browser's connections, both replicas live:
 *       the page reconnects, no takeover;
 *   (d) a chain: the producer is killed, the other takes over, the killed
 *       one restarts, then the second producer is stopped and the
 *       restarted one takes over;
 *   (e) a takeover that waits a lease much longer than the page's whole
 *       reconnect budget (maxAttempts × delayMs) and than stallFetch's
 *       silence: the heartbeats keep the waiting connection alive.
 *
 * Each ends with, in the page's DOM: every token once, in order, in ONE
 * assistant message; in the database: the run's log holding each token once
 * (run_log_read) and the run `completed`.  Each prints the time from the
 * fault to the next token the page showed, and to the first token of the
 * replica that took over ("fault-to-token ..." diagnostics; with
 * SB_BROWSER_RESULTS=<file>, also as JSON lines appended to that file).
 */
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { after, before, test, type TestContext } from 'node:test';

import type { Browser, BrowserContext, Page } from 'playwright-core';

import { newPool } from '../helpers.js';
import { type Balancer, startBalancer } from '../../examples/chat-resume/src/balancer.js';
import {
  bundlePage,
  launchBrowser,
  pageState,
  type Replica,
  startReplica,
  stopReplica,
  tokenText,
  tokensShown,
  waitFor,
} from './harness.js';
import type { PageState } from './page.js';

const TOKENS = 300;
const TOKEN_MS = 15;
const FAULT_AT = 100;
/** The driver lease: renewed every second, long against a loaded machine's delays. */
const LEASE_MS = 3000;
const HEARTBEAT_MS = 500;
/** Generous bounds on what must happen (only a failing test waits for them). */
const LONG = 60_000;

let pool: ReturnType<typeof newPool>;
let browser: Browser;

before(async () => {
  pool = newPool(4);
  await bundlePage();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await pool?.end();
});

interface Setup {
  replicas: Replica[];
  lb: Balancer;
  context: BrowserContext;
  page: Page;
  /** The page's console and errors, for a failure's message. */
  console: string[];
}

async function setUp(options: { leaseMs?: number; query?: string; tokens?: number } = {}): Promise<Setup> {
  const common = {
    port: 0,
    tokens: options.tokens ?? TOKENS,
    tokenMs: TOKEN_MS,
    leaseMs: options.leaseMs ?? LEASE_MS,
    heartbeatMs: HEARTBEAT_MS,
  };
  const replicas = await Promise.all([startReplica({ ...common, name: 'A' }), startReplica({ ...common, name: 'B' })]);
  const lb = await startBalancer(replicas.map((r) => ({ host: '127.0.0.1', port: r.port })));
  await waitFor('both replicas healthy at the balancer', () => lb.healthy().length === 2, { timeoutMs: LONG });
  const context = await browser.newContext();
  const page = await context.newPage();
  const consoleLines: string[] = [];
  page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => consoleLines.push(`pageerror: ${String(e)}`));
  await page.goto(`http://127.0.0.1:${lb.port}/${options.query ?? ''}`);
  await page.waitForFunction(() => window.chatTest !== undefined);
  return { replicas, lb, context, page, console: consoleLines };
}

async function tearDown(setup: Setup): Promise<void> {
  await setup.context.close();
  await setup.lb.close();
  await Promise.all(setup.replicas.map(stopReplica));
}

/** A dump of what the page and the replicas said, for a failure. */
async function explain(setup: Setup): Promise<string> {
  let state: PageState | string;
  try {
    state = await pageState(setup.page);
  } catch (error) {
    state = String(error);
  }
  return JSON.stringify(
    {
      page: state,
      console: setup.console,
      replicas: setup.replicas.map((r) => ({ name: r.name, lines: r.lines, stderr: r.stderr() })),
    },
    null,
    1,
  );
}

/** Sends the message; resolves with the run id and its producer once the page shows token `at`. */
async function startRun(setup: Setup, at: number): Promise<{ runId: string; producer: Replica }> {
  await setup.page.evaluate(() => window.chatTest.send('count to me'));
  const drive = await waitFor(
    'a replica drives the run',
    () => {
      for (const replica of setup.replicas) {
        const line = replica.lines.find((l) => typeof l['drive'] === 'string' && l['resumed'] === false);
        if (line) return { replica, line };
      }
      return undefined;
    },
    { timeoutMs: LONG, explain: () => explain(setup) },
  );
  await waitForTokens(setup, at);
  return { runId: String(drive.line['drive']), producer: drive.replica };
}

/** Resolves once the page shows at least `n` tokens (fails at once on a page error). */
async function waitForTokens(setup: Setup, n: number): Promise<PageState> {
  return waitFor(
    `the page shows ${n} tokens`,
    async () => {
      const state = await pageState(setup.page);
      if (state.error !== null) throw new Error(`the page failed: ${state.error}\n${await explain(setup)}`);
      return tokensShown(state) >= n ? state : undefined;
    },
    { timeoutMs: LONG, explain: () => explain(setup) },
  );
}

/** A replica's drive of the run that took it over (resumed), once it printed it (fails at once on a page error). */
function takeoverBy(setup: Setup, runId: string, replica: Replica): Promise<Record<string, unknown>> {
  return waitFor(
    `${replica.name} takes the run over`,
    async () => {
      const drive = replica.lines.find((l) => l['drive'] === runId && l['resumed'] === true);
      if (drive !== undefined) return drive;
      const { error } = await pageState(setup.page);
      if (error !== null) throw new Error(`the page failed: ${error}\n${await explain(setup)}`);
      return undefined;
    },
    { timeoutMs: LONG, explain: () => explain(setup) },
  );
}

/**
 * The page's run is over: every token once, in order, in one assistant
 * message, no error, the client ready.  `takeovers`: the drives that took
 * the run over, each of which must have continued that message.
 */
async function checkPage(
  setup: Setup,
  takeovers: Array<Record<string, unknown>> = [],
  tokens = TOKENS,
): Promise<PageState> {
  const state = await waitFor(
    'the page shows the whole answer and is ready',
    async () => {
      const s = await pageState(setup.page);
      if (s.error !== null) throw new Error(`the page failed: ${s.error}\n${await explain(setup)}`);
      return tokensShown(s) >= tokens && s.status === 'ready' ? s : undefined;
    },
    { timeoutMs: LONG, explain: () => explain(setup) },
  );
  const assistant = state.messages.filter((m) => m.role === 'assistant');
  assert.equal(assistant.length, 1, `one assistant message: ${JSON.stringify(state.messages)}`);
  assert.equal(assistant[0]!.text, tokenText(tokens), 'every token once, in order');
  for (const drive of takeovers) {
    assert.equal(
      drive['messageId'],
      assistant[0]!.id,
      `the takeover continued the page's message: ${JSON.stringify(drive)}`,
    );
  }
  assert.deepEqual(
    state.messages.map((m) => m.role),
    ['user', 'assistant'],
  );
  return state;
}

/**
 * The database: the log holds each token once, in order (run_log_read), the
 * writers in turn (no replica again after another took over: `writers`),
 * and the run is completed.
 */
async function checkDatabase(runId: string, writers: string[], tokens = TOKENS): Promise<void> {
  const { rows } = await pool.query<{ seq: string; chunk: { type: string; delta?: string; replica?: string } }>(
    'SELECT r.seq::text AS seq, r.chunk FROM sandbox_store.run_log_read($1) AS r ORDER BY r.seq',
    [runId],
  );
  const deltas = rows.filter((r) => r.chunk.type === 'TEXT_MESSAGE_CONTENT').map((r) => r.chunk.delta ?? '');
  assert.equal(deltas.length, tokens, 'each token once in the log');
  assert.equal(deltas.join(''), tokenText(tokens), 'the log holds the tokens in order');
  // The agents' chunks carry their replica (the handlers' own marker, run.accepted, none).
  const turns: string[] = [];
  for (const { chunk } of rows) {
    if (chunk.replica === undefined) {
      assert.notEqual(chunk.type, 'TEXT_MESSAGE_CONTENT', `a token of no replica: ${JSON.stringify(chunk)}`);
      continue;
    }
    if (turns.at(-1) !== chunk.replica) turns.push(chunk.replica);
  }
  assert.deepEqual(turns, writers, 'who wrote the log, in turn');
  const status = await waitFor(
    'the run has a final status',
    async () => {
      const { rows: r } = await pool.query<{ status: string }>(
        'SELECT status FROM sandbox_store.runs WHERE run_id = $1',
        [runId],
      );
      return r[0]?.status !== undefined && r[0].status !== 'running' ? r[0].status : undefined;
    },
    { timeoutMs: LONG },
  );
  assert.equal(status, 'completed');
}

/**
 * Prints the time from the fault to the next token the page showed and,
 * after a takeover, to the first token the new producer made; with
 * SB_BROWSER_RESULTS set, also appends them to that file as a JSON line.
 */
function report(t: TestContext, scenario: string, state: PageState, faultAt: number, takeoverFrom?: number): void {
  const since = (at: number | undefined) => (at === undefined ? null : at - faultAt);
  const nextMs = since(state.tokenSeenAt.find((at) => at !== undefined && at > faultAt));
  const takeoverMs = takeoverFrom === undefined ? null : since(state.tokenSeenAt[takeoverFrom]);
  t.diagnostic(
    `fault-to-token ${scenario}: next ${nextMs ?? 'none'} ms` +
      (takeoverFrom === undefined ? '' : `, takeover (t${takeoverFrom}) ${takeoverMs ?? 'none'} ms`) +
      ` (requests: ${state.requests.length})`,
  );
  const results = process.env['SB_BROWSER_RESULTS'];
  if (results !== undefined && results !== '') {
    const line = { scenario, nextMs, takeoverFrom: takeoverFrom ?? null, takeoverMs, requests: state.requests.length };
    appendFileSync(results, `${JSON.stringify(line)}\n`);
  }
}

/**
 * The run writes `replica` sent (run_log_append, run_update, ...) at
 * `since` or later, by its clock (the same machine's): a stopped process
 * sends nothing, so after a SIGCONT at `since` these are the ones it sent
 * awake (one it sent before the stop may be answered, and printed, after).
 */
const writesOf = (replica: Replica, since = 0) =>
  replica.lines.filter((l) => typeof l['write'] === 'string' && Number(l['sentAt']) >= since);

test('(a) the producing replica is killed (kill -9) mid-stream: the other takes over, the page gets every token once', async (t) => {
  const setup = await setUp();
  try {
    const { runId, producer } = await startRun(setup, FAULT_AT);
    const other = setup.replicas.find((r) => r !== producer)!;
    const faultAt = Date.now();
    producer.child.kill('SIGKILL');
    const drive = await takeoverBy(setup, runId, other);
    const state = await checkPage(setup, [drive]);
    await checkDatabase(runId, [producer.name, other.name]);
    assert.ok(
      Number(drive['from']) >= FAULT_AT,
      `the takeover starts at the first token not stored: ${JSON.stringify(drive)}`,
    );
    assert.deepEqual(
      writesOf(other).filter((w) => w['ok'] !== true),
      [],
      'the new producer had no write refused',
    );
    report(t, 'kill-9', state, faultAt, Number(drive['from']));
  } finally {
    await tearDown(setup);
  }
});

test('(b) the producer is stopped (SIGSTOP) past its lease: the other takes over; woken, the stopped one lands nothing (SB001)', async (t) => {
  const setup = await setUp();
  try {
    const { runId, producer } = await startRun(setup, FAULT_AT);
    const other = setup.replicas.find((r) => r !== producer)!;
    const faultAt = Date.now();
    producer.child.kill('SIGSTOP');
    const drive = await takeoverBy(setup, runId, other);
    const state = await checkPage(setup, [drive]);
    // Woken after the run is done: every write it still tries is refused.
    const woke = Date.now();
    producer.child.kill('SIGCONT');
    await waitFor(
      `${producer.name}, woken, tries a write and is refused`,
      () => writesOf(producer, woke).some((w) => w['ok'] === false),
      { timeoutMs: LONG, explain: () => explain(setup) },
    );
    for (const write of writesOf(producer, woke)) {
      assert.equal(write['ok'], false, `refused: ${JSON.stringify(write)}`);
      assert.equal(write['sqlstate'], 'SB001', JSON.stringify(write));
    }
    await checkDatabase(runId, [producer.name, other.name]);
    assert.ok(Number(drive['from']) >= FAULT_AT, JSON.stringify(drive));
    report(t, 'sigstop', state, faultAt, Number(drive['from']));
  } finally {
    await tearDown(setup);
  }
});

test("(c) the balancer cuts the browser's connections, both replicas live: the page reconnects and gets every token once", async (t) => {
  const setup = await setUp();
  try {
    const { runId, producer } = await startRun(setup, FAULT_AT);
    const faultAt = Date.now();
    const cut = setup.lb.cut();
    assert.ok(cut >= 1, 'the page had a connection to cut');
    const state = await checkPage(setup);
    await checkDatabase(runId, [producer.name]);
    for (const replica of setup.replicas) {
      assert.equal(replica.lines.filter((l) => l['resumed'] === true).length, 0, `no takeover: ${replica.name}`);
      assert.deepEqual(
        writesOf(replica).filter((w) => w['ok'] !== true),
        [],
        `no write refused: ${replica.name}`,
      );
    }
    assert.ok(
      state.requests.some((r) => r.lastEventId !== null),
      `the page reconnected with Last-Event-ID: ${JSON.stringify(state.requests)}`,
    );
    report(t, 'lb-cut', state, faultAt);
  } finally {
    await tearDown(setup);
  }
});

test('(d) a chain: kill the producer, the other takes over, the killed one restarts, stop the second producer, the restarted one takes over', async (t) => {
  const setup = await setUp();
  try {
    const { runId, producer: first } = await startRun(setup, FAULT_AT);
    const second = setup.replicas.find((r) => r !== first)!;
    const killedAt = Date.now();
    first.child.kill('SIGKILL');
    const drive2 = await takeoverBy(setup, runId, second);
    // The killed replica restarts (as a new process) on its port: the balancer finds it healthy again.
    const restarted = await startReplica({
      name: `${first.name}2`,
      port: first.port,
      tokens: TOKENS,
      tokenMs: TOKEN_MS,
      leaseMs: LEASE_MS,
      heartbeatMs: HEARTBEAT_MS,
    });
    setup.replicas.push(restarted);
    await waitFor('the restarted replica is healthy', () => setup.lb.healthy().length === 2, {
      timeoutMs: LONG,
      explain: () => explain(setup),
    });
    // The second producer at work: the page shows tokens it made.
    const secondFault = Number(drive2['from']) + 50;
    assert.ok(secondFault < TOKENS - 50, `room for a second fault: ${JSON.stringify(drive2)}`);
    await waitForTokens(setup, secondFault);
    const stoppedAt = Date.now();
    second.child.kill('SIGSTOP');
    const drive3 = await takeoverBy(setup, runId, restarted);
    const state = await checkPage(setup, [drive2, drive3]);
    const woke = Date.now();
    second.child.kill('SIGCONT');
    await waitFor(
      `${second.name}, woken, tries a write and is refused`,
      () => writesOf(second, woke).some((w) => w['ok'] === false),
      { timeoutMs: LONG, explain: () => explain(setup) },
    );
    for (const write of writesOf(second, woke)) {
      assert.equal(write['sqlstate'], 'SB001', JSON.stringify(write));
    }
    await checkDatabase(runId, [first.name, second.name, restarted.name]);
    report(t, 'chain-kill-9', state, killedAt, Number(drive2['from']));
    report(t, 'chain-sigstop', state, stoppedAt, Number(drive3['from']));
  } finally {
    await tearDown(setup);
  }
});

test('(e) a takeover that waits a lease far longer than the reconnect budget (maxAttempts × delayMs) and the silence limit completes: heartbeats keep the connection', async (t) => {
  const leaseMs = 10_000;
  const maxAttempts = 1;
  const delayMs = 100;
  const silenceMs = 2000;
  const setup = await setUp({
    leaseMs,
    query: `?silenceMs=${silenceMs}&maxAttempts=${maxAttempts}&delayMs=${delayMs}`,
  });
  try {
    const { runId, producer } = await startRun(setup, FAULT_AT);
    const other = setup.replicas.find((r) => r !== producer)!;
    const faultAt = Date.now();
    producer.child.kill('SIGKILL');
    const drive = await takeoverBy(setup, runId, other);
    const state = await checkPage(setup, [drive]);
    await checkDatabase(runId, [producer.name, other.name]);
    const takeoverAt = state.tokenSeenAt[Number(drive['from'])]!;
    // What makes the case: the page's connection waited through more than twice stallFetch's silence limit.
    assert.ok(
      takeoverAt - faultAt > 2 * silenceMs && takeoverAt - faultAt > maxAttempts * delayMs,
      `the takeover waited for the lease (${takeoverAt - faultAt} ms)`,
    );
    report(t, 'long-lease', state, faultAt, Number(drive['from']));
  } finally {
    await tearDown(setup);
  }
});

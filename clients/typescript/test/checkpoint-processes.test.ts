/**
 * The checkpoint store across processes (each its own pool, like separate
 * app servers; checkpoint-child.ts): writers racing `append` on the same
 * expected head, and a writer killed with SIGKILL in the middle of a large
 * append.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

import { createCheckpointStore, type PgSandboxCheckpointStore } from '../src/index.js';
import type { ChildArgs, ChildResult } from './checkpoint-child.js';
import { bigCheckpoint, checkpoint, fileKey, scope, stateOf, type Message } from './checkpoints.js';
import { newPool, sleep } from './helpers.js';

const CHILD = fileURLToPath(new URL('./checkpoint-child.js', import.meta.url));
const PROCESSES = 6;
const LEASE = 60_000;

interface Child {
  /** Resolves once the child printed `line` (or exited). */
  printed: (line: string) => Promise<void>;
  go: () => void;
  kill: () => void;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; result: ChildResult | undefined; err: string }>;
}

function startChild(args: ChildArgs): Child {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(args)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters: Array<{ line: string; resolve: () => void }> = [];
  const check = () => {
    for (const w of [...waiters]) {
      if (out.split('\n').includes(w.line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    out += chunk;
    check();
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    err += chunk;
  });
  child.stdin.on('error', () => undefined); // a killed child's stdin
  const done = new Promise<Awaited<Child['done']>>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      for (const w of waiters.splice(0)) w.resolve();
      const last = out
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .pop();
      resolve({ code, signal, result: last === undefined ? undefined : (JSON.parse(last) as ChildResult), err });
    });
  });
  return {
    printed: (line) =>
      new Promise<void>((resolve) => {
        waiters.push({ line, resolve });
        check();
        if (child.exitCode !== null || child.signalCode !== null) resolve();
      }),
    go: () => child.stdin.end('go\n'),
    kill: () => child.kill('SIGKILL'),
    done,
  };
}

/** The results of children that must all exit normally. */
async function results(children: Child[]): Promise<ChildResult[]> {
  const all = await Promise.all(children.map((c) => c.done));
  for (const r of all) assert.ok(r.code === 0 && r.result !== undefined, `child failed: ${r.code} ${r.err}`);
  return all.map((r) => r.result!);
}

let pool: pg.Pool;
let store: PgSandboxCheckpointStore<Message>;
before(() => {
  pool = newPool(3);
  // An hour: the writers of threadWithRoot must outlive what a test does
  // with them (a kill test waits up to a minute twice, more on a busy machine).
  store = createCheckpointStore<Message>(pool, { leaseDurationMs: 3_600_000 });
});
after(async () => {
  await pool.end();
});

/** A thread whose head is a root checkpoint pointing to `shared`; its writer (database clock) is returned. */
async function threadWithRoot(s: string, shared: string, clocked?: PgSandboxCheckpointStore<Message>) {
  const thread = `${s}/thread`;
  const writer = await (clocked ?? store).acquireWriter(thread);
  const root = checkpoint(`${s}/root`, thread, null, 1, {
    files: [{ path: 'shared.bin', kind: 'file', blobKey: fileKey(shared), size: 1 }],
  });
  await (clocked ?? store).append({ checkpoint: root, expectedHeadId: null, writer });
  return { thread, writer, root };
}

/** After a race on the root: exactly one child won; the thread, its list and the references say so. */
async function assertOneWinner(
  s: string,
  thread: string,
  rootId: string,
  shared: string,
  outcomes: ChildResult[],
  allowed: Record<string, ChildResult['stage']>,
): Promise<number> {
  const winners = outcomes.flatMap((r, i) => (r.code === 'won' ? [i] : []));
  assert.equal(winners.length, 1, `exactly one append wins: ${JSON.stringify(outcomes)}`);
  for (const r of outcomes) {
    if (r.code !== 'won') assert.equal(allowed[r.code], r.stage, `loser outcome ${JSON.stringify(r)}`);
  }
  const winner = winners[0]!;
  const seeds = outcomes.map((_, i) => `${s}/child-${i}`);
  const unique = seeds.map((seed) => fileKey(`${seed}/0`));
  const state = await stateOf(store, thread, [fileKey(shared), ...unique]);
  assert.equal(state.head, `${s}/c${winner}`);
  assert.deepStrictEqual(
    state.checkpoints.map((c) => (c as { id: string }).id),
    [rootId, `${s}/c${winner}`],
  );
  assert.deepStrictEqual(state.references, { [fileKey(shared)]: 2, [unique[winner]!]: 1 });
  return winner;
}

function raceArgs(s: string, thread: string, rootId: string, shared: string, i: number): ChildArgs {
  return {
    threadId: thread,
    checkpointId: `${s}/c${i}`,
    expectedHeadId: rootId,
    seed: `${s}/child-${i}`,
    shared,
    bytes: 2_000,
    files: 2,
    leaseMs: LEASE,
    barrier: true,
    applicationName: 'sandbox_store_ts_ckpt_race',
  };
}

async function race(args: ChildArgs[]): Promise<ChildResult[]> {
  const children = args.map(startChild);
  await Promise.all(children.map((c) => c.printed('ready')));
  for (const c of children) c.go();
  return results(children);
}

describe('checkpoint writers across processes', () => {
  test(`${PROCESSES} processes append on the same head with one writer: one wins, the others get STALE_HEAD`, async () => {
    const s = scope('race-shared');
    const shared = `${s}/shared`;
    const { thread, writer, root } = await threadWithRoot(s, shared);
    const w = { threadId: writer.threadId, ownerToken: writer.ownerToken, fence: writer.fence };
    const outcomes = await race(
      Array.from({ length: PROCESSES }, (_, i) => ({ ...raceArgs(s, thread, root.id, shared, i), writer: w })),
    );
    await assertOneWinner(s, thread, root.id, shared, outcomes, { SANDBOX_SNAPSHOT_STALE_HEAD: 'append' });
  });

  test(`${PROCESSES} processes, each acquiring its own writer (database clock): one writer, one append`, async () => {
    const s = scope('race-dbclock');
    const shared = `${s}/shared`;
    const { thread, writer, root } = await threadWithRoot(s, shared);
    await writer.release();
    const outcomes = await race(Array.from({ length: PROCESSES }, (_, i) => raceArgs(s, thread, root.id, shared, i)));
    await assertOneWinner(s, thread, root.id, shared, outcomes, { SANDBOX_SNAPSHOT_WRITER_CONFLICT: 'acquire' });
  });

  test(`${PROCESSES} processes taking the writer over from each other (their clocks a lease apart): one append wins`, async (t) => {
    // Process i's clock reads base + (i + 1) * (LEASE + 1): it may take over
    // the lease of any process before it, never of one after it.  So,
    // depending on the arrival order, a process is refused the writer
    // (WRITER_CONFLICT), loses it before its append (WRITER_LOST), or appends
    // after another one did (STALE_HEAD); one append wins, whatever the order.
    const seen = new Set<string>();
    for (let round = 0; round < 3; round++) {
      const s = scope('race-takeover');
      const shared = `${s}/shared`;
      const base = Date.UTC(2030, 0, 1) + round;
      const parent = createCheckpointStore<Message>(pool, { now: () => base, leaseDurationMs: LEASE });
      const { thread, writer, root } = await threadWithRoot(s, shared, parent);
      await writer.release();
      const outcomes = await race(
        Array.from({ length: PROCESSES }, (_, i) => ({
          ...raceArgs(s, thread, root.id, shared, i),
          clockMs: base + (i + 1) * (LEASE + 1),
        })),
      );
      await assertOneWinner(s, thread, root.id, shared, outcomes, {
        SANDBOX_SNAPSHOT_WRITER_CONFLICT: 'acquire',
        SANDBOX_SNAPSHOT_WRITER_LOST: 'append',
        SANDBOX_SNAPSHOT_STALE_HEAD: 'append',
      });
      for (const r of outcomes) seen.add(`${r.stage}:${r.code}`);
      // Whoever acquired got a higher fence than every writer before it.
      const fences = outcomes.flatMap((r) => (r.fence === null ? [] : [r.fence]));
      assert.ok(fences.every((f) => f > writer.fence));
      assert.equal(new Set(fences).size, fences.length, 'no fence twice');
    }
    t.diagnostic(`outcomes seen: ${[...seen].sort().join(', ')}`);
  });
});

describe('a writer killed in the middle of a large append', () => {
  // 16 MB of conversation and 1000 files: long enough to be killed while
  // it is sent, or while the server runs it: with client_connection_check_interval
  // the server notices the dead client and rolls back; without it, it runs
  // the append to its end (and commits) before it finds out.
  const BYTES = 16_000_000;
  const FILES = 1_000;

  async function backendsOf(applicationName: string): Promise<number> {
    const { rows } = await pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity WHERE application_name = $1',
      [applicationName],
    );
    return rows[0]!.n;
  }

  /**
   * The child's append as the server sees it: not there yet; received in
   * part (the statement is there, its 16 MB parameter may still be on its
   * way); or running (it has a transaction id: it has taken the writer's row
   * lock, so the whole message, and the Sync after it, were sent).
   */
  async function appendPhase(applicationName: string): Promise<'none' | 'receiving' | 'running'> {
    const { rows } = await pool.query<{ running: boolean }>(
      `SELECT backend_xid IS NOT NULL AS running FROM pg_catalog.pg_stat_activity
        WHERE application_name = $1 AND state = 'active' AND query LIKE '%checkpoint_append%'`,
      [applicationName],
    );
    const row = rows[0];
    return row === undefined ? 'none' : row.running ? 'running' : 'receiving';
  }

  for (const when of ['while sending', 'while the server appends', 'while the server appends, unnoticed'] as const) {
    test(`SIGKILL ${when}: the whole checkpoint with its head and references, or nothing`, async (t) => {
      const s = scope('kill');
      const shared = `${s}/shared`;
      const { thread, writer, root } = await threadWithRoot(s, shared);
      const applicationName = `sandbox_store_ts_ckpt_kill_${s.slice(-12)}`;
      const args: ChildArgs = {
        threadId: thread,
        checkpointId: `${s}/big`,
        expectedHeadId: root.id,
        seed: `${s}/big`,
        shared,
        bytes: BYTES,
        files: FILES,
        writer: { threadId: writer.threadId, ownerToken: writer.ownerToken, fence: writer.fence },
        leaseMs: LEASE,
        barrier: false,
        applicationName,
        ...(when === 'while the server appends' ? { connectionCheckMs: 10 } : {}),
      };
      const child = startChild(args);
      await child.printed('sending');
      // While sending: as soon as the server has the statement (usually while
      // it still receives the 16 MB parameter).  Otherwise once it runs it.
      const wanted = when === 'while sending' ? ['receiving', 'running'] : ['running'];
      let phase = await appendPhase(applicationName);
      const deadline = Date.now() + 60_000;
      while (!wanted.includes(phase) && Date.now() < deadline) {
        await sleep(1);
        phase = await appendPhase(applicationName);
      }
      child.kill();
      t.diagnostic(`killed with the append ${phase}`);
      const exit = await child.done;
      assert.equal(exit.signal, 'SIGKILL', `the child was killed before it finished: ${JSON.stringify(exit.result)}`);
      assert.equal(exit.result, undefined);
      // Let the server finish with the dead client's backend.
      const until = Date.now() + 60_000;
      while ((await backendsOf(applicationName)) > 0 && Date.now() < until) await sleep(20);
      assert.equal(await backendsOf(applicationName), 0);

      const big = bigCheckpoint(args.checkpointId, thread, root.id, args.seed, BYTES, FILES, shared);
      const own = big.files.flatMap((f) => (f.kind === 'file' && f.blobKey !== fileKey(shared) ? [f.blobKey] : []));
      assert.equal(new Set(own).size, FILES);
      const keys = [fileKey(shared), ...own];
      const state = await stateOf(store, thread, keys);
      if (state.head === big.id) {
        t.diagnostic('outcome: the whole checkpoint');
        assert.deepStrictEqual(await store.get(big.id), big);
        assert.deepStrictEqual(state.checkpoints, [root, big]);
        assert.equal(Object.keys(state.references).length, FILES + 1);
        assert.equal(state.references[fileKey(shared)], 2);
        for (const key of own) assert.equal(state.references[key], 1, key);
      } else {
        t.diagnostic('outcome: nothing');
        assert.equal(state.head, root.id);
        assert.equal(await store.get(big.id), null);
        assert.deepStrictEqual(state.checkpoints, [root]);
        assert.deepStrictEqual(state.references, { [fileKey(shared)]: 1 });
      }
      // The writer's lease outlived the process that used it: the chain goes on.
      const next = checkpoint(`${s}/next`, thread, state.head, 3);
      await store.append({ checkpoint: next, expectedHeadId: state.head, writer });
      assert.equal(await store.getHead(thread), next.id);
    });
  }
});

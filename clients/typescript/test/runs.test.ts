/**
 * Durable runs (extension 1.5) without any TanStack package: the RunStore
 * rules of TanStack AI 0.58's doc comments, memoryStream's store-independent
 * cases for the run log adapter, the run driver's claim and pipe, and the
 * one listener connection per pool.  The cross-process takeovers with
 * TanStack AI 0.58 itself are in test/lines/0.58.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';

import {
  ClaimLostError,
  InvalidLogOffsetError,
  RunFinishedError,
  RunNotFoundError,
  SandboxStoreError,
  createLockStore,
  createRunDriver,
  createRunStore,
  createStreamDurability,
  type RunRecord,
} from '../src/index.js';
import { eventually, newPool, sleep, started, within } from './helpers.js';

const id = (prefix: string): string => `ts-test/${prefix}/${randomUUID()}`;

let pool: pg.Pool;
before(() => {
  pool = newPool(10);
});
after(async () => {
  await pool.end();
});

async function collect<T>(iterable: AsyncIterable<T>, onItem?: (item: T) => void): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) {
    out.push(item);
    onItem?.(item);
  }
  return out;
}

/**
 * A pool whose statements of `marker` (a piece of their text) mark
 * `answered` once the first of them has been answered: a reader's first
 * look at its log is then done, whenever that was.
 */
function markingPool(max: number, marker: string): { pool: pg.Pool; answered: Promise<void> } {
  const marked = newPool(max);
  const seen = started();
  const connect = marked.connect.bind(marked);
  (marked as { connect: () => Promise<pg.PoolClient> }).connect = async () => {
    const client = await connect();
    const query = client.query.bind(client) as (text: string, values?: unknown[]) => Promise<unknown>;
    (client as { query: unknown }).query = async (text: string, values?: unknown[]) => {
      const result = await query(text, values);
      if (typeof text === 'string' && text.includes(marker)) seen.mark();
      return result;
    };
    return client;
  };
  return { pool: marked, answered: seen.promise };
}

describe('RunStore', () => {
  test('createOrResume creates with status running, then returns the existing record unchanged', async () => {
    const runs = createRunStore(pool);
    const runId = id('run');
    const created = await runs.createOrResume({ runId, threadId: 't', startedAt: 1767323045678.125 });
    assert.deepEqual(created, { runId, threadId: 't', status: 'running', startedAt: 1767323045678.125 });
    const again = await runs.createOrResume({ runId, threadId: 'other', startedAt: 5, status: 'interrupted' });
    assert.deepEqual(again, created);
    const explicit = await runs.createOrResume({
      runId: id('run'),
      threadId: 't',
      startedAt: 1,
      status: 'interrupted',
    });
    assert.equal(explicit.status, 'interrupted');
  });

  test('createOrResume never resurrects a finished run', async () => {
    const runs = createRunStore(pool);
    const runId = id('run');
    await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
    await runs.update(runId, { status: 'completed', finishedAt: 2 });
    const again = await runs.createOrResume({ runId, threadId: 't', startedAt: 3, status: 'running' });
    assert.equal(again.status, 'completed');
    assert.equal(again.finishedAt, 2);
    assert.equal(again.startedAt, 1);
  });

  test('update of an unknown run is a no-op: no error, no record', async () => {
    const runs = createRunStore(pool);
    const runId = id('run');
    await runs.update(runId, { status: 'failed', finishedAt: 1 });
    assert.equal(await runs.get(runId), null);
  });

  test('update: an omitted key leaves the field, an explicit undefined clears it', async () => {
    const runs = createRunStore(pool);
    const runId = id('run');
    await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
    await runs.update(runId, { sandboxKey: 'k', detachedSince: 10, cancelRequested: true });
    await runs.update(runId, { detachedSince: undefined });
    assert.deepEqual(await runs.get(runId), {
      runId,
      threadId: 't',
      status: 'running',
      startedAt: 1,
      sandboxKey: 'k',
      cancelRequested: true,
    });
  });

  test('the durable-run fields round-trip: sandboxKey, detachedSince, cancelRequested, driverEpoch, error, usage', async () => {
    const runs = createRunStore(pool);
    const runId = id('run');
    await runs.createOrResume({ runId, threadId: 't', startedAt: 1.5 });
    const usage = { promptTokens: 1, completionTokens: 2, totalTokens: 3, promptTokensDetails: { cachedTokens: 1 } };
    await runs.update(runId, {
      sandboxKey: 'thread/default/e2b',
      detachedSince: 1767323045678.5,
      cancelRequested: false,
      driverEpoch: 3,
      status: 'failed',
      finishedAt: 1767323045999.25,
      error: { message: 'boom', code: 'E1' },
      usage,
    });
    const expected: RunRecord = {
      runId,
      threadId: 't',
      status: 'failed',
      startedAt: 1.5,
      finishedAt: 1767323045999.25,
      error: { message: 'boom', code: 'E1' },
      usage,
      sandboxKey: 'thread/default/e2b',
      detachedSince: 1767323045678.5,
      cancelRequested: false,
      driverEpoch: 3,
    };
    assert.deepEqual(await runs.get(runId), expected);
    // A driverEpoch patch that would lower it is refused.
    await assert.rejects(runs.update(runId, { driverEpoch: 2 }), ClaimLostError);
  });

  test("TanStack's durable-run fields case: round-trips them, overwrites driverEpoch, clears every one on explicit undefined (1.6)", async () => {
    const runs = createRunStore(pool);
    const runId = id('run');
    await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
    await runs.update(runId, { sandboxKey: 'sb', detachedSince: 5, cancelRequested: true, driverEpoch: 1 });
    await runs.update(runId, { driverEpoch: 2 });
    assert.equal((await runs.get(runId))?.driverEpoch, 2);
    await runs.update(runId, {
      sandboxKey: undefined,
      detachedSince: undefined,
      cancelRequested: undefined,
      driverEpoch: undefined,
    });
    assert.deepEqual(await runs.get(runId), { runId, threadId: 't', status: 'running', startedAt: 1 });
    // The cleared epoch is not handed out again: a patch at or below it is refused, a claim goes above it.
    await assert.rejects(runs.update(runId, { driverEpoch: 2 }), ClaimLostError);
    await runs.update(runId, { driverEpoch: 3 });
    assert.equal((await runs.get(runId))?.driverEpoch, 3);
  });

  test('get of an unknown run is null', async () => {
    assert.equal(await createRunStore(pool).get(id('run')), null);
  });

  test('listByThread: ascending startedAt', async () => {
    const runs = createRunStore(pool);
    const threadId = id('thread');
    for (const [runId, startedAt] of [
      ['c', 30],
      ['a', 10],
      ['b', 20],
    ] as const) {
      await runs.createOrResume({ runId: `${threadId}/${runId}`, threadId, startedAt });
    }
    await runs.createOrResume({ runId: id('run'), threadId: id('thread'), startedAt: 15 });
    const listed = await runs.listByThread(threadId);
    assert.deepEqual(
      listed.map((r) => [r.runId.slice(threadId.length + 1), r.startedAt]),
      [
        ['a', 10],
        ['b', 20],
        ['c', 30],
      ],
    );
    assert.deepEqual(await runs.listByThread(id('thread')), []);
  });

  test('listReclaimable: running, detached, detachedSince <= now - ttlMs (inclusive)', async () => {
    const runs = createRunStore(pool);
    const base = 5e12 + Math.floor(Math.random() * 1e9); // far from other tests' detachedSince values
    const mk = async (name: string, patch: Parameters<typeof runs.update>[1]): Promise<string> => {
      const runId = id(name);
      await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
      await runs.update(runId, patch);
      return runId;
    };
    const atCutoff = await mk('at-cutoff', { detachedSince: base - 1000 });
    const older = await mk('older', { detachedSince: base - 2000 });
    await mk('newer', { detachedSince: base - 999 });
    await mk('finished', { detachedSince: base - 5000, status: 'completed' });
    await mk('attached', {});
    const listed = (await runs.listReclaimable({ now: base, ttlMs: 1000 })).filter(
      (r) => r.detachedSince !== undefined && r.detachedSince >= base - 5000 && r.detachedSince <= base,
    );
    assert.deepEqual(
      listed.map((r) => r.runId),
      [older, atCutoff],
    );
  });

  test('findActiveRun: the running run with the greatest startedAt; null when none', async () => {
    const runs = createRunStore(pool);
    const threadId = id('thread');
    assert.equal(await runs.findActiveRun(threadId), null);
    await runs.createOrResume({ runId: `${threadId}/1`, threadId, startedAt: 10 });
    await runs.createOrResume({ runId: `${threadId}/2`, threadId, startedAt: 30 });
    await runs.createOrResume({ runId: `${threadId}/3`, threadId, startedAt: 20 });
    await runs.createOrResume({ runId: `${threadId}/4`, threadId, startedAt: 40, status: 'interrupted' });
    assert.equal((await runs.findActiveRun(threadId))?.runId, `${threadId}/2`);
    await runs.update(`${threadId}/2`, { status: 'completed' });
    assert.equal((await runs.findActiveRun(threadId))?.runId, `${threadId}/3`);
  });

  test('a record with a status that is not a RunStatus is refused, not handed on', async () => {
    const runs = createRunStore(pool);
    const runId = id('run');
    await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('ALTER TABLE sandbox_store.runs DROP CONSTRAINT IF EXISTS runs_status_check');
      await client.query("UPDATE sandbox_store.runs SET status = 'toString' WHERE run_id = $1", [runId]);
      // Read inside the transaction through the same statement text the store uses.
      const { rows } = await client.query<{ record: string }>(
        'SELECT sandbox_store.run_get(run_id => $1)::text AS record',
        [runId],
      );
      assert.match(rows[0]?.record ?? '', /toString/);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    // The check itself, on the parsed row.
    const { runRecordFromText } = await import('../src/internal/runs.js');
    assert.throws(
      () => runRecordFromText(JSON.stringify({ runId, threadId: 't', status: 'toString', startedAt: 1 }), 'run_get'),
      SandboxStoreError,
    );
  });
});

describe('run log (createStreamDurability)', () => {
  test('append returns one offset per chunk, in order, naming the run', async () => {
    const runId = id('log');
    const log = createStreamDurability(pool, { runId });
    const first = await log.append([{ type: 'A' }, { type: 'B' }]);
    const second = await log.append([{ type: 'C' }]);
    const all = [...first, ...second];
    assert.equal(new Set(all).size, 3);
    assert.deepEqual(
      all,
      [1, 2, 3].map((n) => `pg1:${encodeURIComponent(runId)}:${n}`),
    );
    assert.deepEqual(
      (await log.snapshot()).map((e) => [e.offset, e.chunk]),
      [
        [all[0], { type: 'A' }],
        [all[1], { type: 'B' }],
        [all[2], { type: 'C' }],
      ],
    );
  });

  test('read is strictly after the offset, and live until close', async () => {
    const runId = id('log');
    const log = createStreamDurability(pool, { runId });
    const [o1] = await log.append([{ n: 1 }, { n: 2 }]);
    const reading = collect(log.read(o1!));
    await sleep(50);
    await log.append([{ n: 3 }]);
    await sleep(20);
    await log.append([{ n: 4 }]);
    await log.close();
    const read = await within(5000, reading, 'read');
    assert.deepEqual(
      read.map((e) => e.chunk),
      [{ n: 2 }, { n: 3 }, { n: 4 }],
    );
    // '-1' from the start; 'now' from the tail (of a closed log: nothing).
    assert.equal((await collect(log.read('-1'))).length, 4);
    assert.deepEqual(await collect(log.read('now')), []);
  });

  test('1.7.0: an append is written with notify false and its readers woken after the commit; a role that may no longer call run_log_wake loses no wake', async () => {
    const role = `sandbox_store_ts_wake_${randomUUID().slice(0, 8)}`;
    await pool.query(`CREATE ROLE ${role} LOGIN`);
    await pool.query(`GRANT USAGE ON SCHEMA sandbox_store TO ${role}`);
    await pool.query(`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO ${role}`);
    // The writer's statements, as it sends them.
    const sent: string[] = [];
    const writer = newPool(2, { user: role });
    const connect = writer.connect.bind(writer);
    (writer as { connect: () => Promise<pg.PoolClient> }).connect = async () => {
      const client = await connect();
      const query = client.query.bind(client) as (text: string, values?: unknown[]) => Promise<unknown>;
      (client as { query: unknown }).query = (text: string, values?: unknown[]) => {
        if (typeof text === 'string') sent.push(text);
        return query(text, values);
      };
      return client;
    };
    try {
      const runId = id('wake');
      const log = createStreamDurability(writer, { runId });
      await log.append([{ n: 1 }]);
      const got: unknown[] = [];
      const reading = collect(createStreamDurability(pool, { runId }).read('-1'), (e) => got.push(e.chunk));
      await eventually('the reader has n 1', () => got.length === 1, 10_000);
      // The reader waits for a notification (it does not poll): the wake after the commit.
      await log.append([{ n: 2 }]);
      await eventually('the reader is woken for n 2', () => got.length === 2, 10_000);
      assert.ok(
        sent.some((text) => text.includes('notify => false')),
        'the append is written with notify false',
      );
      assert.ok(
        sent.some((text) => text.includes('run_log_wake')),
        'and its readers woken by run_log_wake',
      );
      // The grant of run_log_wake revoked: the next append (its support asked
      // once) is still quiet, its wake is refused, and the channel is
      // notified directly; the one after asks again and notifies in its own
      // transaction.
      await pool.query(`REVOKE EXECUTE ON FUNCTION sandbox_store.run_log_wake(text[]) FROM ${role}`);
      await log.append([{ n: 3 }]);
      await eventually('the reader is woken for n 3', () => got.length === 3, 10_000);
      sent.length = 0;
      await log.append([{ n: 4 }]);
      await eventually('the reader is woken for n 4', () => got.length === 4, 10_000);
      assert.ok(
        sent.some((text) => text.includes('run_log_append') && !text.includes('notify => false')),
        'the append after the revoke notifies in its transaction',
      );
      await log.close();
      const read = await within(10_000, reading, 'read');
      assert.deepEqual(
        read.map((e) => e.chunk),
        [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }],
      );
    } finally {
      await writer.end();
      await pool.query(`REVOKE ALL ON SCHEMA sandbox_store FROM ${role}`);
      await pool.query(`REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store FROM ${role}`);
      await pool.query(`DROP ROLE ${role}`);
    }
  });

  test('1.7.0: append resolves once its readers were woken: a pool ended right after it loses no wake, and does not keep the process waiting', async () => {
    const runId = id('wake-end');
    const writer = newPool(2);
    const log = createStreamDurability(writer, { runId });
    await log.append([{ n: 1 }]);
    const got: unknown[] = [];
    const reading = collect(createStreamDurability(pool, { runId }).read('-1'), (e) => got.push(e.chunk));
    await eventually('the reader has n 1', () => got.length === 1, 10_000);
    await log.append([{ n: 2 }]);
    const ending = Date.now();
    await writer.end();
    assert.ok(Date.now() - ending < 5_000, 'the pool ends at once');
    // Nothing else writes this log: only the wake sent before the pool ended can wake the reader.
    await eventually('the reader is woken for n 2', () => got.length === 2, 10_000);
    await createStreamDurability(pool, { runId }).close();
    assert.deepEqual(
      (await within(10_000, reading, 'read')).map((e) => e.chunk),
      [{ n: 1 }, { n: 2 }],
    );
  });

  test('1.7.0: a wake that is never sent (its writer died after the commit) delays a live reader by at most the idle re-read, and loses nothing', async () => {
    const runId = id('wake-lost');
    const log = createStreamDurability(pool, { runId });
    await log.append([{ n: 1 }]);
    const got: unknown[] = [];
    const reading = collect(createStreamDurability(pool, { runId }).read('-1'), (e) => got.push(e.chunk));
    await eventually('the reader has n 1', () => got.length === 1, 10_000);
    // A writer's quiet append committed, and the writer gone before its wake:
    // no notification is ever sent for n 2.
    await pool.query('SELECT sandbox_store.run_log_append($1, $2::jsonb, NULL, false)', [runId, '[{"n": 2}]']);
    await eventually('the idle reader reads n 2 on its own', () => got.length === 2, 30_000);
    await log.close();
    assert.deepEqual(
      (await within(10_000, reading, 'read')).map((e) => e.chunk),
      [{ n: 1 }, { n: 2 }],
    );
  });

  test("'now' joins at the tail: only what comes after", async () => {
    const runId = id('log');
    const log = createStreamDurability(pool, { runId });
    await log.append([{ n: 1 }]);
    // The reader's pool tells when its first look (which fixes the tail) was
    // answered: the next append comes after the join, however late that was.
    const joining = markingPool(2, 'run_log_status');
    try {
      const reading = collect(createStreamDurability(joining.pool, { runId }).read('now'));
      await within(30_000, joining.answered, "the reader's first look");
      await log.append([{ n: 2 }]);
      await log.close();
      assert.deepEqual(
        (await within(30_000, reading, 'read')).map((e) => e.chunk),
        [{ n: 2 }],
      );
    } finally {
      await joining.pool.end();
    }
  });

  test('abort ends a parked reader', async () => {
    const runId = id('log');
    const log = createStreamDurability(pool, { runId });
    await log.append([{ n: 1 }]);
    const controller = new AbortController();
    const reading = collect(log.read('-1', controller.signal));
    await sleep(100);
    controller.abort();
    assert.deepEqual(
      (await within(2000, reading, 'aborted read')).map((e) => e.chunk),
      [{ n: 1 }],
    );
  });

  test('snapshot never waits, and is [] for an unknown run', async () => {
    const unknown = createStreamDurability(pool, { runId: id('log') });
    assert.deepEqual(await within(2000, unknown.snapshot(), 'snapshot'), []);
    const open = createStreamDurability(pool, { runId: id('log') });
    await open.append([{ n: 1 }]);
    const snap = await within(2000, open.snapshot(), 'snapshot of an open log');
    assert.equal(snap.length, 1);
    snap.pop(); // a fresh array
    assert.equal((await open.snapshot()).length, 1);
  });

  test('a from-start join of an unknown or empty log waits firstChunkDeadlineMs, then throws', async () => {
    const runId = id('log');
    const log = createStreamDurability(pool, { runId }, { firstChunkDeadlineMs: 150 });
    const t0 = Date.now();
    await assert.rejects(collect(log.read('-1')), /no data within 150ms/);
    assert.ok(Date.now() - t0 >= 140, 'it waited');
    // A first chunk within the deadline is read (a deadline long against
    // the append that comes 100 ms later: only a failing read waits it out).
    const late = createStreamDurability(pool, { runId: id('log') }, { firstChunkDeadlineMs: 30_000 });
    const reading = collect(late.read('-1'));
    await sleep(100);
    await late.append([{ n: 1 }]);
    await late.close();
    assert.equal((await within(30_000, reading, 'join')).length, 1);
  });

  test('a read of an offset of an unknown run throws at once; a foreign or malformed offset throws', async () => {
    const runId = id('log');
    const log = createStreamDurability(pool, { runId });
    await assert.rejects(collect(log.read(`pg1:${encodeURIComponent(runId)}:3`)), /Unknown or expired run log/);
    const other = createStreamDurability(pool, { runId: id('log') });
    const [foreign] = await other.append([{ n: 1 }]);
    await assert.rejects(collect(log.read(foreign!)), InvalidLogOffsetError);
    await assert.rejects(collect(log.read('memory:v1:x:1')), InvalidLogOffsetError);
  });

  test('upsert: replaces stored offsets, appends after the tail; rejects repeated, foreign, other-run and before-tail offsets, validating the whole batch first', async () => {
    const runId = id('log');
    const log = createStreamDurability(pool, { runId });
    const [o1, o2] = await log.append([{ v: 'a' }, { v: 'b' }]);
    const o3 = `pg1:${encodeURIComponent(runId)}:3`;
    const o5 = `pg1:${encodeURIComponent(runId)}:5`;
    assert.deepEqual(
      await log.upsert([
        { offset: o2!, chunk: { v: 'B' } },
        { offset: o3, chunk: { v: 'c' } },
        { offset: o5, chunk: { v: 'e' } },
      ]),
      [o2, o3, o5],
    );
    const stored = async (): Promise<unknown[]> => (await log.snapshot()).map((e) => [e.offset, e.chunk]);
    const before = await stored();
    assert.deepEqual(before, [
      [o1, { v: 'a' }],
      [o2, { v: 'B' }],
      [o3, { v: 'c' }],
      [o5, { v: 'e' }],
    ]);
    const other = createStreamDurability(pool, { runId: id('log') });
    const [otherOffset] = await other.append([{ v: 'x' }]);
    const o4 = `pg1:${encodeURIComponent(runId)}:4`;
    const o6 = `pg1:${encodeURIComponent(runId)}:6`;
    const o7 = `pg1:${encodeURIComponent(runId)}:7`;
    const bad: Array<Array<{ offset: string; chunk: object }>> = [
      // repeated within the batch
      [
        { offset: o6, chunk: { v: 'f' } },
        { offset: o6, chunk: { v: 'f' } },
      ],
      // another run's offset (after a valid entry: nothing of the batch applies)
      [
        { offset: o6, chunk: { v: 'f' } },
        { offset: otherOffset!, chunk: { v: 'x' } },
      ],
      // not minted by this adapter
      [
        { offset: o6, chunk: { v: 'f' } },
        { offset: 'memory:v1:x:1', chunk: { v: 'x' } },
      ],
      // a new offset at or before the tail (4 is not stored; the tail is 5)
      [
        { offset: o6, chunk: { v: 'f' } },
        { offset: o4, chunk: { v: 'd' } },
      ],
      // a new offset not after a preceding new entry of the batch
      [
        { offset: o7, chunk: { v: 'g' } },
        { offset: o6, chunk: { v: 'f' } },
      ],
    ];
    for (const batch of bad) {
      await assert.rejects(log.upsert(batch), InvalidLogOffsetError, JSON.stringify(batch));
      assert.deepEqual(await stored(), before, 'nothing of a refused batch applied');
    }
    // A hole is refused.
    const sparse = new Array<{ offset: string; chunk: object }>(2);
    sparse[1] = { offset: o6, chunk: { v: 'f' } };
    await assert.rejects(log.upsert(sparse), /dense/);
    assert.deepEqual(await stored(), before);
  });

  test('a closed log refuses appends (RunFinishedError); the request rules follow memoryStream', async () => {
    const runId = id('log');
    const log = createStreamDurability(pool, { runId });
    await log.append([{ n: 1 }]);
    await log.close();
    await assert.rejects(log.append([{ n: 2 }]), RunFinishedError);

    const fresh = createStreamDurability(pool, new Request('http://x/chat', { method: 'POST' }));
    assert.equal(fresh.resumeFrom(), null);
    assert.match(fresh.runId, /^[0-9a-f-]{36}$/);
    const named = createStreamDurability(pool, new Request('http://x/chat?runId=q', { headers: { 'X-Run-Id': 'h' } }));
    assert.equal(named.runId, 'h');
    assert.equal(createStreamDurability(pool, new Request('http://x/chat?runId=q')).runId, 'q');
    const offset = `pg1:${encodeURIComponent(runId)}:1`;
    const resumed = createStreamDurability(
      pool,
      new Request('http://x/chat?offset=-1&runId=q', { headers: { 'Last-Event-ID': offset, 'X-Run-Id': 'h' } }),
    );
    assert.equal(resumed.resumeFrom(), offset);
    assert.equal(resumed.runId, runId);
    const joined = createStreamDurability(pool, new Request('http://x/chat?offset=-1&runId=q'));
    assert.equal(joined.resumeFrom(), '-1');
    assert.equal(joined.runId, 'q');
    assert.throws(
      () => createStreamDurability(pool, new Request('http://x/chat?offset=pg1:x:0')),
      InvalidLogOffsetError,
    );
    assert.throws(() => createStreamDurability(pool, { runId: '' }), /Invalid runId/);
  });
});

describe('run driver (createRunDriver)', () => {
  // A lease long against a claim's work on a loaded machine: nothing here
  // waits for one to run out.
  const locks = (): ReturnType<typeof createLockStore> =>
    createLockStore(pool, { mode: 'lease', waitMs: null, leaseMs: 30_000 });

  test('claim bumps the epoch; pipe appends under it, closes the log and records the outcome', async () => {
    const runs = createRunStore(pool);
    const driver = createRunDriver(pool);
    const runId = id('drive');
    await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
    const epoch = await driver.claim({ runs, locks: locks(), runId }, async (claim) => {
      assert.equal(claim.runId, runId);
      // The store's update inside the claim is made under its epoch.
      await runs.update(runId, { detachedSince: undefined });
      async function* stream(): AsyncGenerator<object> {
        for (let i = 0; i < 10; i++) yield { type: 'TEXT_MESSAGE_CONTENT', delta: String(i) };
        yield { type: 'RUN_FINISHED', usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 } };
      }
      await driver.pipe(stream(), { runId, threadId: 't', signal: claim.signal });
      return claim.epoch;
    });
    // (the run's first epoch: a number drawn from the database's fence
    // sequence, which every claim of the database moves)
    assert.ok(Number.isSafeInteger(epoch) && epoch >= 1, `epoch ${epoch}`);
    const record = await runs.get(runId);
    assert.equal(record?.status, 'completed');
    assert.equal(record?.driverEpoch, epoch);
    assert.deepEqual(record?.usage, { promptTokens: 1, completionTokens: 2, totalTokens: 3 });
    const entries = await collect(createStreamDurability(pool, { runId }).read('-1'));
    assert.equal(entries.length, 11);
    // A finished run cannot be claimed; an unknown one neither.
    await assert.rejects(
      driver.claim({ locks: locks(), runId }, async () => undefined),
      RunFinishedError,
    );
    await assert.rejects(
      driver.claim({ locks: locks(), runId: id('none') }, async () => undefined),
      RunNotFoundError,
    );
  });

  test('RUN_ERROR records failed with its error; a stream that throws an AbortError records aborted', async () => {
    const runs = createRunStore(pool);
    const driver = createRunDriver(pool);
    for (const [kind, status] of [
      ['error', 'failed'],
      ['abort', 'aborted'],
    ] as const) {
      const runId = id(kind);
      await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
      await driver.claim({ locks: locks(), runId }, async (claim) => {
        async function* stream(): AsyncGenerator<object> {
          yield { type: 'TEXT_MESSAGE_CONTENT', delta: 'x' };
          if (kind === 'error') yield { type: 'RUN_ERROR', message: 'boom', error: { message: 'boom', code: 'E' } };
          else throw Object.assign(new Error('stop'), { name: 'AbortError' });
        }
        await driver.pipe(stream(), { runId, signal: claim.signal });
      });
      const record = await runs.get(runId);
      assert.equal(record?.status, status);
      assert.deepEqual(
        record?.error,
        kind === 'error' ? { message: 'boom', code: 'E' } : { message: 'Request aborted', code: 'aborted' },
      );
      const last = (await createStreamDurability(pool, { runId }).snapshot()).at(-1)?.chunk as { type: string };
      assert.equal(last.type, 'RUN_ERROR');
    }
  });

  test('a superseded claim: its appends, close and finish are refused (SB001), its signal aborts, its pipe rejects', async () => {
    const runs = createRunStore(pool);
    const driver = createRunDriver(pool, { checkEpochEveryMs: null });
    const runId = id('supersede');
    await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Two lock stores that do not exclude each other (different keys): the
    // epoch alone must fence.
    const looseLocks = (suffix: string) => ({
      withLock: <T>(key: string, fn: (signal: AbortSignal) => Promise<T>) =>
        createLockStore(pool, { mode: 'lease' }).withLock(`${key}/${suffix}`, fn),
    });
    const first = driver.claim({ locks: looseLocks('a'), runId }, async (claim) => {
      async function* stream(): AsyncGenerator<object> {
        yield { type: 'TEXT_MESSAGE_CONTENT', delta: 'a1' };
        await gate;
        yield { type: 'TEXT_MESSAGE_CONTENT', delta: 'a2' };
        yield { type: 'RUN_FINISHED' };
      }
      await assert.rejects(driver.pipe(stream(), { runId, signal: claim.signal }), ClaimLostError);
      assert.ok(claim.signal.aborted);
      // The store's update under the stale epoch is refused too.
      await assert.rejects(runs.update(runId, { status: 'completed' }), ClaimLostError);
      return claim.epoch;
    });
    // The first claim (epoch 1) is driving: its first chunk is in the log.
    await eventually('the first claim appending', async () =>
      (await createStreamDurability(pool, { runId }).snapshot()).some(
        (e) => (e.chunk as { delta?: string }).delta === 'a1',
      ),
    );
    const second = await driver.claim({ locks: looseLocks('b'), runId }, async (claim) => {
      release();
      await first;
      async function* stream(): AsyncGenerator<object> {
        yield { type: 'TEXT_MESSAGE_CONTENT', delta: 'b1' };
        yield { type: 'RUN_FINISHED' };
      }
      await driver.pipe(stream(), { runId, signal: claim.signal });
      return claim.epoch;
    });
    const firstEpoch = await first;
    assert.ok(second > firstEpoch, `the second claim's epoch ${second} is above the first's ${firstEpoch}`);
    const deltas = (await createStreamDurability(pool, { runId }).snapshot()).map(
      (e) => (e.chunk as { delta?: string }).delta ?? (e.chunk as { type: string }).type,
    );
    assert.deepEqual(deltas, ['a1', 'b1', 'RUN_FINISHED']);
    const record = await runs.get(runId);
    assert.equal(record?.status, 'completed');
    assert.equal(record?.driverEpoch, second);
    // A fenced adapter of the old epoch is refused.
    await assert.rejects(
      createStreamDurability(pool, { runId }, { epoch: firstEpoch }).append([{ n: 1 }]),
      ClaimLostError,
    );
  });

  test("a claim is lost, its signal aborted with the reason, by each thing that tells: an app's adapter or the store's update under its epoch refused (SB001), the epoch check, the lock lost", async () => {
    const runs = createRunStore(pool);
    // Lock stores that do not exclude each other (different keys): a second claim supersedes the first.
    const looseLocks = (suffix: string) => ({
      withLock: <T>(key: string, fn: (signal: AbortSignal) => Promise<T>) =>
        createLockStore(pool, { mode: 'lease' }).withLock(`${key}/${suffix}`, fn),
    });
    for (const kind of ['adapter', 'update', 'check'] as const) {
      const driver = createRunDriver(pool, { checkEpochEveryMs: kind === 'check' ? 50 : null });
      const runId = id(`lost-${kind}`);
      await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
      await driver.claim({ locks: looseLocks('a'), runId }, async (claim) => {
        // Another host claims the run: this claim's epoch is superseded.
        await createRunDriver(pool, { checkEpochEveryMs: null }).claim(
          { locks: looseLocks('b'), runId },
          async () => undefined,
        );
        assert.equal(claim.signal.aborted, false, `${kind}: nothing told yet`);
        let refused: unknown;
        if (kind === 'adapter') {
          refused = await createStreamDurability(pool, { runId }, { epoch: claim.epoch })
            .append([{ n: 1 }])
            .catch((error: unknown) => error);
        } else if (kind === 'update') {
          refused = await runs.update(runId, { detachedSince: undefined }).catch((error: unknown) => error);
        } else {
          await eventually('the epoch check', () => claim.signal.aborted, 10_000);
        }
        assert.ok(claim.signal.aborted, `${kind}: the signal aborted`);
        assert.ok(claim.signal.reason instanceof ClaimLostError, `${kind}: ${String(claim.signal.reason)}`);
        assert.equal(claim.signal.reason.sqlstate, 'SB001');
        if (kind !== 'check') assert.equal(claim.signal.reason, refused, `${kind}: with the refused write's error`);
      });
    }
    // The lock or lease lost: the claim's signal aborts with its reason.
    const runId = id('lost-lock');
    await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
    const lost = new Error('the lease ran out');
    const lockSignal = new AbortController();
    const locks = {
      withLock: <T>(_key: string, fn: (signal: AbortSignal) => Promise<T>) => fn(lockSignal.signal),
    };
    await createRunDriver(pool, { checkEpochEveryMs: null }).claim({ locks, runId }, async (claim) => {
      assert.equal(claim.signal.aborted, false);
      lockSignal.abort(lost);
      assert.ok(claim.signal.aborted);
      assert.equal(claim.signal.reason, lost);
    });
  });

  test('a cancel request from a replica that does not drive the run is accepted while a driver holds it', async () => {
    const runs = createRunStore(pool);
    const driver = createRunDriver(pool, { checkEpochEveryMs: null });
    const runId = id('cancel');
    await runs.createOrResume({ runId, threadId: 't', startedAt: 1 });
    const elsewhere = newPool(1); // another replica: no claim of the run in its process
    try {
      await driver.claim({ locks: locks(), runId }, async (claim) => {
        await createRunStore(elsewhere).update(runId, { cancelRequested: true });
        assert.equal((await runs.get(runId))?.cancelRequested, true);
        assert.equal((await runs.get(runId))?.driverEpoch, claim.epoch, 'the driver keeps the run');
        async function* stream(): AsyncGenerator<object> {
          yield { type: 'RUN_FINISHED' };
        }
        await driver.pipe(stream(), { runId, signal: claim.signal });
      });
    } finally {
      await elsewhere.end();
    }
    assert.equal((await runs.get(runId))?.status, 'completed');
  });

  test("an app's own type parsers (int8 as bigint, jsonb its way) change no run record and no epoch", async () => {
    // What the statements of run_create_or_resume, run_get and run_claim
    // read is the server's text: their results are not cast (so that Citus
    // sends them to the run's node), and the pool's parsers must not apply.
    const parsed = newPool(4, {
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === 20
            ? (value: string) => BigInt(value)
            : oid === 3802
              ? () => 'the app parsed this jsonb'
              : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
      },
    });
    try {
      const runs = createRunStore(parsed);
      const driver = createRunDriver(parsed);
      const runId = id('parsers');
      const created = await runs.createOrResume({ runId, threadId: 't', startedAt: 7 });
      assert.equal(created.runId, runId);
      assert.equal(created.status, 'running');
      const epoch = await driver.claim(
        { runs, locks: createLockStore(parsed, { mode: 'lease', waitMs: null, leaseMs: 30_000 }), runId },
        async (claim) => claim.epoch,
      );
      assert.ok(Number.isSafeInteger(epoch) && epoch >= 1, `epoch ${String(epoch)}`);
      const record = await runs.get(runId);
      assert.equal(record?.startedAt, 7);
      assert.equal(record?.driverEpoch, epoch);
    } finally {
      await parsed.end();
    }
  });

  test('pipe outside a claim of this driver rejects', async () => {
    const driver = createRunDriver(pool);
    async function* stream(): AsyncGenerator<object> {}
    await assert.rejects(
      driver.pipe(stream(), { runId: 'x', signal: new AbortController().signal }),
      /signal of a claim of this run driver/,
    );
  });
});

describe('the listener connection', () => {
  test('200 readers tailing 200 runs from one process use one listener connection', async () => {
    const readers = newPool(10, { application_name: 'sandbox_store_ts_200' });
    try {
      const count = async (): Promise<number> => {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity
            WHERE datname = current_database() AND application_name = 'sandbox_store_ts_200/run_log_listener'`,
        );
        return rows[0]?.n ?? -1;
      };
      const ids = Array.from({ length: 200 }, () => id('tail'));
      const logs = ids.map((runId) => createStreamDurability(readers, { runId }));
      for (const log of logs) await log.append([{ n: 0 }]);
      // Every reader has read its first chunk, so it listens (a reader
      // subscribes before it reads) and tails its log now.
      let firstChunks = 0; // nothing else is appended until they all have theirs
      const reading = logs.map((log) => collect(log.read('-1'), () => firstChunks++));
      await eventually('200 readers tailing', () => firstChunks === 200);
      assert.equal(await count(), 1, 'one listener connection');
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity
          WHERE datname = current_database() AND application_name = 'sandbox_store_ts_200'`,
      );
      assert.ok((rows[0]?.n ?? 0) <= 10, 'the readers themselves use no more than the pool');
      await Promise.all(logs.map((log, i) => log.append([{ n: 1, i }])));
      await Promise.all(logs.map((log) => log.close()));
      const read = await within(20_000, Promise.all(reading), '200 readers');
      for (const entries of read)
        assert.deepEqual(
          entries.map((e) => (e.chunk as { n: number }).n),
          [0, 1],
        );
    } finally {
      await readers.end();
    }
  });

  test('a reader survives the listener connection being terminated (reconnect, then re-read)', async () => {
    const readers = newPool(4, { application_name: 'sandbox_store_ts_reconnect' });
    try {
      const runId = id('reconnect');
      const log = createStreamDurability(readers, { runId });
      await log.append([{ n: 0 }]);
      // Once the reader has read its first chunk, its listener is connected.
      const first = started();
      const reading = collect(log.read('-1'), () => first.mark());
      await within(30_000, first.promise, 'the first chunk');
      const { rows } = await pool.query<{ terminated: boolean }>(
        `SELECT pg_catalog.pg_terminate_backend(pid) AS terminated FROM pg_catalog.pg_stat_activity
          WHERE application_name = 'sandbox_store_ts_reconnect/run_log_listener'`,
      );
      assert.deepEqual(
        rows.map((r) => r.terminated),
        [true],
        'the listener connection was there, and was terminated',
      );
      await sleep(50);
      // Written while the listener may be away: the reconnect's wake re-reads it.
      await createStreamDurability(pool, { runId }).append([{ n: 1 }]);
      await sleep(500);
      await createStreamDurability(pool, { runId }).close();
      assert.deepEqual(
        (await within(10_000, reading, 'reader')).map((e) => (e.chunk as { n: number }).n),
        [0, 1],
      );
    } finally {
      await readers.end();
    }
  });
});

/**
 * The checkpoint store, one process: reads and order, ids (malformed
 * Unicode refused before anything is sent), immutability, blob references,
 * the writer lease (driven by the `now` option, and once by the database
 * clock), append's checks in their order, deleteHead, fork, options and
 * errors.  Across processes: checkpoint-processes.test.ts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';

import {
  DEFAULT_CHECKPOINT_LEASE_MS,
  DEFAULT_CHECKPOINT_RENEW_AFTER_MS,
  InvalidArgumentError,
  SandboxCheckpointConflictError,
  SandboxCheckpointDuplicateIdError,
  SandboxCheckpointError,
  SandboxCheckpointInvalidEntryError,
  SandboxCheckpointInvalidIdError,
  SandboxCheckpointNotHeadError,
  SandboxCheckpointParentMismatchError,
  SandboxCheckpointWriterConflictError,
  SandboxCheckpointWriterLostError,
  createCheckpointStore,
  type PgSandboxCheckpointStore,
  type SandboxCheckpointWriterLease,
} from '../src/index.js';
import {
  artifact,
  checkouts,
  checkpoint,
  dir,
  file,
  fileKey,
  artifactKey,
  rejectsWith,
  scope,
  stateOf,
  utf8Order,
  type Message,
} from './checkpoints.js';
import { eventually, newPool } from './helpers.js';

const T0 = Date.UTC(2026, 0, 1);
const LEASE = 60_000;

let pool: pg.Pool;
before(() => {
  pool = newPool(4);
});
after(async () => {
  await pool.end();
});

/** A store on a clock the test moves (`clock.t`), with a 60 s lease. */
function clocked(t = T0): { store: PgSandboxCheckpointStore<Message>; clock: { t: number } } {
  const clock = { t };
  const store = createCheckpointStore<Message>(pool, {
    now: () => clock.t,
    leaseDurationMs: LEASE,
    renewAfterMs: 20_000,
  });
  return { store, clock };
}

describe('checkpoint store: reads', () => {
  test('append, then get, list and getHead give back exactly what was appended', async () => {
    const { store } = clocked();
    const s = scope('roundtrip');
    const thread = `${s}/thread`;
    const writer = await store.acquireWriter(thread);
    const first = checkpoint(`${s}/c1`, thread, null, 1_767_323_045_678, {
      reason: 'named',
      label: 'before the refactor — «v1» 😀',
      sourceRunId: 'run-1',
      files: [dir('src'), file('src/a.ts', `${s}/a`, 10), file('README.md', `${s}/r`, 0)],
      conversation: [
        { role: 'user', content: 'fix the build, ünïcödé 中文 "quoted" \\ back\nslash' },
        {
          role: 'assistant',
          content: null,
          toolCalls: [{ id: 'call-1', type: 'function', function: { name: 'bash', arguments: '{"cmd":"ls"}' } }],
        },
        { role: 'tool', content: '0.1 + 0.2', toolCallId: 'call-1' },
      ],
      artifacts: [artifact(`${s}/art`, 1_767_323_045_000)],
    });
    assert.deepStrictEqual(await store.append({ checkpoint: first, expectedHeadId: null, writer }), {
      headId: first.id,
    });
    const second = checkpoint(`${s}/c2`, thread, first.id, 1_767_323_045_679);
    await store.append({ checkpoint: second, expectedHeadId: first.id, writer });

    assert.deepStrictEqual(await store.get(first.id), first);
    assert.deepStrictEqual(await store.get(second.id), second);
    assert.equal(await store.getHead(thread), second.id);
    assert.deepStrictEqual(await store.list(thread), [first, second]);
    // Optional fields that were not given stay absent (not null, not undefined).
    assert.deepStrictEqual(Object.keys((await store.get(second.id))!).sort(), Object.keys(second).sort());
    // A checkpoint whose parentCheckpointId is left out is stored as a root, with null.
    const { parentCheckpointId: _, ...rootless } = checkpoint(`${s}/c0`, `${s}/other`, null, 5);
    const w2 = await store.acquireWriter(`${s}/other`);
    await store.append({ checkpoint: rootless as never, expectedHeadId: null, writer: w2 });
    assert.equal((await store.get(`${s}/c0`))?.parentCheckpointId, null);
  });

  test('what does not exist: get is null, getHead is null, list is empty (also for ids no checkpoint can have)', async () => {
    const store = createCheckpointStore(pool);
    const s = scope('missing');
    assert.equal(await store.get(`${s}/nothing`), null);
    assert.equal(await store.getHead(`${s}/nothing`), null);
    assert.deepStrictEqual(await store.list(`${s}/nothing`), []);
    const sent = checkouts(pool);
    try {
      for (const id of ['x'.repeat(1025), 'é'.repeat(513), 'a\0b']) {
        assert.equal(await store.get(id), null);
      }
      for (const id of ['x'.repeat(1001), 'a\0b']) {
        assert.equal(await store.getHead(id), null);
        assert.deepStrictEqual(await store.list(id), []);
      }
      assert.equal(sent.count, 0, 'answered without asking the database');
    } finally {
      sent.stop();
    }
    await rejectsWith(store.get(''), 'SANDBOX_SNAPSHOT_INVALID_ID');
    await rejectsWith(store.list(''), 'SANDBOX_SNAPSHOT_INVALID_ID');
    await rejectsWith(store.getHead(''), 'SANDBOX_SNAPSHOT_INVALID_ID');
  });

  test('list: by createdAt, then by id compared as UTF-8 bytes (not UTF-16, not the collation)', async () => {
    const { store } = clocked();
    const s = scope('order');
    const thread = `${s}/thread`;
    // At createdAt 7: ids whose UTF-8 order differs from JavaScript's UTF-16
    // order (U+FF5A vs U+1F600: EF.. < F0.. in UTF-8, but 0xFF5A > 0xD83D in
    // UTF-16) and from a linguistic collation ('B' < 'a' < 'b' < 'é').
    const suffixes = ['😀', 'ｚ', 'b', 'B', 'é', 'a', 'e\u0301', '\u{10FFFF}', '\uFFFD', 'a😀', 'aｚ'];
    const tied = suffixes.map((x) => `${s}/${x}`);
    const entries: Array<{ id: string; createdAt: number }> = [
      { id: `${s}/late`, createdAt: 9 },
      ...tied.map((id) => ({ id, createdAt: 7 })),
      { id: `${s}/early-😀`, createdAt: -3 },
      { id: `${s}/zero`, createdAt: 0 },
    ];
    const writer = await store.acquireWriter(thread);
    let head: string | null = null;
    for (const { id, createdAt } of entries) {
      await store.append({ checkpoint: checkpoint(id, thread, head, createdAt), expectedHeadId: head, writer });
      head = id;
    }

    const expected = [`${s}/early-😀`, `${s}/zero`, ...[...tied].sort(utf8Order), `${s}/late`];
    const listed = (await store.list(thread)).map((c) => c.id);
    assert.deepStrictEqual(listed, expected);
    // The test means something: UTF-16 order and a collation order differ from it.
    assert.notDeepStrictEqual([...tied].sort(), [...tied].sort(utf8Order));
    assert.notDeepStrictEqual(
      [...tied].sort((a, b) => a.localeCompare(b, 'en')),
      [...tied].sort(utf8Order),
    );
    for (const id of tied) assert.equal((await store.get(id))?.id, id, 'non-ASCII ids round-trip');
    assert.equal(await store.getHead(thread), `${s}/zero`);
  });
});

describe('checkpoint store: ids must be well-formed Unicode', () => {
  test('a lone surrogate in any id is refused with INVALID_ID before anything is sent', async () => {
    const { store } = clocked();
    const s = scope('surrogate');
    const thread = `${s}/thread`;
    const writer = await store.acquireWriter(thread);
    const root = checkpoint(`${s}/root`, thread, null, 1);
    await store.append({ checkpoint: root, expectedHeadId: null, writer });
    const before = await stateOf(store, thread);

    const lone = ['\uD800', '\uDC00', 'a\uD83D', '\uDE00b', 'x\uDBFF\uDBFFy'];
    const forged = { threadId: thread, ownerToken: writer.ownerToken, fence: writer.fence };
    const sent = checkouts(pool);
    try {
      for (const bad of lone) {
        const id = `${s}/${bad}`;
        const calls: Array<[string, () => Promise<unknown>]> = [
          ['get', () => store.get(id)],
          ['list', () => store.list(id)],
          ['getHead', () => store.getHead(id)],
          ['acquireWriter', () => store.acquireWriter(id)],
          [
            'append id',
            () => store.append({ checkpoint: checkpoint(id, thread, root.id, 2), expectedHeadId: root.id, writer }),
          ],
          [
            'append threadId',
            () => store.append({ checkpoint: checkpoint(`${s}/ok`, id, root.id, 2), expectedHeadId: root.id, writer }),
          ],
          [
            'append parent',
            () => store.append({ checkpoint: checkpoint(`${s}/ok`, thread, id, 2), expectedHeadId: root.id, writer }),
          ],
          [
            'append expectedHeadId',
            () => store.append({ checkpoint: checkpoint(`${s}/ok`, thread, root.id, 2), expectedHeadId: id, writer }),
          ],
          [
            'append writer.threadId',
            () =>
              store.append({
                checkpoint: checkpoint(`${s}/ok`, thread, root.id, 2),
                expectedHeadId: root.id,
                writer: { ...forged, threadId: id },
              }),
          ],
          ['deleteHead threadId', () => store.deleteHead({ threadId: id, checkpointId: root.id, writer })],
          ['deleteHead checkpointId', () => store.deleteHead({ threadId: thread, checkpointId: id, writer })],
          [
            'fork source checkpoint',
            () =>
              store.forkFromCheckpoint({
                sourceThreadId: thread,
                sourceCheckpointId: id,
                destinationThreadId: `${s}/dest`,
                destinationCheckpointId: `${s}/fork`,
                createdAt: 3,
                writer,
              }),
          ],
          [
            'fork destination thread',
            () =>
              store.forkFromCheckpoint({
                sourceThreadId: thread,
                sourceCheckpointId: root.id,
                destinationThreadId: id,
                destinationCheckpointId: `${s}/fork`,
                createdAt: 3,
                writer,
              }),
          ],
        ];
        for (const [what, call] of calls) {
          const error = await rejectsWith(call(), 'SANDBOX_SNAPSHOT_INVALID_ID');
          assert.ok(error instanceof SandboxCheckpointInvalidIdError, what);
          assert.match(error.message, /well-formed Unicode/, what);
        }
      }
      assert.equal(sent.count, 0, 'no statement was sent');
    } finally {
      sent.stop();
    }
    assert.deepStrictEqual(await stateOf(store, thread), before);
    // Had it been sent, node-postgres would have written U+FFFD instead: that id does not exist.
    assert.equal(await store.get(`${s}/\uFFFD`), null);
    assert.equal(await store.getHead(`${s}/\uFFFD`), null);
  });

  test('a lone surrogate or U+0000 elsewhere in a checkpoint is INVALID_ENTRY; U+0000 in an id is INVALID_ID', async () => {
    const { store } = clocked();
    const s = scope('unstorable');
    const thread = `${s}/thread`;
    const writer = await store.acquireWriter(thread);
    const sent = checkouts(pool);
    try {
      const cases: Array<Partial<Parameters<typeof checkpoint>[4]>> = [
        { conversation: [{ role: 'user', content: 'half an emoji: \uD83D' }] },
        { conversation: [{ role: 'tool', content: 'binary\0output', toolCallId: 'x' }] },
        { label: 'x\uDC00' },
        { files: [dir('src\uD800')] },
      ];
      for (const extra of cases) {
        const error = await rejectsWith(
          store.append({ checkpoint: checkpoint(`${s}/c`, thread, null, 1, extra), expectedHeadId: null, writer }),
          'SANDBOX_SNAPSHOT_INVALID_ENTRY',
        );
        assert.ok(error instanceof SandboxCheckpointInvalidEntryError);
      }
      // An escaped backslash before "u0000" is text, not U+0000: not refused by the client.
      await rejectsWith(
        store.append({
          checkpoint: checkpoint(`${s}/c`, thread, null, 1, { label: '\\u0000' }),
          expectedHeadId: null,
          writer: { ...writer, fence: writer.fence + 1000 },
        }),
        'SANDBOX_SNAPSHOT_WRITER_LOST',
      );
      assert.equal(sent.count, 1, 'only the last one was sent');
      await rejectsWith(
        store.append({ checkpoint: checkpoint(`${s}/a\0b`, thread, null, 1), expectedHeadId: null, writer }),
        'SANDBOX_SNAPSHOT_INVALID_ID',
      );
      await rejectsWith(store.acquireWriter(`${s}/a\0b`), 'SANDBOX_SNAPSHOT_INVALID_ID');
      assert.equal(sent.count, 1);
    } finally {
      sent.stop();
    }
    const ok = checkpoint(`${s}/c`, thread, null, 1, { label: '\\u0000 and \\\\u0000' });
    await store.append({ checkpoint: ok, expectedHeadId: null, writer });
    assert.deepStrictEqual(await store.get(ok.id), ok);
  });
});

describe('checkpoint store: immutability', () => {
  test('a stored checkpoint changes with neither the appended object nor a returned one, and its id is taken for good', async () => {
    const { store } = clocked();
    const s = scope('immutable');
    const thread = `${s}/thread`;
    const writer = await store.acquireWriter(thread);
    const original = checkpoint(`${s}/c1`, thread, null, 1, { files: [file('a.txt', `${s}/a`)] });
    const appended = structuredClone(original);
    await store.append({ checkpoint: appended, expectedHeadId: null, writer });
    // The caller's object changes afterwards.
    (appended.conversation as Message[]).push({ role: 'user', content: 'added later' });
    (appended.files as unknown[]).length = 0;
    appended.label = 'renamed';
    // A returned copy changes.
    const read = (await store.get(original.id))!;
    (read.conversation as Message[])[0]!.content = 'tampered';
    (read as { threadId: string }).threadId = 'elsewhere';
    assert.deepStrictEqual(await store.get(original.id), original);
    assert.deepStrictEqual(await store.list(thread), [original]);

    const keys = [fileKey(`${s}/a`), fileKey(`${s}/b`)];
    const before = await stateOf(store, thread, keys);
    // The same id again, with other content: refused, in this thread and in another one.
    const changed = checkpoint(original.id, thread, original.id, 2, { files: [file('b.txt', `${s}/b`)] });
    await rejectsWith(
      store.append({ checkpoint: changed, expectedHeadId: original.id, writer }),
      'SANDBOX_SNAPSHOT_DUPLICATE_ID',
      'SBC03',
    );
    const otherThread = `${s}/other`;
    const otherWriter = await store.acquireWriter(otherThread);
    const error = await rejectsWith(
      store.append({
        checkpoint: { ...changed, threadId: otherThread, parentCheckpointId: null },
        expectedHeadId: null,
        writer: otherWriter,
      }),
      'SANDBOX_SNAPSHOT_DUPLICATE_ID',
    );
    assert.ok(error instanceof SandboxCheckpointDuplicateIdError);
    assert.deepStrictEqual(await stateOf(store, thread, keys), before);
    assert.deepStrictEqual(await stateOf(store, otherThread, keys), { ...before, head: null, checkpoints: [] });
  });
});

describe('checkpoint store: blob references', () => {
  test('each distinct key counts once per checkpoint that points to it; a key at zero disappears', async () => {
    const { store } = clocked();
    const s = scope('refs');
    const [a, b, c] = [fileKey(`${s}/a`), fileKey(`${s}/b`), fileKey(`${s}/c`)];
    const art = artifactKey(`${s}/art`);
    const keys = [a, b, c, art];
    const t1 = `${s}/t1`;
    const t2 = `${s}/t2`;
    const w1 = await store.acquireWriter(t1);
    const w2 = await store.acquireWriter(t2);
    const refs = async () => (await stateOf(store, t1, keys)).references;

    // Same content at two paths: one reference.
    const c1 = checkpoint(`${s}/c1`, t1, null, 1, {
      files: [file('x/a.txt', `${s}/a`), file('y/a-copy.txt', `${s}/a`), file('b.txt', `${s}/b`)],
    });
    await store.append({ checkpoint: c1, expectedHeadId: null, writer: w1 });
    assert.deepStrictEqual(await refs(), { [a]: 1, [b]: 1 });
    // A child that keeps a, drops b, adds an artifact.
    const c2 = checkpoint(`${s}/c2`, t1, c1.id, 2, {
      files: [file('x/a.txt', `${s}/a`)],
      artifacts: [artifact(`${s}/art`)],
    });
    await store.append({ checkpoint: c2, expectedHeadId: c1.id, writer: w1 });
    assert.deepStrictEqual(await refs(), { [a]: 2, [b]: 1, [art]: 1 });
    // Another thread shares a and c, and names the artifact's blob as a file? No: a file key and an artifact key differ.
    const d1 = checkpoint(`${s}/d1`, t2, null, 1, { files: [file('a', `${s}/a`), file('c', `${s}/c`)] });
    await store.append({ checkpoint: d1, expectedHeadId: null, writer: w2 });
    assert.deepStrictEqual(await refs(), { [a]: 3, [b]: 1, [c]: 1, [art]: 1 });

    await store.deleteHead({ threadId: t1, checkpointId: c2.id, writer: w1 });
    assert.deepStrictEqual(await refs(), { [a]: 2, [b]: 1, [c]: 1 });
    await store.deleteHead({ threadId: t1, checkpointId: c1.id, writer: w1 });
    assert.deepStrictEqual(await refs(), { [a]: 1, [c]: 1 });
    await store.deleteHead({ threadId: t2, checkpointId: d1.id, writer: w2 });
    assert.deepStrictEqual(await refs(), {});

    // The whole list is in UTF-8 byte order of the keys, with positive counts.
    await store.append({ checkpoint: c1, expectedHeadId: null, writer: w1 });
    const all = await store.listBlobReferences();
    assert.ok(all.length >= 2);
    for (let i = 1; i < all.length; i++) assert.ok(utf8Order(all[i - 1]!.key, all[i]!.key) < 0, 'ordered by key bytes');
    for (const r of all) assert.ok(Number.isInteger(r.references) && r.references > 0);
  });
});

describe('checkpoint store: the writer lease', () => {
  test('acquire: a fence, a token and an expiry; a second writer is refused until the lease has run out', async () => {
    const { store, clock } = clocked();
    const thread = `${scope('lease')}/thread`;
    const a = await store.acquireWriter(thread);
    assert.equal(a.threadId, thread);
    assert.match(a.ownerToken, /^[0-9a-f-]{36}$/);
    assert.ok(Number.isSafeInteger(a.fence) && a.fence > 0);
    assert.equal(a.expiresAt, T0 + LEASE);
    assert.equal(a.renewAfterMs, 20_000);

    clock.t = T0 + LEASE - 1;
    const conflict = await rejectsWith(store.acquireWriter(thread), 'SANDBOX_SNAPSHOT_WRITER_CONFLICT', 'SBC05');
    assert.ok(conflict instanceof SandboxCheckpointWriterConflictError);
    clock.t = T0 + LEASE; // expired at expiresAt itself
    const b = await store.acquireWriter(thread);
    assert.ok(b.fence > a.fence, 'the successor has a higher fence');
    assert.notEqual(b.ownerToken, a.ownerToken);
    // Other threads are independent.
    await store.acquireWriter(`${thread}/2`);
  });

  test('renew extends a current lease; a lease that expired or was taken over cannot renew', async () => {
    const { store, clock } = clocked();
    const s = scope('renew');
    const thread = `${s}/thread`;
    const a = await store.acquireWriter(thread);
    clock.t = T0 + 30_000;
    assert.deepStrictEqual(await a.renew(), { expiresAt: T0 + 30_000 + LEASE });
    assert.equal(a.expiresAt, T0 + 30_000 + LEASE);
    clock.t = T0 + LEASE + 1; // past the first expiry, within the renewed one
    await rejectsWith(store.acquireWriter(thread), 'SANDBOX_SNAPSHOT_WRITER_CONFLICT');
    await store.append({ checkpoint: checkpoint(`${s}/c1`, thread, null, 1), expectedHeadId: null, writer: a });

    clock.t = T0 + 30_000 + LEASE; // expired
    const lost = await rejectsWith(a.renew(), 'SANDBOX_SNAPSHOT_WRITER_LOST', 'SB001');
    assert.ok(lost instanceof SandboxCheckpointWriterLostError);
    assert.equal(a.expiresAt, T0 + 30_000 + LEASE, 'unchanged by a failed renew');
    const b = await store.acquireWriter(thread);
    await rejectsWith(a.renew(), 'SANDBOX_SNAPSHOT_WRITER_LOST');
    await b.renew();
  });

  test('release ends only the lease it was: a stale writer never releases its successor', async () => {
    const { store, clock } = clocked();
    const s = scope('release');
    const thread = `${s}/thread`;
    const a = await store.acquireWriter(thread);
    await a.release();
    const b = await store.acquireWriter(thread); // at once: a's release ended it
    assert.ok(b.fence > a.fence);
    await a.release(); // stale: a no-op
    await rejectsWith(store.acquireWriter(thread), 'SANDBOX_SNAPSHOT_WRITER_CONFLICT');
    await store.append({ checkpoint: checkpoint(`${s}/c1`, thread, null, 1), expectedHeadId: null, writer: b });
    await rejectsWith(a.renew(), 'SANDBOX_SNAPSHOT_WRITER_LOST');

    clock.t = T0 + LEASE; // b expired; c takes over; b's release must not end c
    const c = await store.acquireWriter(thread);
    await b.release();
    await rejectsWith(store.acquireWriter(thread), 'SANDBOX_SNAPSHOT_WRITER_CONFLICT');
    await store.append({
      checkpoint: checkpoint(`${s}/c2`, thread, `${s}/c1`, 2),
      expectedHeadId: `${s}/c1`,
      writer: c,
    });
    await c.release();
    await c.release(); // twice: fine
    const d = await store.acquireWriter(thread);
    assert.ok(d.fence > c.fence);
  });

  test('after expiry and takeover, every write of the old writer is refused and changes nothing', async () => {
    const { store, clock } = clocked();
    const s = scope('takeover');
    const thread = `${s}/thread`;
    const keys = [fileKey(`${s}/1`), fileKey(`${s}/2`), fileKey(`${s}/3`)];
    const a = await store.acquireWriter(thread);
    const c1 = checkpoint(`${s}/c1`, thread, null, 1, { files: [file('f', `${s}/1`)] });
    await store.append({ checkpoint: c1, expectedHeadId: null, writer: a });
    const c2 = checkpoint(`${s}/c2`, thread, c1.id, 2, { files: [file('f', `${s}/2`)] });
    await store.append({ checkpoint: c2, expectedHeadId: c1.id, writer: a });

    // Expired, not yet taken over: already refused.
    clock.t = T0 + LEASE;
    const before = await stateOf(store, thread, keys);
    const next = checkpoint(`${s}/c3`, thread, c2.id, 3, { files: [file('f', `${s}/3`)] });
    await rejectsWith(
      store.append({ checkpoint: next, expectedHeadId: c2.id, writer: a }),
      'SANDBOX_SNAPSHOT_WRITER_LOST',
    );
    const b = await store.acquireWriter(thread);
    for (const write of [
      () => store.append({ checkpoint: next, expectedHeadId: c2.id, writer: a }),
      () => store.deleteHead({ threadId: thread, checkpointId: c2.id, writer: a }),
      () =>
        store.forkFromCheckpoint({
          sourceThreadId: `${s}/elsewhere`,
          sourceCheckpointId: c1.id,
          destinationThreadId: thread,
          destinationCheckpointId: `${s}/fork`,
          createdAt: 4,
          writer: a,
        }),
      () => a.renew(),
    ]) {
      await rejectsWith(write(), 'SANDBOX_SNAPSHOT_WRITER_LOST', 'SB001');
      assert.deepStrictEqual(await stateOf(store, thread, keys), before);
    }
    // Writers that never were: a forged token, a wrong fence, another thread's writer, garbage.
    const other = await store.acquireWriter(`${s}/other`);
    for (const forged of [
      { threadId: thread, ownerToken: randomUUID(), fence: b.fence },
      { threadId: thread, ownerToken: b.ownerToken, fence: b.fence + 1 },
      { threadId: thread, ownerToken: b.ownerToken, fence: a.fence },
      other,
      { threadId: thread, ownerToken: 'not-a-uuid', fence: b.fence },
      { threadId: thread, ownerToken: b.ownerToken, fence: 1.5 },
    ]) {
      await rejectsWith(
        store.append({ checkpoint: next, expectedHeadId: c2.id, writer: forged }),
        'SANDBOX_SNAPSHOT_WRITER_LOST',
      );
      await rejectsWith(
        store.deleteHead({ threadId: thread, checkpointId: c2.id, writer: forged }),
        'SANDBOX_SNAPSHOT_WRITER_LOST',
      );
    }
    assert.deepStrictEqual(await stateOf(store, thread, keys), before);
    // The new writer continues from the same head.
    await store.append({ checkpoint: next, expectedHeadId: c2.id, writer: b });
    assert.equal(await store.getHead(thread), next.id);
  });

  test('with the database clock (no `now`): a short lease runs out in real time and is taken over', async () => {
    // An hour's lease while the test checks what a live writer does (however
    // slow the machine); then its last renewal leaves it a second, which runs
    // out in real time, and the takeover is tried until it gets the writer.
    const lease = 3_600_000;
    const store = createCheckpointStore(pool, { leaseDurationMs: lease });
    const s = scope('dbclock');
    const thread = `${s}/thread`;
    const dbClock = async (): Promise<number> => {
      const { rows } = await pool.query<{ ms: string }>(
        'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::text AS ms',
      );
      return Number(rows[0]!.ms);
    };
    const before = await dbClock();
    const a = await store.acquireWriter(thread);
    const after = await dbClock();
    assert.ok(a.expiresAt >= before + lease && a.expiresAt <= after + lease, `${a.expiresAt} vs ${before}..${after}`);
    await rejectsWith(store.acquireWriter(thread), 'SANDBOX_SNAPSHOT_WRITER_CONFLICT');
    await store.append({ checkpoint: checkpoint(`${s}/c1`, thread, null, 1), expectedHeadId: null, writer: a });
    await pool.query(
      'SELECT sandbox_store.checkpoint_renew_writer(thread_id => $1, owner_token => $2::uuid, fence => $3, lease_ms => 1000)',
      [thread, a.ownerToken, a.fence],
    );
    let b: Awaited<ReturnType<typeof store.acquireWriter>> | undefined;
    await eventually('the takeover once the shortened lease ran out', async () => {
      try {
        b = await store.acquireWriter(thread);
        return true;
      } catch (error) {
        if (error instanceof SandboxCheckpointError && error.code === 'SANDBOX_SNAPSHOT_WRITER_CONFLICT') return false;
        throw error;
      }
    });
    assert.ok(b);
    await rejectsWith(
      store.append({ checkpoint: checkpoint(`${s}/c2`, thread, `${s}/c1`, 2), expectedHeadId: `${s}/c1`, writer: a }),
      'SANDBOX_SNAPSHOT_WRITER_LOST',
    );
    await store.append({
      checkpoint: checkpoint(`${s}/c2`, thread, `${s}/c1`, 2),
      expectedHeadId: `${s}/c1`,
      writer: b,
    });
    assert.deepStrictEqual(
      (await store.list(thread)).map((c) => c.id),
      [`${s}/c1`, `${s}/c2`],
    );
  });
});

describe('checkpoint store: append', () => {
  test('checks in order: invalid id or entry, writer, duplicate id, stale head, parent mismatch; each changes nothing', async () => {
    const { store } = clocked();
    const s = scope('append-order');
    const thread = `${s}/thread`;
    const keys = [fileKey(`${s}/f`)];
    const writer = await store.acquireWriter(thread);
    const c1 = checkpoint(`${s}/c1`, thread, null, 1);
    await store.append({ checkpoint: c1, expectedHeadId: null, writer });
    const c2 = checkpoint(`${s}/c2`, thread, c1.id, 2);
    await store.append({ checkpoint: c2, expectedHeadId: c1.id, writer });
    const before = await stateOf(store, thread, keys);
    const lost = { ...writer, fence: writer.fence + 1 };
    const fresh = (extra: Partial<Parameters<typeof checkpoint>[4]> = {}, parent: string | null = c2.id) =>
      checkpoint(`${s}/c3`, thread, parent, 3, { files: [file('f', `${s}/f`)], ...extra });

    const cases: Array<{
      what: string;
      run: () => Promise<unknown>;
      code: string;
      sqlstate: string;
      cls: unknown;
      local?: boolean;
    }> = [
      {
        what: 'empty id, with a lost writer',
        run: () => store.append({ checkpoint: { ...fresh(), id: '' }, expectedHeadId: c2.id, writer: lost }),
        code: 'SANDBOX_SNAPSHOT_INVALID_ID',
        sqlstate: 'SBC07',
        cls: SandboxCheckpointInvalidIdError,
        local: true, // refused by the client, as the database would
      },
      {
        what: 'an id over 1024 bytes, with a lost writer',
        run: () =>
          store.append({ checkpoint: { ...fresh(), id: 'é'.repeat(513) }, expectedHeadId: c2.id, writer: lost }),
        code: 'SANDBOX_SNAPSHOT_INVALID_ID',
        sqlstate: 'SBC07',
        cls: SandboxCheckpointInvalidIdError,
      },
      ...[
        { files: [dir('/abs')] },
        { files: [dir('a/../b')] },
        { files: [dir('a//b')] },
        { files: [dir('a'), dir('a')] },
        { files: [file('a', `${s}/f`), dir('a/b')] },
        { files: [{ path: 'a', kind: 'file', blobKey: 'sandbox-files/sha256/XYZ', size: 1 }] },
        { files: [{ path: 'a', kind: 'link' }] },
        { files: [{ path: 'a', kind: 'dir', size: 0 }] },
        { files: [dir('C:/x')] },
        { artifacts: [{ ...artifact(`${s}/x`), name: '' }] },
        { artifacts: [{ ...artifact(`${s}/x`), blobKey: 'elsewhere/x' }] },
        { reason: 'whim' },
        { createdAt: 1.5 },
      ].map((extra) => ({
        what: `invalid entry ${JSON.stringify(extra)}, with a lost writer`,
        run: () => store.append({ checkpoint: fresh(extra as never), expectedHeadId: c2.id, writer: lost }),
        code: 'SANDBOX_SNAPSHOT_INVALID_ENTRY',
        sqlstate: 'SBC08',
        cls: SandboxCheckpointInvalidEntryError,
      })),
      {
        what: 'a lost writer, with a duplicate id',
        run: () => store.append({ checkpoint: { ...fresh(), id: c1.id }, expectedHeadId: c2.id, writer: lost }),
        code: 'SANDBOX_SNAPSHOT_WRITER_LOST',
        sqlstate: 'SB001',
        cls: SandboxCheckpointWriterLostError,
      },
      {
        what: 'a duplicate id, with a stale head',
        run: () => store.append({ checkpoint: { ...fresh({}, c1.id), id: c1.id }, expectedHeadId: c1.id, writer }),
        code: 'SANDBOX_SNAPSHOT_DUPLICATE_ID',
        sqlstate: 'SBC03',
        cls: SandboxCheckpointDuplicateIdError,
      },
      {
        what: 'a stale head, with a parent that does not match it',
        run: () => store.append({ checkpoint: fresh({}, c2.id), expectedHeadId: c1.id, writer }),
        code: 'SANDBOX_SNAPSHOT_STALE_HEAD',
        sqlstate: 'SBC01',
        cls: SandboxCheckpointConflictError,
      },
      {
        what: 'a stale head: null expected on a thread that has one',
        run: () => store.append({ checkpoint: fresh({}, null), expectedHeadId: null, writer }),
        code: 'SANDBOX_SNAPSHOT_STALE_HEAD',
        sqlstate: 'SBC01',
        cls: SandboxCheckpointConflictError,
      },
      {
        what: 'a parent that is not the expected head',
        run: () => store.append({ checkpoint: fresh({}, c1.id), expectedHeadId: c2.id, writer }),
        code: 'SANDBOX_SNAPSHOT_PARENT_MISMATCH',
        sqlstate: 'SBC02',
        cls: SandboxCheckpointParentMismatchError,
      },
      {
        what: 'a root (no parent) on a thread that has a head',
        run: () => store.append({ checkpoint: fresh({}, null), expectedHeadId: c2.id, writer }),
        code: 'SANDBOX_SNAPSHOT_PARENT_MISMATCH',
        sqlstate: 'SBC02',
        cls: SandboxCheckpointParentMismatchError,
      },
    ];
    for (const { what, run, code, sqlstate, cls, local } of cases) {
      const error = await rejectsWith(run(), code as never, sqlstate);
      assert.ok(error instanceof (cls as typeof SandboxCheckpointError), what);
      assert.equal(error.cause !== undefined, local !== true, `${what}: the driver's error is the cause`);
      assert.deepStrictEqual(await stateOf(store, thread, keys), before, `${what} changed nothing`);
    }
    assert.deepStrictEqual(await store.append({ checkpoint: fresh(), expectedHeadId: c2.id, writer }), {
      headId: `${s}/c3`,
    });
  });
});

describe('checkpoint store: deleteHead', () => {
  test('only the head; the head moves to its parent, then to none; a deleted id can be appended again', async () => {
    const { store } = clocked();
    const s = scope('delete');
    const thread = `${s}/thread`;
    const writer = await store.acquireWriter(thread);
    await rejectsWith(
      store.deleteHead({ threadId: thread, checkpointId: `${s}/c1`, writer }),
      'SANDBOX_SNAPSHOT_NOT_HEAD',
      'SBC04',
    );
    const c = [1, 2, 3].map((n) => checkpoint(`${s}/c${n}`, thread, n === 1 ? null : `${s}/c${n - 1}`, n));
    let head: string | null = null;
    for (const x of c) head = (await store.append({ checkpoint: x, expectedHeadId: head, writer })).headId;

    for (const notHead of [c[0]!, c[1]!]) {
      const error = await rejectsWith(
        store.deleteHead({ threadId: thread, checkpointId: notHead.id, writer }),
        'SANDBOX_SNAPSHOT_NOT_HEAD',
      );
      assert.ok(error instanceof SandboxCheckpointNotHeadError);
    }
    // The head of another thread is not this thread's head.
    const other = `${s}/other`;
    const w2 = await store.acquireWriter(other);
    await store.append({ checkpoint: checkpoint(`${s}/o1`, other, null, 1), expectedHeadId: null, writer: w2 });
    await rejectsWith(
      store.deleteHead({ threadId: thread, checkpointId: `${s}/o1`, writer }),
      'SANDBOX_SNAPSHOT_NOT_HEAD',
    );
    assert.deepStrictEqual(await store.list(thread), c);

    await store.deleteHead({ threadId: thread, checkpointId: c[2]!.id, writer });
    assert.equal(await store.getHead(thread), c[1]!.id);
    assert.equal(await store.get(c[2]!.id), null);
    await store.deleteHead({ threadId: thread, checkpointId: c[1]!.id, writer });
    assert.equal(await store.getHead(thread), c[0]!.id);
    await store.deleteHead({ threadId: thread, checkpointId: c[0]!.id, writer });
    assert.equal(await store.getHead(thread), null);
    assert.deepStrictEqual(await store.list(thread), []);
    await rejectsWith(
      store.deleteHead({ threadId: thread, checkpointId: c[0]!.id, writer }),
      'SANDBOX_SNAPSHOT_NOT_HEAD',
    );
    // Empty again: a new root, even with a deleted id.
    await store.append({ checkpoint: c[0]!, expectedHeadId: null, writer });
    assert.equal(await store.getHead(thread), c[0]!.id);
    assert.deepStrictEqual(await store.list(other), [checkpoint(`${s}/o1`, other, null, 1)]);
  });
});

describe('checkpoint store: fork', () => {
  async function source(store: PgSandboxCheckpointStore<Message>, s: string) {
    const thread = `${s}/source`;
    const writer = await store.acquireWriter(thread);
    const root = checkpoint(`${s}/root`, thread, null, 10, {
      reason: 'named',
      label: 'source label',
      sourceRunId: 'run-1',
      files: [dir('src'), file('src/a.ts', `${s}/a`, 5)],
      conversation: [{ role: 'user', content: 'checkpoint conversation 😀' }],
      artifacts: [artifact(`${s}/art`, 10)],
    });
    await store.append({ checkpoint: root, expectedHeadId: null, writer });
    const newer = checkpoint(`${s}/newer`, thread, root.id, 11, { files: [file('src/a.ts', `${s}/b`, 6)] });
    await store.append({ checkpoint: newer, expectedHeadId: root.id, writer });
    return { thread, writer, root, newer };
  }

  test('copies a historical checkpoint as the fork-root of an empty thread, with references', async () => {
    const { store } = clocked();
    const s = scope('fork');
    const src = await source(store, s);
    const keys = [fileKey(`${s}/a`), fileKey(`${s}/b`), artifactKey(`${s}/art`)];
    const refsBefore = (await stateOf(store, src.thread, keys)).references;
    const destination = `${s}/destination`;
    const writer = await store.acquireWriter(destination);
    const { checkpoint: forked } = await store.forkFromCheckpoint({
      sourceThreadId: src.thread,
      sourceCheckpointId: src.root.id,
      destinationThreadId: destination,
      destinationCheckpointId: `${s}/fork-root`,
      createdAt: 20,
      writer,
    });
    const expected = {
      id: `${s}/fork-root`,
      threadId: destination,
      parentCheckpointId: null,
      createdAt: 20,
      reason: 'fork-root' as const,
      files: src.root.files,
      conversation: src.root.conversation,
      artifacts: src.root.artifacts,
    };
    assert.deepStrictEqual(forked, expected);
    assert.deepStrictEqual(await store.get(expected.id), expected);
    assert.deepStrictEqual(await store.list(destination), [expected]);
    assert.equal(await store.getHead(destination), expected.id);
    assert.equal(await store.getHead(src.thread), src.newer.id, 'the source is unchanged');
    assert.deepStrictEqual((await stateOf(store, src.thread, keys)).references, {
      ...refsBefore,
      [fileKey(`${s}/a`)]: refsBefore[fileKey(`${s}/a`)]! + 1,
      [artifactKey(`${s}/art`)]: refsBefore[artifactKey(`${s}/art`)]! + 1,
    });
    // The fork continues like any thread.
    await store.append({
      checkpoint: checkpoint(`${s}/after-fork`, destination, expected.id, 21),
      expectedHeadId: expected.id,
      writer,
    });
  });

  test('refusals change neither the destination nor the references', async () => {
    const { store, clock } = clocked();
    const s = scope('fork-refused');
    const src = await source(store, s);
    const keys = [fileKey(`${s}/a`), fileKey(`${s}/b`), artifactKey(`${s}/art`)];
    const destination = `${s}/destination`;
    const writer = await store.acquireWriter(destination);
    const input = {
      sourceThreadId: src.thread,
      sourceCheckpointId: src.root.id,
      destinationThreadId: destination,
      destinationCheckpointId: `${s}/fork-root`,
      createdAt: 20,
      writer,
    };
    const stranger = `${s}/stranger`;
    const strangerWriter = await store.acquireWriter(stranger);
    await store.append({
      checkpoint: checkpoint(`${s}/strange`, stranger, null, 1),
      expectedHeadId: null,
      writer: strangerWriter,
    });

    const before = await stateOf(store, destination, keys);
    const refusals: Array<[string, () => Promise<unknown>, string, string?]> = [
      [
        'missing source',
        () => store.forkFromCheckpoint({ ...input, sourceCheckpointId: `${s}/missing` }),
        'SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND',
        'SBC09',
      ],
      [
        'source of another thread',
        () => store.forkFromCheckpoint({ ...input, sourceThreadId: stranger }),
        'SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH',
        'SBC11',
      ],
      [
        'source thread = destination thread',
        () => store.forkFromCheckpoint({ ...input, destinationThreadId: src.thread, writer: src.writer }),
        'SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH',
      ],
      [
        'destination id taken by another thread',
        () => store.forkFromCheckpoint({ ...input, destinationCheckpointId: `${s}/strange` }),
        'SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY',
        'SBC03',
      ],
      [
        'writer of another thread',
        () => store.forkFromCheckpoint({ ...input, writer: strangerWriter }),
        'SANDBOX_SNAPSHOT_WRITER_LOST',
      ],
      [
        'forged writer',
        () => store.forkFromCheckpoint({ ...input, writer: { ...writer, ownerToken: randomUUID() } }),
        'SANDBOX_SNAPSHOT_WRITER_LOST',
      ],
      [
        'createdAt not whole',
        () => store.forkFromCheckpoint({ ...input, createdAt: 1.5 }),
        'SANDBOX_SNAPSHOT_INVALID_ENTRY',
      ],
      [
        'empty destination id',
        () => store.forkFromCheckpoint({ ...input, destinationCheckpointId: '' }),
        'SANDBOX_SNAPSHOT_INVALID_ID',
      ],
    ];
    for (const [what, call, code, sqlstate] of refusals) {
      await rejectsWith(call(), code as never, sqlstate);
      assert.deepStrictEqual(await stateOf(store, destination, keys), before, what);
    }
    // A destination with checkpoints.
    await store.append({ checkpoint: checkpoint(`${s}/d1`, destination, null, 1), expectedHeadId: null, writer });
    const nonEmpty = await stateOf(store, destination, keys);
    const error = await rejectsWith(
      store.forkFromCheckpoint(input),
      'SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY',
      'SBC10',
    );
    assert.ok(error instanceof SandboxCheckpointError);
    assert.deepStrictEqual(await stateOf(store, destination, keys), nonEmpty);
    // A stale destination writer.
    clock.t = T0 + LEASE;
    const empty = `${s}/empty`;
    const stale = await store.acquireWriter(empty);
    clock.t = T0 + 2 * LEASE;
    await store.acquireWriter(empty);
    await rejectsWith(
      store.forkFromCheckpoint({ ...input, destinationThreadId: empty, writer: stale }),
      'SANDBOX_SNAPSHOT_WRITER_LOST',
    );
    assert.deepStrictEqual(await stateOf(store, empty, keys), { ...before, head: null, checkpoints: [] });
  });
});

describe('checkpoint store: options and errors', () => {
  test('renewAfterMs must be below leaseDurationMs; both must be positive', () => {
    for (const options of [
      { leaseDurationMs: 1000, renewAfterMs: 1000 },
      { leaseDurationMs: 1000, renewAfterMs: 5000 },
      { renewAfterMs: 120_000 },
      { leaseDurationMs: 45_000 },
      { leaseDurationMs: 0 },
      { leaseDurationMs: -5 },
      { leaseDurationMs: 1000.5 },
      { renewAfterMs: 0 },
      { renewAfterMs: Number.NaN },
      { now: 5 as unknown as () => number },
    ]) {
      assert.throws(
        () => createCheckpointStore(pool, options),
        (error: unknown) => error instanceof InvalidArgumentError && error.sqlstate === '22023',
        JSON.stringify(options),
      );
    }
    assert.throws(
      () => createCheckpointStore(pool, { leaseDurationMs: 1000, renewAfterMs: 1000 }),
      /below leaseDurationMs/,
    );
    createCheckpointStore(pool, { leaseDurationMs: 1000, renewAfterMs: 999 });
  });

  test('defaults: a 120 s lease (by the database clock), renew after 45 s', async () => {
    assert.equal(DEFAULT_CHECKPOINT_LEASE_MS, 120_000);
    assert.equal(DEFAULT_CHECKPOINT_RENEW_AFTER_MS, 45_000);
    const store = createCheckpointStore(pool);
    const { rows } = await pool.query<{ ms: string }>(
      'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::text AS ms',
    );
    const writer: SandboxCheckpointWriterLease = await store.acquireWriter(`${scope('defaults')}/thread`);
    const dbNow = Number(rows[0]!.ms);
    assert.equal(writer.renewAfterMs, 45_000);
    assert.ok(writer.expiresAt >= dbNow + 120_000 && writer.expiresAt < dbNow + 125_000);
    await writer.release();
  });

  test("the `now` clock is what the database compares with: a clock far from the server's still works", async () => {
    // Year 2100 and 1990: the lease is computed from the given time, not the server's.
    for (const t of [Date.UTC(2100, 0, 1), Date.UTC(1990, 5, 1)]) {
      const { store, clock } = clocked(t);
      const thread = `${scope('clock')}/thread`;
      const a = await store.acquireWriter(thread);
      assert.equal(a.expiresAt, t + LEASE);
      clock.t = t + LEASE - 1;
      await rejectsWith(store.acquireWriter(thread), 'SANDBOX_SNAPSHOT_WRITER_CONFLICT');
      clock.t = t + LEASE;
      await store.acquireWriter(thread);
    }
  });

  test('database errors other than the checkpoint ones stay what they are', async () => {
    const store = createCheckpointStore(pool);
    // A thread id over 1000 bytes is the database's SBC07.
    const error = await rejectsWith(store.acquireWriter('x'.repeat(1001)), 'SANDBOX_SNAPSHOT_INVALID_ID', 'SBC07');
    assert.match(error.message, /1000 bytes/);
    assert.ok(error instanceof SandboxCheckpointError);
    assert.equal(error.name, 'SandboxCheckpointInvalidIdError');
  });
});

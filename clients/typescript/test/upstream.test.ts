/**
 * TanStack AI's own tests of its stores, ensure and run claim (TanStack/ai
 * main: the instance-store conformance testkit, the InMemoryLockStore tests
 * of packages/ai and packages/ai-sandbox, PR #988's ensure tests, the run
 * claim tests), written again for node:test and run against this package's
 * stores on a real PostgreSQL: every behaviour they check, in lock mode and
 * in lease mode, with and without `tanstackSandboxKey`.  The ensure and
 * run-claim algorithms are TanStack AI's, re-stated in ./upstream.ts.
 * Order-sensitive tests repeat REPEAT times.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';

import {
  createInstanceStore,
  createLockStore,
  tanstackSandboxKey,
  type LockMode,
  type LockStore,
  type SandboxInstanceRecord,
  type SandboxInstanceStore,
} from '../src/index.js';
import { keyLocks, newPool, sleep, started, within, type Started } from './helpers.js';
import {
  FakeProvider,
  RunStore,
  destroy,
  ensure,
  ensureExisting,
  withRunClaim,
  type EnsureContext,
} from './upstream.js';

const REPEAT = Number(process.env['SANDBOX_STORE_TS_REPEAT'] ?? 20);

let pool: pg.Pool;
before(() => {
  pool = newPool(8);
});
after(async () => {
  await pool.end();
});

/** TanStack AI's defineLock: an identity that types an inline LockStore. */
function defineLock(lock: LockStore): LockStore {
  return lock;
}

// ---------------------------------------------------------------------------
// The instance-store conformance testkit (7 cases) and the store test.
describe('SandboxInstanceStore conformance: PostgreSQL', () => {
  let store: SandboxInstanceStore;
  let prefix: string;
  before(() => {
    store = createInstanceStore(pool);
  });
  // Every case gets keys of its own (the testkit makes a fresh store per case).
  const k = (name: string): string => `${prefix}${name}`;
  const makeRecord = (overrides: Partial<SandboxInstanceRecord> = {}): SandboxInstanceRecord => ({
    key: k('thread-1'),
    provider: 'fake',
    providerSandboxId: 'sb-1',
    threadId: 'thread-1',
    updatedAt: 1,
    ...overrides,
  });
  const fresh = (): void => {
    prefix = `conformance/${randomUUID()}/`;
  };

  test('returns null for a missing key', async () => {
    fresh();
    assert.equal(await store.get(k('absent')), null);
  });

  test('round-trips an upserted record with all fields', async () => {
    fresh();
    const record = makeRecord({ latestSnapshotId: 'snap-1', latestRunId: 'run-1' });
    await store.upsert(record);
    assert.deepStrictEqual(await store.get(k('thread-1')), record);
  });

  test('omits absent optional fields on read', async () => {
    fresh();
    const record = makeRecord();
    await store.upsert(record);
    const loaded = await store.get(k('thread-1'));
    assert.deepStrictEqual(loaded, record);
    assert.equal('latestSnapshotId' in (loaded ?? {}), false);
    assert.equal('latestRunId' in (loaded ?? {}), false);
  });

  test('overwrites an existing record on re-upsert', async () => {
    fresh();
    await store.upsert(makeRecord({ latestSnapshotId: 'snap-1' }));
    await store.upsert(makeRecord({ providerSandboxId: 'sb-2', updatedAt: 2 }));
    const loaded = await store.get(k('thread-1'));
    assert.equal(loaded?.providerSandboxId, 'sb-2');
    assert.equal(loaded?.updatedAt, 2);
    assert.equal('latestSnapshotId' in (loaded ?? {}), false);
  });

  test('isolates records by key', async () => {
    fresh();
    await store.upsert(makeRecord({ key: k('a'), threadId: 'a' }));
    await store.upsert(makeRecord({ key: k('b'), threadId: 'b', providerSandboxId: 'sb-b' }));
    assert.equal((await store.get(k('a')))?.providerSandboxId, 'sb-1');
    assert.equal((await store.get(k('b')))?.providerSandboxId, 'sb-b');
  });

  test('deletes a record', async () => {
    fresh();
    await store.upsert(makeRecord());
    await store.delete(k('thread-1'));
    assert.equal(await store.get(k('thread-1')), null);
  });

  test('delete of a missing key is a no-op', async () => {
    fresh();
    assert.equal(await store.delete(k('absent')), undefined);
  });

  test('round-trips upsert/get/delete', async () => {
    fresh();
    assert.equal(await store.get(k('k')), null);
    await store.upsert({ key: k('k'), provider: 'docker', providerSandboxId: 'sbx-1', threadId: 't', updatedAt: 1 });
    assert.equal((await store.get(k('k')))?.providerSandboxId, 'sbx-1');
    await store.delete(k('k'));
    assert.equal(await store.get(k('k')), null);
  });
});

// ---------------------------------------------------------------------------
// The lock store, ensure and the run claim, in every configuration.
const configs: Array<{ mode: LockMode; tanstack: boolean }> = [
  { mode: 'lock', tanstack: false },
  { mode: 'lock', tanstack: true },
  { mode: 'lease', tanstack: false },
  { mode: 'lease', tanstack: true },
];

for (const { mode, tanstack } of configs) {
  const name = `${mode} mode${tanstack ? ', lockKey tanstackSandboxKey' : ''}`;
  const makeLocks = (): LockStore =>
    createLockStore(pool, { mode, ...(tanstack ? { lockKey: tanstackSandboxKey } : {}) });
  // A key as TanStack AI locks it: sandbox:<instance key> (mapped by tanstackSandboxKey) or any other.
  const lockName = (what: string): string =>
    tanstack ? `sandbox:upstream/${what}/${randomUUID()}` : `upstream/${what}/${randomUUID()}`;

  describe(`InMemoryLockStore tests: ${name}`, () => {
    test(`serializes concurrent withLock calls on the same key: [1, 2, 3] (x${REPEAT})`, async () => {
      const locks = makeLocks();
      for (let i = 0; i < REPEAT; i++) {
        const key = lockName('order');
        const order: number[] = [];
        await Promise.all([
          locks.withLock(key, async () => {
            order.push(1);
            await Promise.resolve();
            order.push(2);
          }),
          locks.withLock(key, async () => {
            order.push(3);
          }),
        ]);
        assert.deepStrictEqual(order, [1, 2, 3], `repetition ${i}`);
      }
    });

    test(`serializes same-key critical sections: a:start, a:end, b:start, b:end (x${REPEAT})`, async () => {
      const locks = makeLocks();
      for (let i = 0; i < REPEAT; i++) {
        const key = lockName('slow');
        const events: string[] = [];
        const slow = (tag: string, ms: number): Promise<void> =>
          locks.withLock(key, async () => {
            events.push(`${tag}:start`);
            await sleep(ms);
            events.push(`${tag}:end`);
          });
        await Promise.all([slow('a', 20), slow('b', 1)]);
        assert.deepStrictEqual(events, ['a:start', 'a:end', 'b:start', 'b:end'], `repetition ${i}`);
      }
    });

    test(`first come, first served for eight callers of one key (x${REPEAT})`, async () => {
      const locks = makeLocks();
      for (let i = 0; i < REPEAT; i++) {
        const key = lockName('fifo');
        const order: number[] = [];
        await Promise.all(
          Array.from({ length: 8 }, (_, n) =>
            locks.withLock(key, async () => {
              order.push(n);
              await sleep(n % 2);
            }),
          ),
        );
        assert.deepStrictEqual(order, [0, 1, 2, 3, 4, 5, 6, 7], `repetition ${i}`);
      }
    });

    test('releases the lock when the critical section throws', async () => {
      const locks = makeLocks();
      const key = lockName('throw-key');
      await assert.rejects(
        locks.withLock(key, () => Promise.reject(new Error('boom'))),
        /boom/,
      );
      assert.equal(await locks.withLock(key, () => Promise.resolve('recovered')), 'recovered');
    });

    test('a rejection in one holder does not poison the lock', async () => {
      const locks = makeLocks();
      const key = lockName('poison');
      const first = locks.withLock(key, () => Promise.reject(new Error('boom')));
      const second = locks.withLock(key, () => Promise.resolve('ok'));
      await assert.rejects(first, /boom/);
      assert.equal(await second, 'ok');
    });

    test('returns the critical section value', async () => {
      assert.equal(await makeLocks().withLock(lockName('v'), () => Promise.resolve(42)), 42);
    });

    test('defineLock types and returns a LockStore implementation inline', async () => {
      const base = makeLocks();
      const locks = defineLock({ withLock: (key, fn) => base.withLock(key, fn) });
      assert.equal(await locks.withLock(lockName('k'), async () => 'done'), 'done');
    });

    // Upstream asserts ['b', 'a'] (a sleeps 20 ms, b does not), an order that
    // only timing decides.  What it means: different keys do not serialize.
    // So each section, once in, stays in until the other key's section has
    // started too; that ends only if neither key waits for the other.
    test(`runs different keys concurrently: both sections in at once (x${REPEAT})`, async () => {
      const locks = makeLocks();
      for (let i = 0; i < REPEAT; i++) {
        const events: string[] = [];
        const a = started();
        const b = started();
        const section = (tag: string, mine: Started, other: Started) => async (): Promise<void> => {
          events.push(`${tag}:start`);
          mine.mark();
          await other.promise;
          events.push(`${tag}:end`);
        };
        try {
          await within(
            30_000,
            Promise.all([
              locks.withLock(lockName('a'), section('a', a, b)),
              locks.withLock(lockName('b'), section('b', b, a)),
            ]),
            `repetition ${i}: the sections of keys a and b, each waiting for the other to start`,
          );
        } finally {
          a.mark();
          b.mark();
        }
        assert.deepStrictEqual(events.slice(0, 2).sort(), ['a:start', 'b:start'], `repetition ${i}: ${events}`);
      }
    });
  });

  describe(`run claim tests: ${name}`, () => {
    test(`serializes two claims racing on one runId and hands out monotonic epochs (x${REPEAT})`, async () => {
      const locks = makeLocks();
      for (let i = 0; i < REPEAT; i++) {
        const runs = new RunStore();
        const runId = `claim-${randomUUID()}`;
        runs.create(runId);
        let inside = 0;
        let maxConcurrent = 0;
        const body = async (claim: { epoch: number }): Promise<number> => {
          inside++;
          maxConcurrent = Math.max(maxConcurrent, inside);
          await sleep(2);
          inside--;
          return claim.epoch;
        };
        const epochs = await Promise.all([
          withRunClaim(locks, runs, runId, body),
          withRunClaim(locks, runs, runId, body),
        ]);
        assert.equal(maxConcurrent, 1);
        assert.deepStrictEqual([...epochs].sort(), [1, 2]);
        assert.equal(runs.get(runId)?.driverEpoch, 2);
      }
    });

    test('runs the whole body inside the lock, and releases it even when the body throws', async () => {
      const locks = makeLocks();
      const runs = new RunStore();
      const runId = `claim-${randomUUID()}`;
      runs.create(runId);
      await assert.rejects(
        withRunClaim(locks, runs, runId, async () => {
          throw new Error('drive failed');
        }),
        /drive failed/,
      );
      assert.equal(await withRunClaim(locks, runs, runId, async () => 'ok'), 'ok');
    });

    test('the claim signal stays quiet when a later claim supersedes the first', async () => {
      const locks = makeLocks();
      const runs = new RunStore();
      const runId = `claim-${randomUUID()}`;
      runs.create(runId);
      const first = await withRunClaim(locks, runs, runId, async (claim) => claim.signal);
      await withRunClaim(locks, runs, runId, async () => undefined);
      assert.equal(first.aborted, false);
    });
  });

  describe(`ensure tests: ${name}`, () => {
    const context = (provider: FakeProvider, extra: Partial<EnsureContext> = {}): EnsureContext => ({
      key: `upstream-ensure/${randomUUID()}`,
      threadId: 'thread-1',
      runId: 'run-1',
      store: createInstanceStore(pool),
      locks: makeLocks(),
      provider,
      ...extra,
    });

    test('creates and records on first run, the compound key as the provider id', async () => {
      const provider = new FakeProvider();
      const ctx = context(provider);
      const { handle, outcome } = await ensure(ctx);
      assert.equal(outcome, 'created');
      assert.equal(provider.calls.create, 1);
      assert.equal(provider.calls.resume, 0);
      assert.equal(handle.id, ctx.key);
      const record = await ctx.store.get(ctx.key);
      assert.equal(record?.providerSandboxId, handle.id);
      assert.equal(record?.threadId, 'thread-1');
      assert.match(record?.latestSnapshotId ?? '', /^snap-/);
    });

    test('resumes the same provider sandbox on a second run, stamped with it', async () => {
      const provider = new FakeProvider();
      const ctx = context(provider);
      const first = await ensure(ctx);
      const second = await ensure({ ...ctx, runId: 'run-2' });
      assert.equal(provider.calls.create, 1);
      assert.equal(provider.calls.resume, 1);
      assert.equal(second.handle.id, first.handle.id);
      assert.equal((await ctx.store.get(ctx.key))?.latestRunId, 'run-2');
    });

    test('falls back to snapshot restore when resume returns null', async () => {
      const provider = new FakeProvider();
      const ctx = context(provider, { snapshot: 'after-setup' });
      await ensure(ctx);
      provider.resumeReturnsNull = true;
      const second = await ensure({ ...ctx, runId: 'run-2' });
      assert.equal(provider.calls.resume, 1);
      assert.equal(provider.calls.restoreSnapshot, 1);
      assert.match(second.handle.id, /restored/);
      assert.equal((await ctx.store.get(ctx.key))?.providerSandboxId, second.handle.id);
    });

    test('re-creates under the same identity when the provider has no snapshots', async () => {
      const provider = new FakeProvider();
      provider.snapshots = false;
      provider.resumeReturnsNull = true;
      const ctx = context(provider);
      await ensure(ctx);
      await ensure({ ...ctx, runId: 'run-2' });
      assert.equal(provider.calls.create, 2);
      assert.equal(provider.calls.restoreSnapshot, 0);
      assert.equal('latestSnapshotId' in ((await ctx.store.get(ctx.key)) ?? {}), false);
    });

    test('reuse none: each run has a key of its own (no resume)', async () => {
      const provider = new FakeProvider();
      const ctx = context(provider);
      await ensure({ ...ctx, key: `${ctx.key}:run-1` });
      await ensure({ ...ctx, key: `${ctx.key}:run-2`, runId: 'run-2' });
      assert.equal(provider.calls.create, 2);
      assert.equal(provider.calls.resume, 0);
    });

    test('destroy removes the record and destroys the provider sandbox', async () => {
      const provider = new FakeProvider();
      const ctx = context(provider);
      await ensure(ctx);
      await destroy(ctx);
      assert.equal(provider.calls.destroy, 1);
      assert.equal(await ctx.store.get(ctx.key), null);
    });

    test(`serializes concurrent ensures for the same key: one create (x${REPEAT})`, async () => {
      for (let i = 0; i < REPEAT; i++) {
        const provider = new FakeProvider();
        const ctx = context(provider);
        const [a, b] = await Promise.all([ensure(ctx), ensure({ ...ctx, runId: 'run-2' })]);
        assert.equal(provider.calls.create, 1, `repetition ${i}`);
        assert.equal(provider.calls.resume, 1, `repetition ${i}`);
        assert.equal(a.handle.id, b.handle.id);
      }
    });

    test('re-creates instead of resuming when the max age has elapsed', async () => {
      const provider = new FakeProvider();
      const ctx = context(provider, { maxAgeMs: 3_600_000 });
      await ensure(ctx);
      assert.equal(provider.calls.create, 1);
      const record = await ctx.store.get(ctx.key);
      assert.ok(record !== null);
      await ctx.store.upsert({ ...record, updatedAt: Date.now() - 2 * 3_600_000 });
      await ensure({ ...ctx, runId: 'run-2' });
      assert.equal(provider.calls.create, 2);
      assert.equal(provider.calls.resume, 0);
    });

    test('a resume that throws fails the ensure, stamps nothing, and frees the key', async () => {
      const provider = new FakeProvider();
      const ctx = context(provider);
      await ensure(ctx);
      const before = await ctx.store.get(ctx.key);
      provider.resumeThrows = new Error('provider down');
      await assert.rejects(ensure({ ...ctx, runId: 'run-2' }), /provider down/);
      assert.deepStrictEqual(await ctx.store.get(ctx.key), before);
      provider.resumeThrows = undefined;
      await ensure({ ...ctx, runId: 'run-3' });
      assert.equal((await ctx.store.get(ctx.key))?.latestRunId, 'run-3');
    });

    test('ensureExisting serializes resume through the lock store', async () => {
      const provider = new FakeProvider();
      const ctx = context(provider);
      await ensure(ctx);
      provider.calls.resume = 0;
      const parked = started();
      let open!: () => void;
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      provider.onResume = () => {
        parked.mark();
        return gate;
      };
      const first = ensureExisting(ctx);
      const second = ensureExisting({ ...ctx, runId: 'run-2' });
      // The first resume is parked (however long it took to get there); the
      // second caller, queued for the key, must not resume meanwhile.  The
      // pause gives a wrong second resume the time to show.
      await within(30_000, parked.promise, 'the first resume');
      await sleep(100);
      assert.equal(provider.calls.resume, 1);
      open();
      const handles = await Promise.all([first, second]);
      assert.equal(handles.length, 2);
      assert.equal(provider.calls.resume, 2);
      assert.equal(provider.calls.create, 1);
    });

    test('ensureExisting returns null for an expired record without resume or create', async () => {
      const provider = new FakeProvider();
      const ctx = context(provider, { maxAgeMs: 60_000 });
      await ctx.store.upsert({
        key: ctx.key,
        provider: 'fake',
        providerSandboxId: 'sbx-old',
        threadId: 'thread-1',
        updatedAt: Date.now() - 60_001,
      });
      assert.equal(await ensureExisting(ctx), null);
      assert.equal(provider.calls.create, 0);
      assert.equal(provider.calls.resume, 0);
    });

    test('leaves no lock behind', async () => {
      const provider = new FakeProvider();
      const ctx = context(provider);
      await ensure(ctx);
      assert.deepStrictEqual(await keyLocks(pool, ctx.key), []);
    });
  });
}

/**
 * The SandboxInstanceStore contract (the seven cases of the TanStack
 * conformance suite), updatedAt round trips, and bad input.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';

import {
  InvalidArgumentError,
  SandboxStoreError,
  createInstanceStore,
  createLockStore,
  type SandboxInstanceRecord,
  type SandboxInstanceStore,
} from '../src/index.js';
import { newPool, uniqueKey } from './helpers.js';

let pool: pg.Pool;
let store: ReturnType<typeof createInstanceStore>;

before(() => {
  // A session time zone far from UTC: nothing may depend on it.
  pool = newPool(5, { options: '-c TimeZone=Pacific/Chatham' });
  store = createInstanceStore(pool);
});
after(async () => {
  await pool.end();
});

function full(key: string): SandboxInstanceRecord {
  return {
    key,
    provider: 'e2b',
    providerSandboxId: 'sbx-full',
    latestSnapshotId: 'snap-1',
    threadId: 'thread-full',
    latestRunId: 'run-1',
    updatedAt: 1767323045678,
  };
}

describe('SandboxInstanceStore contract', () => {
  test('1. get of a missing key resolves null', async () => {
    assert.equal(await store.get(uniqueKey('missing')), null);
  });

  test('2. a full record round-trips (deepEqual)', async () => {
    const record = full(uniqueKey('roundtrip'));
    assert.equal(await store.upsert(record), undefined);
    assert.deepStrictEqual(await store.get(record.key), record);
  });

  test('3. absent optional fields come back as absent keys', async () => {
    const key = uniqueKey('absent');
    await store.upsert({ key, provider: 'e2b', providerSandboxId: 'sbx-1', threadId: 't', updatedAt: 1 });
    const got = await store.get(key);
    assert.ok(got !== null);
    assert.equal('latestSnapshotId' in got, false);
    assert.equal('latestRunId' in got, false);
    assert.deepStrictEqual(Object.keys(got).sort(), ['key', 'provider', 'providerSandboxId', 'threadId', 'updatedAt']);
    assert.deepStrictEqual(got, { key, provider: 'e2b', providerSandboxId: 'sbx-1', threadId: 't', updatedAt: 1 });
  });

  test('4. re-upsert fully replaces: an omitted latestSnapshotId is dropped', async () => {
    const record = full(uniqueKey('replace'));
    await store.upsert(record);
    const replacement: SandboxInstanceRecord = {
      key: record.key,
      provider: 'daytona',
      providerSandboxId: 'sbx-2',
      threadId: record.threadId,
      latestRunId: 'run-2',
      updatedAt: record.updatedAt + 1000,
    };
    await store.upsert(replacement);
    const got = await store.get(record.key);
    assert.deepStrictEqual(got, replacement);
    assert.equal(got !== null && 'latestSnapshotId' in got, false);
  });

  test('5. records are isolated by key', async () => {
    const a = full(uniqueKey('iso-a'));
    const b = { ...full(uniqueKey('iso-b')), providerSandboxId: 'sbx-b', latestSnapshotId: 'snap-b', updatedAt: 2 };
    await store.upsert(a);
    await store.upsert(b);
    assert.deepStrictEqual(await store.get(a.key), a);
    assert.deepStrictEqual(await store.get(b.key), b);
    await store.delete(a.key);
    assert.equal(await store.get(a.key), null);
    assert.deepStrictEqual(await store.get(b.key), b);
  });

  test('6. delete removes the record', async () => {
    const record = full(uniqueKey('delete'));
    await store.upsert(record);
    assert.equal(await store.delete(record.key), undefined);
    assert.equal(await store.get(record.key), null);
  });

  test('7. delete of a missing key resolves undefined', async () => {
    assert.equal(await store.delete(uniqueKey('delete-missing')), undefined);
  });
});

describe('updatedAt', () => {
  const values: Array<[string, number]> = [
    ['a 2026 instant', 1767323045678],
    ['1 ms after the epoch', 1],
    ['the epoch', 0],
    ['1 ms before the epoch', -1],
    ['Date.now()', Date.now()],
    ['the last ms of 9999', 253402300799999],
    ['the first ms of 10000', 253402300800000],
    ['the first ms of 1 AD', -62135596800000],
    ['the last ms of 1 BC', -62135596800001],
    ['the earliest timestamptz (4714-11-24 BC)', -210866803200000],
    ['the latest JS Date (275760 AD)', 8.64e15],
    ['1.5 ms (microseconds are kept)', 1.5],
    ['a fraction of a 2026 ms', 1767323045678.25],
  ];
  for (const [name, updatedAt] of values) {
    test(`round-trips exactly: ${name} (${updatedAt})`, async () => {
      const record = { ...full(uniqueKey('ts')), updatedAt };
      await store.upsert(record);
      const got = await store.get(record.key);
      assert.equal(got?.updatedAt, updatedAt);
      assert.deepStrictEqual(got, record);
    });
  }

  test('the stored instant is the one meant, whatever the session time zone', async () => {
    const record = { ...full(uniqueKey('ts-tz')), updatedAt: 1767323045678 };
    await store.upsert(record);
    const { rows } = await pool.query<{ iso: string }>(
      `SELECT to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS iso
         FROM sandbox_store.sandbox_get($1)`,
      [record.key],
    );
    assert.equal(rows[0]?.iso, new Date(1767323045678).toISOString());
  });

  test('out of range or not a number: InvalidArgumentError, nothing written', async () => {
    const key = uniqueKey('ts-bad');
    for (const [updatedAt, sqlstate] of [
      [Number.NaN, '22023'],
      [Number.POSITIVE_INFINITY, '22023'],
      [-8.64e15, '22008'], // before 4714 BC: JavaScript has it, PostgreSQL does not
      [8.64e15 + 1, '22008'], // past the JavaScript Date range
    ] as const) {
      await assert.rejects(store.upsert({ ...full(key), updatedAt }), (error: unknown) => {
        assert.ok(error instanceof InvalidArgumentError, String(error));
        assert.equal(error.sqlstate, sqlstate);
        return true;
      });
    }
    assert.equal(await store.get(key), null);
  });
});

describe('bad input', () => {
  test('carries the SQLSTATE and changes nothing', async () => {
    const key = uniqueKey('bad');
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['empty provider', { provider: '' }, '22023'],
      ['empty latestRunId', { latestRunId: '' }, '22023'],
      ['null provider', { provider: null }, '22004'],
      ['missing threadId', { threadId: undefined }, '22004'],
      ['provider over 1024 bytes', { provider: 'é'.repeat(513) }, '22001'],
    ];
    for (const [name, change, sqlstate] of cases) {
      const record = { ...full(key), ...change } as SandboxInstanceRecord;
      await assert.rejects(store.upsert(record), (error: unknown) => {
        assert.ok(error instanceof InvalidArgumentError, `${name}: ${String(error)}`);
        assert.equal(error.sqlstate, sqlstate, name);
        assert.equal(error.code, sqlstate, name);
        return true;
      });
    }
    assert.equal(await store.get(key), null);
    await assert.rejects(store.upsert({ ...full(key), key: 'a\0b' }), (e: unknown) => {
      assert.ok(e instanceof InvalidArgumentError, String(e));
      assert.equal(e.sqlstate, '22021');
      return true;
    });
    await assert.rejects(
      store.delete(null as unknown as string),
      (e: unknown) => e instanceof InvalidArgumentError && e.sqlstate === '22004',
    );
  });

  test('get of a key no record can have is null, delete of it a no-op (as for a missing key)', async () => {
    for (const key of ['', 'k'.repeat(1025), 'é'.repeat(513), 'a\0b', '\0']) {
      assert.equal(await store.get(key), null, JSON.stringify(key.slice(0, 8)));
      assert.equal(await store.delete(key), undefined, JSON.stringify(key.slice(0, 8)));
    }
    // The longest key there can be is a key like any other.
    const longest = 'k'.repeat(1024);
    assert.equal(await store.get(longest), null);
    await store.upsert({ ...full(longest), key: longest });
    assert.equal((await store.get(longest))?.key, longest);
    await store.delete(longest);
    assert.equal(await store.get(longest), null);
  });

  test('an error of the database is a typed SandboxStoreError with its SQLSTATE', async () => {
    // A delete waits for the key's lock; statement_timeout ends the wait (57014).
    const key = uniqueKey('typed');
    const impatient = newPool(1, { options: '-c statement_timeout=100' });
    try {
      await createLockStore(pool).withLock(key, async () => {
        await assert.rejects(createInstanceStore(impatient).delete(key), (e: unknown) => {
          assert.ok(e instanceof SandboxStoreError, String(e));
          assert.equal(e.sqlstate, '57014');
          assert.equal(e.code, '57014');
          assert.ok(e.cause instanceof Error);
          return true;
        });
      });
    } finally {
      await impatient.end();
    }
  });

  test('an explicit undefined or null optional field is absent', async () => {
    const key = uniqueKey('undefined-optional');
    const record = { ...full(key), latestSnapshotId: undefined, latestRunId: null } as unknown as SandboxInstanceRecord;
    await store.upsert(record);
    assert.deepStrictEqual(await store.get(key), {
      key,
      provider: 'e2b',
      providerSandboxId: 'sbx-full',
      threadId: 'thread-full',
      updatedAt: 1767323045678,
    });
  });
});

test('list returns the records of a thread, most recently updated first', async () => {
  const threadId = uniqueKey('thread');
  const older = { ...full(uniqueKey('list-a')), threadId, updatedAt: 1000 };
  const newer = { ...full(uniqueKey('list-b')), threadId, updatedAt: 2000 };
  await store.upsert(older);
  await store.upsert(newer);
  assert.deepStrictEqual(await store.list(threadId), [newer, older]);
});

test('the store is a SandboxInstanceStore structurally', () => {
  const asContract: SandboxInstanceStore = store;
  assert.equal(typeof asContract.get, 'function');
});

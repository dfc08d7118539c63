/**
 * LockStore in lock mode: a transaction-scoped lock on a dedicated client.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';

import {
  InvalidArgumentError,
  LockLostError,
  LockNotAvailableError,
  createInstanceStore,
  createLockStore,
  tanstackSandboxKey,
  type LockStore,
} from '../src/index.js';
import { aborted, eventually, keyLocks, newPool, record, sleep, started, uniqueKey, within } from './helpers.js';

let poolA: pg.Pool;
let poolB: pg.Pool;

before(() => {
  poolA = newPool(5);
  poolB = newPool(5);
});
after(async () => {
  await Promise.all([poolA.end(), poolB.end()]);
});

describe('lock mode', () => {
  test('excludes callers of one key across two pools', async () => {
    const key = uniqueKey('excl');
    const stores = [createLockStore(poolA), createLockStore(poolB)];
    let inside = 0;
    let maxInside = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        stores[i % 2]!.withLock(key, async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          await sleep(40);
          order.push(i);
          inside--;
        }),
      ),
    );
    assert.equal(maxInside, 1);
    assert.equal(order.length, 6);
    assert.deepStrictEqual(await keyLocks(poolA, key), []);
  });

  test('a busy key with waitMs 0 raises LockNotAvailableError (55P03); other keys do not wait', async () => {
    const key = uniqueKey('busy');
    const holder = createLockStore(poolA);
    const impatient = createLockStore(poolB, { waitMs: 0 });
    await holder.withLock(key, async () => {
      await assert.rejects(
        impatient.withLock(key, async () => 'never'),
        (error: unknown) => {
          assert.ok(error instanceof LockNotAvailableError, String(error));
          assert.equal(error.sqlstate, '55P03');
          return true;
        },
      );
      assert.equal(await impatient.withLock(uniqueKey('other'), async () => 'free'), 'free');
      const [lock] = await keyLocks(poolB, key);
      assert.match(lock ?? '', /:true$/);
    });
  });

  test('releases the key when fn throws, and rethrows the same error', async () => {
    const key = uniqueKey('throw');
    const locks = createLockStore(poolA);
    const boom = new Error('boom');
    await assert.rejects(
      locks.withLock(key, async () => {
        throw boom;
      }),
      (error: unknown) => error === boom,
    );
    assert.deepStrictEqual(await keyLocks(poolA, key), []);
    assert.equal(await createLockStore(poolB, { waitMs: 0 }).withLock(key, async () => 'next'), 'next');
  });

  test('a throwing holder does not poison the waiters behind it', async () => {
    const key = uniqueKey('poison');
    const a = createLockStore(poolA);
    const b = createLockStore(poolB);
    const entered = started();
    const first = a.withLock(key, async () => {
      entered.mark();
      await sleep(50);
      throw new Error('first fails');
    });
    // The waiters come once the first holds the key (however long that took).
    await within(30_000, entered.promise, 'the first section');
    const second = b.withLock(key, async () => 'second');
    const third = a.withLock(key, async () => 'third');
    await assert.rejects(first, /first fails/);
    assert.equal(await second, 'second');
    assert.equal(await third, 'third');
    // a synchronous throw too
    await assert.rejects(
      a.withLock(key, (() => {
        throw new Error('sync');
      }) as unknown as () => Promise<void>),
      /sync/,
    );
    assert.equal(await b.withLock(key, async () => 'after'), 'after');
    assert.deepStrictEqual(await keyLocks(poolA, key), []);
  });

  test("a terminated backend aborts the holder's signal, and the key is free at once", async () => {
    const key = uniqueKey('terminate');
    const locks = createLockStore(poolA);
    let reason: unknown;
    const since = Date.now();
    await assert.rejects(
      locks.withLock(key, async (signal) => {
        const { rows } = await poolB.query<{ pid: number }>('SELECT sandbox_store.sandbox_lock_holder($1) AS pid', [
          key,
        ]);
        assert.ok(rows[0]?.pid, 'the lock has a holder');
        await poolB.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
        reason = await aborted(signal, 30_000);
        return 'finished anyway';
      }),
      (error: unknown) => {
        assert.ok(error instanceof LockLostError, String(error));
        assert.equal(error.sqlstate, '57P01');
        return true;
      },
    );
    assert.ok(reason instanceof LockLostError, String(reason));
    // Not a wait for a timeout (TCP keepalive takes hours): the bound is
    // generous for a loaded machine.
    assert.ok(Date.now() - since < 30_000, `${Date.now() - since} ms`);
    assert.equal(await createLockStore(poolB, { waitMs: 0 }).withLock(key, async () => 'free'), 'free');
    // The pool still works (the dead client was discarded).
    assert.equal(await locks.withLock(key, async () => 'again'), 'again');
  });

  test('the signal is not aborted by a normal release', async () => {
    const locks = createLockStore(poolA);
    let seen: AbortSignal | undefined;
    await locks.withLock(uniqueKey('signal'), async (signal) => {
      seen = signal;
    });
    await sleep(20);
    assert.equal(seen?.aborted, false);
  });

  test('is re-entrant within one async context', async () => {
    const key = uniqueKey('reentrant');
    const locks = createLockStore(poolA, { waitMs: 1000 });
    const result = await locks.withLock(key, async (outer) =>
      locks.withLock(key, async (inner) => (inner === outer ? 'same signal' : 'other signal')),
    );
    assert.equal(result, 'same signal');
  });

  test('rejects bad options and keys with InvalidArgumentError', async () => {
    assert.throws(() => createLockStore(poolA, { waitMs: -1 }), InvalidArgumentError);
    assert.throws(() => createLockStore(poolA, { mode: 'lease', leaseMs: 0 }), InvalidArgumentError);
    const locks = createLockStore(poolA);
    await assert.rejects(
      locks.withLock('', async () => 1),
      (e: unknown) => e instanceof InvalidArgumentError && e.sqlstate === '22023',
    );
    await assert.rejects(
      locks.withLock('x'.repeat(1025), async () => 1),
      (e: unknown) => e instanceof InvalidArgumentError && e.sqlstate === '22001',
    );
  });
});

describe('lock mode with the instance store', () => {
  test('writes of the held key commit with the section', async () => {
    const key = uniqueKey('tx-commit');
    const locks = createLockStore(poolA);
    const instances = createInstanceStore(poolA);
    const outside = createInstanceStore(poolB);
    await locks.withLock(key, async () => {
      await instances.upsert(record(key));
      assert.deepStrictEqual(await instances.get(key), record(key)); // seen by the holder
      assert.equal(await outside.get(key), null); // not yet by anyone else
    });
    assert.deepStrictEqual(await outside.get(key), record(key));
  });

  test('a write fn did not await still lands in the section before COMMIT', async () => {
    const key = uniqueKey('tx-unawaited');
    const locks = createLockStore(poolA);
    const instances = createInstanceStore(poolA);
    let pending: Promise<void> | undefined;
    await locks.withLock(key, async () => {
      pending = instances.upsert(record(key));
    });
    await pending;
    assert.deepStrictEqual(await createInstanceStore(poolB).get(key), record(key));
  });

  test('writes of the held key roll back when fn throws', async () => {
    const key = uniqueKey('tx-rollback');
    const locks = createLockStore(poolA);
    const instances = createInstanceStore(poolA);
    await assert.rejects(
      locks.withLock(key, async () => {
        await instances.upsert(record(key));
        throw new Error('after the write');
      }),
      /after the write/,
    );
    assert.equal(await instances.get(key), null);
  });

  test('delete of the held key re-uses the lock instead of waiting for itself', async () => {
    const key = uniqueKey('tx-delete');
    const locks = createLockStore(poolA);
    const instances = createInstanceStore(poolA);
    await instances.upsert(record(key));
    await within(
      5000,
      locks.withLock(key, async () => {
        await instances.delete(key);
      }),
      'delete inside the section',
    );
    assert.equal(await instances.get(key), null);
  });

  test('a delete from outside waits for the section', async () => {
    const key = uniqueKey('tx-delete-waits');
    const locks = createLockStore(poolA);
    const instances = createInstanceStore(poolA);
    const outside = createInstanceStore(poolB);
    const events: string[] = [];
    await locks.withLock(key, async () => {
      await instances.upsert(record(key));
      const deleting = outside.delete(key).then(() => events.push('deleted'));
      // The delete is in the database, waiting for the key's lock (not still on its way).
      await eventually('the delete waiting for the key', async () =>
        (await keyLocks(poolB, key)).some((lock) => lock.endsWith(':false')),
      );
      events.push('section ends');
      void deleting;
    });
    await eventually('the delete after the section', () => events.includes('deleted'), 30_000, 10);
    assert.deepStrictEqual(events, ['section ends', 'deleted']);
    assert.equal(await outside.get(key), null);
  });

  test('a failed write inside the section does not doom the rest of it', async () => {
    const key = uniqueKey('tx-savepoint');
    const locks = createLockStore(poolA);
    const instances = createInstanceStore(poolA);
    await locks.withLock(key, async () => {
      await assert.rejects(instances.upsert(record(key, { provider: '' })), InvalidArgumentError);
      await instances.upsert(record(key));
    });
    assert.deepStrictEqual(await instances.get(key), record(key));
  });

  test('a write after the lock was lost is refused (LockLostError), not raced', async () => {
    const key = uniqueKey('tx-lost');
    const locks = createLockStore(poolA);
    const instances = createInstanceStore(poolA);
    await assert.rejects(
      locks.withLock(key, async (signal) => {
        const { rows } = await poolB.query<{ pid: number }>('SELECT sandbox_store.sandbox_lock_holder($1) AS pid', [
          key,
        ]);
        await poolB.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
        await aborted(signal, 30_000);
        await assert.rejects(instances.upsert(record(key)), LockLostError);
      }),
      LockLostError,
    );
    assert.equal(await instances.get(key), null);
  });

  test('lockKey: a TanStack sandbox lock holds the instance key itself', async () => {
    const key = uniqueKey('tanstack');
    const locks = createLockStore(poolA, { lockKey: tanstackSandboxKey });
    const instances = createInstanceStore(poolA);
    const lockStore: LockStore = locks;
    await lockStore.withLock(`sandbox:${key}`, async () => {
      const { rows } = await poolB.query<{ pid: number | null }>(
        'SELECT sandbox_store.sandbox_lock_holder($1) AS pid',
        [key],
      );
      assert.notEqual(rows[0]?.pid, null);
      await instances.upsert(record(key));
      await instances.delete(key); // in the section: no self-wait
      await instances.upsert(record(key, { latestRunId: 'run-9' }));
    });
    assert.equal((await instances.get(key))?.latestRunId, 'run-9');
    assert.equal(tanstackSandboxKey('run-driver:1'), 'run-driver:1');
  });
});

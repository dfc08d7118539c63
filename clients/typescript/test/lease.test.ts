/**
 * LockStore in lease mode: a claim renewed on a timer; fenced writes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';

import {
  ClaimLostError,
  LockLostError,
  LockNotAvailableError,
  createInstanceStore,
  createLockStore,
  tanstackSandboxKey,
} from '../src/index.js';
import {
  aborted,
  claimExpiry,
  databaseClockPast,
  keyLocks,
  liveClaim,
  newPool,
  openTransactions,
  record,
  sleep,
  uniqueKey,
} from './helpers.js';

const HOLDER_APP = 'sandbox_store_ts_lease_a';
let poolA: pg.Pool;
let poolB: pg.Pool;

before(() => {
  poolA = newPool(5, { application_name: HOLDER_APP });
  poolB = newPool(5);
});
after(async () => {
  await Promise.all([poolA.end(), poolB.end()]);
});

describe('lease mode', () => {
  test('excludes callers of one key across two pools', async () => {
    const key = uniqueKey('lease-excl');
    const stores = [createLockStore(poolA, { mode: 'lease' }), createLockStore(poolB, { mode: 'lease' })];
    let inside = 0;
    let maxInside = 0;
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        stores[i % 2]!.withLock(key, async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          assert.ok(await liveClaim(poolB, key));
          await sleep(30);
          inside--;
        }),
      ),
    );
    assert.equal(maxInside, 1);
    assert.equal(await liveClaim(poolA, key), undefined, 'released at the end');
  });

  test('a claimed key with waitMs 0 raises LockNotAvailableError, in either mode', async () => {
    const key = uniqueKey('lease-busy');
    await createLockStore(poolA, { mode: 'lease' }).withLock(key, async () => {
      // A claim, not a lock: nothing of the extension in pg_locks, no transaction open.
      assert.deepStrictEqual(await keyLocks(poolB, key), []);
      assert.equal(await openTransactions(poolB, HOLDER_APP), 0);
      for (const mode of ['lease', 'lock'] as const) {
        await assert.rejects(
          createLockStore(poolB, { mode, waitMs: 0 }).withLock(key, async () => 'never'),
          (error: unknown) => error instanceof LockNotAvailableError && error.sqlstate === '55P03',
        );
      }
    });
  });

  test('renewal keeps the claim: same fence, nobody else gets in, the signal stays quiet', async () => {
    const key = uniqueKey('lease-renew');
    // Renewed every 250 ms, a 5 s lease outlives renewals that a loaded
    // machine delays by seconds: only a renewal that fails lets it lapse.
    const locks = createLockStore(poolA, { mode: 'lease', leaseMs: 5000, renewEveryMs: 250 });
    const other = createLockStore(poolB, { mode: 'lease', waitMs: 0 });
    await locks.withLock(key, async (signal) => {
      const first = await liveClaim(poolB, key);
      assert.ok(first);
      const firstExpiry = await claimExpiry(poolB, key);
      assert.ok(firstExpiry);
      // Until the first lease has run out by the database's clock.
      do {
        await assert.rejects(
          other.withLock(key, async () => 'never'),
          LockNotAvailableError,
        );
        assert.deepStrictEqual(await liveClaim(poolB, key), first);
        await sleep(150);
      } while (!(await databaseClockPast(poolB, firstExpiry)));
      // Past its first expiry the same claim is live: renewed, not retaken.
      assert.deepStrictEqual(await liveClaim(poolB, key), first, 'live after its first lease ran out');
      const again = await poolB.query<{ later: boolean }>(
        'SELECT lease_expires_at > $2::timestamptz AS later FROM sandbox_store.claims WHERE key = $1',
        [key, firstExpiry],
      );
      assert.equal(again.rows[0]?.later, true, 'the expiry moved on');
      assert.equal(signal.aborted, false);
    });
    assert.equal(await liveClaim(poolB, key), undefined);
  });

  test('a lost claim aborts the signal with ClaimLostError (SB001)', async () => {
    const key = uniqueKey('lease-lost');
    // A long lease, renewed often: the next renewal finds the claim gone
    // long before the lease could run out on its own.
    const locks = createLockStore(poolA, { mode: 'lease', leaseMs: 60_000, renewEveryMs: 200 });
    const result = await locks.withLock(key, async (signal) => {
      const claim = await liveClaim(poolB, key);
      assert.ok(claim);
      // Someone (an operator, a bug) ends the claim: the next renewal finds out.
      await poolB.query('SELECT sandbox_store.sandbox_release($1, $2::uuid)', [key, claim.owner_token]);
      const reason = await aborted(signal, 30_000);
      assert.ok(reason instanceof ClaimLostError, String(reason));
      assert.equal(reason.sqlstate, 'SB001');
      return 'fn decides what to return';
    });
    assert.equal(result, 'fn decides what to return');
  });

  test('a lease that runs out before a renewal aborts the signal with LockLostError', async () => {
    const key = uniqueKey('lease-expired');
    // Renewals far too rare: the lease runs out first.
    const locks = createLockStore(poolA, { mode: 'lease', leaseMs: 300, renewEveryMs: 60_000 });
    await locks.withLock(key, async (signal) => {
      const reason = await aborted(signal, 30_000);
      assert.ok(reason instanceof LockLostError, String(reason));
      assert.ok(!(reason instanceof ClaimLostError));
    });
  });

  test('a fenced write after a takeover is refused with ClaimLostError and changes nothing', async () => {
    const key = uniqueKey('lease-fenced');
    const locks = createLockStore(poolA, { mode: 'lease', leaseMs: 300, renewEveryMs: 60_000 });
    const instances = createInstanceStore(poolA);
    const successor = createLockStore(poolB, { mode: 'lease' });
    const successorInstances = createInstanceStore(poolB);
    await locks.withLock(key, async (signal) => {
      await instances.upsert(record(key, { latestRunId: 'run-1' })); // fenced, and fine
      await aborted(signal, 30_000); // the lease ran out
      await successor.withLock(key, async () => {
        await successorInstances.upsert(record(key, { latestRunId: 'run-2' }));
      });
      for (const write of [
        () => instances.upsert(record(key, { latestRunId: 'stale' })),
        () => instances.delete(key),
      ]) {
        await assert.rejects(write(), (error: unknown) => {
          assert.ok(error instanceof ClaimLostError, String(error));
          assert.equal(error.sqlstate, 'SB001');
          return true;
        });
      }
    });
    assert.equal((await successorInstances.get(key))?.latestRunId, 'run-2');
  });

  test('a generic withLock never stamps the record that shares its key', async () => {
    const locks = createLockStore(poolA, { mode: 'lease' });
    const instances = createInstanceStore(poolB);
    // A fresh record, and one "from the future" (an app server clock ahead of the database's).
    for (const updatedAt of [Date.now(), Date.now() + 3_600_000]) {
      const key = uniqueKey('lease-nostamp');
      const original = record(key, { latestRunId: 'run-0', updatedAt });
      await instances.upsert(original);
      await locks.withLock(key, async () => {
        assert.deepStrictEqual(await instances.get(key), original);
      });
      assert.deepStrictEqual(await instances.get(key), original);
    }
  });

  test('lockKey: a TanStack sandbox lock claims the instance key, so its writes are fenced', async () => {
    const key = uniqueKey('lease-tanstack');
    const locks = createLockStore(poolA, { mode: 'lease', lockKey: tanstackSandboxKey });
    const instances = createInstanceStore(poolA);
    await locks.withLock(`sandbox:${key}`, async () => {
      assert.ok(await liveClaim(poolB, key), 'the instance key is claimed');
      await instances.upsert(record(key));
      await instances.delete(key); // fenced: does not wait for its own claim
      await instances.upsert(record(key, { latestRunId: 'run-3' }));
    });
    assert.equal((await instances.get(key))?.latestRunId, 'run-3');
  });

  test('release happens even when fn throws', async () => {
    const key = uniqueKey('lease-throw');
    const locks = createLockStore(poolA, { mode: 'lease' });
    await assert.rejects(
      locks.withLock(key, async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await liveClaim(poolB, key), undefined);
    assert.equal(await createLockStore(poolB, { mode: 'lease', waitMs: 0 }).withLock(key, async () => 'next'), 'next');
  });

  test('a fenced write still in flight when fn returns is sent before the release (a fence dies with its claim)', async () => {
    const key = uniqueKey('lease-inflight');
    // A pool whose clients hold back sandbox_upsert for 300 ms, so that the
    // write is still on its way when the section ends.
    const pool = newPool(3);
    const connect = pool.connect.bind(pool);
    (pool as { connect: () => Promise<pg.PoolClient> }).connect = async () => {
      const client = await connect();
      const query = client.query.bind(client) as (text: string, values?: unknown[]) => Promise<unknown>;
      (client as { query: unknown }).query = async (text: string, values?: unknown[]) => {
        if (typeof text === 'string' && text.includes('sandbox_upsert')) await sleep(300);
        return query(text, values);
      };
      return client;
    };
    try {
      const locks = createLockStore(pool, { mode: 'lease' });
      const instances = createInstanceStore(pool);
      let write: Promise<void> | undefined;
      let settled = false;
      await locks.withLock(key, async () => {
        write = instances.upsert(record(key)).then(() => {
          settled = true;
        });
      });
      assert.ok(settled, 'the write settled before withLock returned');
      await write;
      assert.equal((await createInstanceStore(poolB).get(key))?.providerSandboxId, 'sbx-1');
      assert.equal(await liveClaim(poolB, key), undefined, 'released');
    } finally {
      await pool.end();
    }
  });
});

/**
 * Nesting, re-entry, cancellation and bounded waits for a connection:
 *
 * - TanStack AI's newest nesting (withRunClaim holds `run-driver:<runId>`
 *   for the whole run; the sandbox ensure takes `sandbox:<key>` inside it):
 *   N concurrent runs complete on a pool of max N and of max 1, in both
 *   modes, and leave nothing behind;
 * - re-entry only for strict nesting: children started concurrently inside
 *   a section take turns;
 * - an AbortSignal gives up a wait promptly, at the process's queue or in
 *   the database, leaving no lock, claim or connection behind;
 * - a section that cannot get a connection fails with a typed error after
 *   `connectTimeoutMs`; a cycle of waits inside the process is refused;
 * - ensureSandbox stamps a resumed record only after a successful resume.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';

import {
  ConnectionUnavailableError,
  DeadlockError,
  createInstanceStore,
  createLockStore,
  ensureSandbox,
  tanstackSandboxKey,
  type LockMode,
  type LockStore,
} from '../src/index.js';
import { eventually, keyLocks, liveClaim, newPool, sleep, uniqueKey, within } from './helpers.js';
import { FakeProvider, RunStore, ensure, withRunClaim } from './upstream.js';

let other: pg.Pool;
before(() => {
  other = newPool(2);
});
after(async () => {
  await other.end();
});

/**
 * Every client of the pool is back and idle (or closed), and nobody waits for
 * one: a client whose statement was cancelled goes back (closed) once that
 * statement has ended, so this waits for that (a generous bound: a loaded
 * machine ends it late, a leak never does).
 */
async function poolAtRest(pool: pg.Pool): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((pool.waitingCount !== 0 || pool.idleCount !== pool.totalCount) && Date.now() < deadline) {
    await sleep(10);
  }
  assert.equal(pool.waitingCount, 0, 'nobody waits for a connection');
  assert.equal(pool.idleCount, pool.totalCount, 'every connection is back in the pool');
}

/** Backends of the test database in a transaction or waiting for a lock (besides the caller's). */
async function busyBackends(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()
        AND (state LIKE 'idle in transaction%' OR wait_event_type = 'Lock')`,
  );
  return rows[0]?.n ?? -1;
}

/**
 * Statements of the extension running in other backends now, whose text
 * matches `pattern` (a regular expression; by default any function of the
 * extension).  A call waiting for a key is one.
 */
async function activeCalls(pool: pg.Pool, pattern = 'sandbox_store\\.sandbox_'): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
        AND query ~ $1`,
    [pattern],
  );
  return rows[0]?.n ?? -1;
}

/** The calls that take a key (and wait for it): not a holder's renewal. */
const TAKING = 'sandbox_store\\.sandbox_(lock|claim|ensure)\\(';

/** Statements of the extension still running in other backends, after up to 30 s for a cancel to land. */
async function runningCalls(pool: pg.Pool): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const n = await activeCalls(pool);
    if (n === 0 || Date.now() > deadline) return n;
    await sleep(50);
  }
}

/** Hold key through store in a section of its own until release() (which waits for the section to end). */
async function holdKey(store: LockStore, key: string): Promise<{ release: () => Promise<void> }> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const holding = store.withLock(key, async () => {
    entered();
    await held;
  });
  await inside;
  return {
    release: async () => {
      release();
      await holding;
    },
  };
}

for (const mode of ['lock', 'lease'] as LockMode[]) {
  describe(`nested runs, ${mode} mode`, () => {
    for (const max of [4, 1]) {
      test(`4 concurrent runs (run-driver:<runId>, then sandbox:<key> inside) complete on a pool of max ${max}`, async () => {
        const pool = newPool(max);
        try {
          const locks = createLockStore(pool, { mode, lockKey: tanstackSandboxKey });
          const store = createInstanceStore(pool);
          const runs = new RunStore();
          const provider = new FakeProvider();
          const thread = randomUUID();
          // Four threads, one run each; then four runs of one thread at once.
          const drive = (runId: string, key: string): Promise<string> => {
            runs.create(runId);
            return withRunClaim(locks, runs, runId, async () => {
              const { outcome } = await ensure({ key, threadId: key, runId, store, locks, provider });
              await sleep(5); // the rest of the run, still under run-driver:<runId>
              return outcome;
            });
          };
          const separate = await within(
            20_000,
            Promise.all([0, 1, 2, 3].map((i) => drive(`run-${thread}-${i}`, `nested/${thread}/t${i}`))),
            'four runs of four threads',
          );
          assert.deepStrictEqual(separate, ['created', 'created', 'created', 'created']);
          const shared = await within(
            20_000,
            Promise.all([4, 5, 6, 7].map((i) => drive(`run-${thread}-${i}`, `nested/${thread}/shared`))),
            'four runs of one thread',
          );
          assert.deepStrictEqual([...shared].sort(), ['created', 'resumed', 'resumed', 'resumed']);
          assert.equal(provider.calls.create, 5);
          await poolAtRest(pool);
          assert.deepStrictEqual(await keyLocks(other, `nested/${thread}/shared`), []);
          assert.equal(await liveClaim(other, `nested/${thread}/shared`), undefined);
        } finally {
          await pool.end();
        }
      });
    }

    test('children started concurrently inside a section take turns; a child re-enters at once', async () => {
      const pool = newPool(2);
      try {
        const locks = createLockStore(pool, { mode });
        const key = uniqueKey('children');
        let inside = 0;
        let maxInside = 0;
        const order: string[] = [];
        await locks.withLock(key, async () => {
          await Promise.all(
            ['a', 'b', 'c'].map((tag) =>
              locks.withLock(key, async () => {
                inside++;
                maxInside = Math.max(maxInside, inside);
                order.push(`${tag}:start`);
                await sleep(10);
                // Strict nesting: a child of this child enters at once.
                await locks.withLock(key, async () => order.push(`${tag}:inner`));
                order.push(`${tag}:end`);
                inside--;
              }),
            ),
          );
        });
        assert.equal(maxInside, 1);
        assert.deepStrictEqual(order, [
          'a:start',
          'a:inner',
          'a:end',
          'b:start',
          'b:inner',
          'b:end',
          'c:start',
          'c:inner',
          'c:end',
        ]);
        await poolAtRest(pool);
      } finally {
        await pool.end();
      }
    });

    test('an abort gives up a wait in the database promptly and leaves nothing behind', async () => {
      const pool = newPool(2);
      try {
        const key = uniqueKey('abort-db');
        const holder = createLockStore(other, { mode });
        const waiter = createLockStore(pool, { mode });
        const held = await holdKey(holder, key);
        try {
          const controller = new AbortController();
          const reason = new Error('the user gave up');
          const waiting = waiter.withLock(key, async () => 'never', { signal: controller.signal });
          await eventually('the wait in the database', async () => (await activeCalls(other, TAKING)) > 0);
          const t0 = Date.now();
          controller.abort(reason);
          await assert.rejects(waiting, (error: unknown) => error === reason);
          assert.ok(Date.now() - t0 < 1000, `gave up in ${Date.now() - t0} ms`);
          assert.equal(await runningCalls(other), 0, 'the wait in the database was cancelled');
          await poolAtRest(pool);
        } finally {
          await held.release();
        }
        assert.deepStrictEqual(await keyLocks(other, key), []);
        assert.equal(await liveClaim(other, key), undefined);
        assert.equal(await busyBackends(other), 0);
        // The key is free for the next caller.
        assert.equal(await waiter.withLock(key, async () => 'free', { waitMs: 1000 }), 'free');
      } finally {
        await pool.end();
      }
    });

    test("an abort gives up a wait at the process's queue", async () => {
      const pool = newPool(2);
      try {
        const key = uniqueKey('abort-queue');
        const locks = createLockStore(pool, { mode });
        let release!: () => void;
        const held = new Promise<void>((resolve) => {
          release = resolve;
        });
        const order: string[] = [];
        const first = locks.withLock(key, async () => {
          await held;
          order.push('first');
        });
        const controller = new AbortController();
        const second = locks.withLock(key, async () => order.push('second'), { signal: controller.signal });
        const third = locks.withLock(key, async () => order.push('third'));
        await sleep(50);
        controller.abort();
        await assert.rejects(second, (error: unknown) => error instanceof Error && error.name === 'AbortError');
        release();
        await Promise.all([first, third]);
        assert.deepStrictEqual(order, ['first', 'third']);
        await poolAtRest(pool);
      } finally {
        await pool.end();
      }
    });

    test('ensureSandbox: an abort gives up the wait for the key, nothing left behind', async () => {
      const pool = newPool(2);
      try {
        const key = uniqueKey('abort-ensure');
        const holder = createLockStore(other, { mode });
        const held = await holdKey(holder, key);
        let created = 0;
        try {
          const controller = new AbortController();
          const ensuring = ensureSandbox(pool, {
            key,
            threadId: 't',
            runId: 'r',
            provider: 'fake',
            mode,
            signal: controller.signal,
            create: async () => {
              created++;
              return { sandbox: 1, providerSandboxId: 'sbx' };
            },
            resume: async () => 1,
          });
          await eventually('the wait in the database', async () => (await activeCalls(other, TAKING)) > 0);
          const t0 = Date.now();
          controller.abort();
          await assert.rejects(ensuring, (error: unknown) => error instanceof Error && error.name === 'AbortError');
          assert.ok(Date.now() - t0 < 1000, `gave up in ${Date.now() - t0} ms`);
          assert.equal(await runningCalls(other), 0, 'the wait in the database was cancelled');
          await poolAtRest(pool);
        } finally {
          await held.release();
        }
        assert.equal(created, 0);
        assert.deepStrictEqual(await keyLocks(other, key), []);
        assert.equal(await liveClaim(other, key), undefined);
      } finally {
        await pool.end();
      }
    });

    test('ensureSandbox stamps a resumed record only after resume succeeded', async () => {
      const pool = newPool(2);
      try {
        const key = uniqueKey('stamp');
        const store = createInstanceStore(pool);
        const base = {
          key,
          threadId: 't',
          provider: 'fake',
          mode,
          create: async () => ({ sandbox: 'new', providerSandboxId: 'sbx-1' }),
        };
        await ensureSandbox(pool, { ...base, runId: 'run-1', resume: async () => 'resumed' });
        const before = await store.get(key);
        await assert.rejects(
          ensureSandbox(pool, {
            ...base,
            runId: 'run-2',
            resume: async () => {
              throw new Error('resume failed');
            },
          }),
          /resume failed/,
        );
        assert.deepStrictEqual(await store.get(key), before, 'nothing stamped');
        const third = await ensureSandbox(pool, { ...base, runId: 'run-3', resume: async () => 'resumed' });
        assert.equal(third.outcome, 'resumed');
        assert.equal(third.record.latestRunId, 'run-3');
        assert.ok(third.record.updatedAt >= (before?.updatedAt ?? Infinity));
        assert.deepStrictEqual(await store.get(key), third.record);
      } finally {
        await pool.end();
      }
    });
  });
}

describe('bounded waits', () => {
  test('a section that cannot get a connection fails with ConnectionUnavailableError, never hangs', async () => {
    const pool = newPool(1);
    try {
      const outer = createLockStore(pool, { mode: 'lock' });
      // Lease mode needs a connection of its own for its claim; lock mode holds the only one.
      const inner = createLockStore(pool, { mode: 'lease', connectTimeoutMs: 200 });
      await outer.withLock(uniqueKey('outer'), async () => {
        const t0 = Date.now();
        await assert.rejects(
          inner.withLock(uniqueKey('inner'), async () => 'never'),
          (error: unknown) => {
            assert.ok(error instanceof ConnectionUnavailableError, String(error));
            return true;
          },
        );
        assert.ok(Date.now() - t0 < 2000);
      });
      await poolAtRest(pool);
    } finally {
      await pool.end();
    }
  });

  test('a cycle of waits inside the process is refused with DeadlockError (40P01)', async () => {
    const pool = newPool(4);
    try {
      const locks = createLockStore(pool, { mode: 'lease' });
      const k1 = uniqueKey('cycle-1');
      const k2 = uniqueKey('cycle-2');
      let both!: () => void;
      let arrived = 0;
      const met = new Promise<void>((resolve) => {
        both = resolve;
      });
      const meet = async (): Promise<void> => {
        if (++arrived === 2) both();
        await met;
      };
      const results = await Promise.allSettled([
        locks.withLock(k1, async () => {
          await meet();
          return locks.withLock(k2, async () => 'a');
        }),
        locks.withLock(k2, async () => {
          await meet();
          await sleep(20);
          return locks.withLock(k1, async () => 'b');
        }),
      ]);
      const refused = results.filter((r) => r.status === 'rejected');
      assert.equal(refused.length, 1);
      const reason = (refused[0] as PromiseRejectedResult).reason as unknown;
      assert.ok(reason instanceof DeadlockError, String(reason));
      assert.equal(reason.sqlstate, '40P01');
      assert.deepStrictEqual(
        results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<string>).value),
        ['a'],
      );
      await poolAtRest(pool);
    } finally {
      await pool.end();
    }
  });
});

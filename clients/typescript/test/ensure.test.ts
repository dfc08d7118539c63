/**
 * ensureSandbox: the resume-or-create algorithm over one sandbox_ensure, in
 * lock mode and in lease mode.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';

import {
  ClaimLostError,
  LockLostError,
  LockNotAvailableError,
  SandboxStoreError,
  createInstanceStore,
  createLockStore,
  ensureSandbox,
  type EnsureSandboxOptions,
  type LockMode,
  type SandboxInstanceRecord,
} from '../src/index.js';
import {
  aborted,
  claimExpiry,
  databaseClockPast,
  eventually,
  keyLocks,
  liveClaim,
  newPool,
  openTransactions,
  sleep,
  started,
  uniqueKey,
  within,
} from './helpers.js';

const HOLDER_APP = 'sandbox_store_ts_ensure_a';
let poolA: pg.Pool;
let poolB: pg.Pool;

before(() => {
  poolA = newPool(5, { application_name: HOLDER_APP });
  poolB = newPool(5);
});
after(async () => {
  await Promise.all([poolA.end(), poolB.end()]);
});

interface FakeSandbox {
  id: string;
  how: string;
}

/** An in-memory fake provider that logs its calls. */
class FakeProvider {
  calls: string[] = [];
  live = new Set<string>();
  destroyed: string[] = [];
  snapshots = true;

  options(
    key: string,
    runId: string,
    extra: Partial<EnsureSandboxOptions<FakeSandbox>> = {},
  ): EnsureSandboxOptions<FakeSandbox> {
    return {
      key,
      threadId: `thread-of-${key}`,
      runId,
      provider: 'fake',
      create: async () => {
        const id = `sbx-${randomUUID()}`;
        this.calls.push('create');
        this.live.add(id);
        return {
          sandbox: { id, how: 'created' },
          providerSandboxId: id,
          ...(this.snapshots ? { latestSnapshotId: `snap-of-${id}` } : {}),
        };
      },
      resume: async (record) => {
        this.calls.push('resume');
        return this.live.has(record.providerSandboxId) ? { id: record.providerSandboxId, how: 'resumed' } : null;
      },
      restore: async (snapshotId) => {
        this.calls.push('restore');
        const id = `sbx-${randomUUID()}`;
        this.live.add(id);
        return { sandbox: { id, how: `restored from ${snapshotId}` }, providerSandboxId: id };
      },
      destroy: async (record) => {
        this.calls.push('destroy');
        this.destroyed.push(record.providerSandboxId);
        this.live.delete(record.providerSandboxId);
      },
      ...extra,
    };
  }
}

for (const mode of ['lock', 'lease'] as const) {
  describe(`ensureSandbox, ${mode} mode`, () => {
    const instances = () => createInstanceStore(poolB);
    const opts = (
      p: FakeProvider,
      key: string,
      runId: string,
      extra: Partial<EnsureSandboxOptions<FakeSandbox>> = {},
    ) => p.options(key, runId, { mode, ...extra });

    test('create, then resume the same sandbox (stamped with the new run)', async () => {
      const key = uniqueKey(`ens-${mode}`);
      const p = new FakeProvider();
      const first = await ensureSandbox(poolA, opts(p, key, 'run-1'));
      assert.equal(first.outcome, 'created');
      assert.equal(first.record.latestRunId, 'run-1');
      assert.equal(first.record.provider, 'fake');
      assert.equal(first.record.threadId, `thread-of-${key}`);
      assert.deepStrictEqual(await instances().get(key), first.record);

      const second = await ensureSandbox(poolA, opts(p, key, 'run-2'));
      assert.equal(second.outcome, 'resumed');
      assert.equal(second.sandbox.id, first.sandbox.id);
      assert.equal(second.record.providerSandboxId, first.record.providerSandboxId);
      assert.equal(second.record.latestRunId, 'run-2');
      assert.equal(second.record.latestSnapshotId, first.record.latestSnapshotId);
      assert.ok(second.record.updatedAt >= first.record.updatedAt);
      assert.deepStrictEqual(await instances().get(key), second.record);
      assert.deepStrictEqual(p.calls, ['create', 'resume']);
      assert.deepStrictEqual(await keyLocks(poolB, key), []);
      assert.equal(await liveClaim(poolB, key), undefined);
    });

    test('a sandbox that is gone is restored from its snapshot', async () => {
      const key = uniqueKey(`ens-restore-${mode}`);
      const p = new FakeProvider();
      const first = await ensureSandbox(poolA, opts(p, key, 'run-1'));
      p.live.clear(); // the provider lost it
      const second = await ensureSandbox(poolA, opts(p, key, 'run-2'));
      assert.equal(second.outcome, 'restored');
      assert.equal(second.sandbox.how, `restored from ${first.record.latestSnapshotId}`);
      assert.notEqual(second.record.providerSandboxId, first.record.providerSandboxId);
      assert.equal(second.record.latestSnapshotId, first.record.latestSnapshotId);
      assert.equal(second.record.latestRunId, 'run-2');
      assert.deepStrictEqual(await instances().get(key), second.record);
      assert.deepStrictEqual(p.calls, ['create', 'resume', 'restore']);
    });

    test('gone and no snapshot: created anew (no latestSnapshotId key)', async () => {
      const key = uniqueKey(`ens-gone-${mode}`);
      const p = new FakeProvider();
      p.snapshots = false;
      await ensureSandbox(poolA, opts(p, key, 'run-1'));
      p.live.clear();
      const second = await ensureSandbox(poolA, opts(p, key, 'run-2'));
      assert.equal(second.outcome, 'created');
      assert.equal('latestSnapshotId' in second.record, false);
      assert.deepStrictEqual(p.calls, ['create', 'resume', 'create']);
    });

    test('too old (maxAgeMs): the old sandbox is destroyed and a new one created', async () => {
      const key = uniqueKey(`ens-old-${mode}`);
      const p = new FakeProvider();
      const old: SandboxInstanceRecord = {
        key,
        provider: 'fake',
        providerSandboxId: 'sbx-old',
        threadId: `thread-of-${key}`,
        latestRunId: 'run-0',
        updatedAt: Date.now() - 3_600_000,
      };
      await instances().upsert(old);
      const result = await ensureSandbox(poolA, opts(p, key, 'run-1', { maxAgeMs: 60_000 }));
      assert.equal(result.outcome, 'recreated');
      assert.deepStrictEqual(p.destroyed, ['sbx-old']);
      assert.deepStrictEqual(p.calls, ['destroy', 'create']);
      assert.deepStrictEqual(await instances().get(key), result.record);
      // Fresh enough for the next run.
      assert.equal((await ensureSandbox(poolA, opts(p, key, 'run-2', { maxAgeMs: 60_000 }))).outcome, 'resumed');
    });

    test('a record of another provider is recreated', async () => {
      const key = uniqueKey(`ens-provider-${mode}`);
      const p = new FakeProvider();
      await instances().upsert({
        key,
        provider: 'other',
        providerSandboxId: 'sbx-other',
        threadId: 't',
        updatedAt: Date.now(),
      });
      const result = await ensureSandbox(poolA, opts(p, key, 'run-1'));
      assert.equal(result.outcome, 'recreated');
      assert.deepStrictEqual(p.destroyed, ['sbx-other']);
      assert.equal(result.record.provider, 'fake');
    });

    test('create that throws records nothing and frees the key', async () => {
      const key = uniqueKey(`ens-throw-${mode}`);
      const p = new FakeProvider();
      await assert.rejects(
        ensureSandbox(
          poolA,
          opts(p, key, 'run-1', {
            create: async () => {
              throw new Error('provider down');
            },
          }),
        ),
        /provider down/,
      );
      assert.equal(await instances().get(key), null);
      const next = await ensureSandbox(poolB, opts(p, key, 'run-2', { waitMs: 0 }));
      assert.equal(next.outcome, 'created');
    });

    test('callbacks run as the holder: the instance store writes the key as the holder', async () => {
      const key = uniqueKey(`ens-holder-${mode}`);
      const p = new FakeProvider();
      const store = createInstanceStore(poolA);
      const result = await ensureSandbox(
        poolA,
        opts(p, key, 'run-1', {
          create: async () => {
            await store.upsert({ key, provider: 'fake', providerSandboxId: 'sbx-early', threadId: 't', updatedAt: 5 });
            return { sandbox: { id: 'sbx-final', how: 'created' }, providerSandboxId: 'sbx-final' };
          },
        }),
      );
      assert.equal(result.record.providerSandboxId, 'sbx-final');
      assert.equal((await instances().get(key))?.providerSandboxId, 'sbx-final');
    });

    test('a nested ensureSandbox of a key held by this context is refused, not deadlocked', async () => {
      const key = uniqueKey(`ens-nested-${mode}`);
      const p = new FakeProvider();
      await createLockStore(poolA, { mode }).withLock(key, async () => {
        await assert.rejects(ensureSandbox(poolA, opts(p, key, 'run-1')), SandboxStoreError);
      });
    });
  });
}

describe('ensureSandbox, lock mode specifics', () => {
  test('resume that throws rolls the stamp back', async () => {
    const key = uniqueKey('ens-resume-throws');
    const p = new FakeProvider();
    const first = await ensureSandbox(poolA, p.options(key, 'run-1'));
    await assert.rejects(
      ensureSandbox(
        poolA,
        p.options(key, 'run-2', {
          resume: async () => {
            throw new Error('flaky');
          },
        }),
      ),
      /flaky/,
    );
    assert.deepStrictEqual(await createInstanceStore(poolB).get(key), first.record);
  });

  test('a concurrent ensure waits, then resumes what the first one created', async () => {
    const key = uniqueKey('ens-wait');
    const p = new FakeProvider();
    // The create runs until the test lets it end: whatever the machine's
    // speed, the other callers come while the first holds the key.
    const creating = started();
    const done = started();
    const slow = p.options(key, 'run-1', {
      create: async () => {
        creating.mark();
        await done.promise;
        p.calls.push('create');
        p.live.add('sbx-slow');
        return { sandbox: { id: 'sbx-slow', how: 'created' }, providerSandboxId: 'sbx-slow' };
      },
    });
    const first = ensureSandbox(poolA, slow);
    let waiting: ReturnType<typeof ensureSandbox<FakeSandbox>> | undefined;
    try {
      await within(30_000, creating.promise, 'the first create');
      await assert.rejects(ensureSandbox(poolB, p.options(key, 'run-x', { waitMs: 0 })), LockNotAvailableError);
      waiting = ensureSandbox(poolB, p.options(key, 'run-2'));
      // The second is in the database, waiting for the key's lock.
      await eventually('the second ensure waiting for the key', async () =>
        (await keyLocks(poolA, key)).some((lock) => lock.endsWith(':false')),
      );
    } finally {
      done.mark();
    }
    const second = await waiting;
    assert.ok(second);
    assert.equal((await first).outcome, 'created');
    assert.equal(second.outcome, 'resumed');
    assert.equal(second.record.providerSandboxId, 'sbx-slow');
  });

  test('a terminated backend aborts ctx.signal; the new sandbox is destroyed, nothing recorded', async () => {
    const key = uniqueKey('ens-terminate');
    const p = new FakeProvider();
    let reason: unknown;
    await assert.rejects(
      ensureSandbox(
        poolA,
        p.options(key, 'run-1', {
          create: async (ctx) => {
            const { rows } = await poolB.query<{ pid: number }>('SELECT sandbox_store.sandbox_lock_holder($1) AS pid', [
              key,
            ]);
            await poolB.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
            reason = await aborted(ctx.signal, 30_000);
            return { sandbox: { id: 'sbx-orphan', how: 'created' }, providerSandboxId: 'sbx-orphan' };
          },
        }),
      ),
      LockLostError,
    );
    assert.ok(reason instanceof LockLostError);
    assert.deepStrictEqual(p.destroyed, ['sbx-orphan']);
    assert.equal(await createInstanceStore(poolB).get(key), null);
  });
});

describe('ensureSandbox, lease mode specifics', () => {
  test('renewal keeps the claim through a slow create; nobody else gets in', async () => {
    const key = uniqueKey('ens-lease-slow');
    const p = new FakeProvider();
    let aborts = 0;
    const result = await ensureSandbox(
      poolA,
      p.options(key, 'run-1', {
        mode: 'lease',
        // Renewed every 250 ms, a 5 s lease outlives renewals that a loaded
        // machine delays by seconds.
        leaseMs: 5000,
        renewEveryMs: 250,
        create: async (ctx) => {
          ctx.signal.addEventListener('abort', () => aborts++);
          const claim = await liveClaim(poolB, key);
          const firstExpiry = await claimExpiry(poolB, key);
          assert.ok(claim && firstExpiry);
          // Until the first lease has run out by the database's clock.
          do {
            await assert.rejects(
              ensureSandbox(poolB, p.options(key, 'run-x', { mode: 'lease', waitMs: 0 })),
              LockNotAvailableError,
            );
            await sleep(100);
          } while (!(await databaseClockPast(poolB, firstExpiry)));
          assert.deepStrictEqual(await liveClaim(poolB, key), claim, 'the same claim, live after its first lease');
          return { sandbox: { id: 'sbx-slow', how: 'created' }, providerSandboxId: 'sbx-slow' };
        },
      }),
    );
    assert.equal(result.outcome, 'created');
    assert.equal(aborts, 0);
    assert.equal(await liveClaim(poolB, key), undefined);
  });

  test('a lost lease aborts ctx.signal, and the fenced write is refused with ClaimLostError', async () => {
    const key = uniqueKey('ens-lease-lost');
    const p = new FakeProvider();
    let reason: unknown;
    let successor: Awaited<ReturnType<typeof ensureSandbox<FakeSandbox>>> | undefined;
    await assert.rejects(
      ensureSandbox(
        poolA,
        p.options(key, 'run-1', {
          mode: 'lease',
          leaseMs: 300,
          renewEveryMs: 60_000, // renewals never come: the lease runs out
          create: async (ctx) => {
            reason = await aborted(ctx.signal, 30_000);
            // Another server takes the key over and records its own sandbox.
            successor = await ensureSandbox(poolB, p.options(key, 'run-2', { mode: 'lease' }));
            // This (paused) one still comes back with a sandbox...
            return { sandbox: { id: 'sbx-late', how: 'created' }, providerSandboxId: 'sbx-late' };
          },
        }),
      ),
      (error: unknown) => {
        assert.ok(error instanceof ClaimLostError, String(error));
        assert.equal(error.sqlstate, 'SB001');
        return true;
      },
    );
    assert.ok(reason instanceof LockLostError);
    assert.equal(successor?.outcome, 'created');
    // ...but the database refused its write: the successor's record stands.
    assert.deepStrictEqual(await createInstanceStore(poolB).get(key), successor?.record);
    assert.ok(p.destroyed.includes('sbx-late'), 'the unrecorded sandbox is destroyed');
  });

  test('lease mode holds no transaction while the provider works', async () => {
    const key = uniqueKey('ens-lease-notx');
    const p = new FakeProvider();
    await ensureSandbox(
      poolA,
      p.options(key, 'run-1', {
        mode: 'lease',
        create: async () => {
          assert.equal(await openTransactions(poolB, HOLDER_APP), 0);
          assert.deepStrictEqual(await keyLocks(poolB, key), []);
          return { sandbox: { id: 'sbx', how: 'created' }, providerSandboxId: 'sbx' };
        },
      }),
    );
  });
});

test('modes are the two LockMode values', () => {
  const modes: LockMode[] = ['lock', 'lease'];
  assert.equal(modes.length, 2);
});

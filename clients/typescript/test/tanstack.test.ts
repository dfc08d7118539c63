/**
 * Through the real @tanstack/ai-sandbox 0.2.4 and @tanstack/ai (the
 * versions in the lock file): chat() runs with `withSandbox` and a fake
 * provider defined with the package's own `defineSandbox`, the stores
 * wired with `withDurableSandbox`.  Several Node processes (tanstack-app.ts)
 * run one thread at once; a holder is killed mid-create; a restarted
 * process resumes; a paused holder's late write is refused.  In-process:
 * the wiring mistakes the helper catches, and the one it cannot see.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { createCapability } from '@tanstack/ai';
import {
  SandboxCapability,
  defineSandbox,
  provideSandbox,
  withSandbox,
  type SandboxHandle,
} from '@tanstack/ai-sandbox';
import type pg from 'pg';

import { createInstanceStore, createLockStore, tanstackSandboxKey } from '../src/index.js';
import { defineDurableSandbox, provideSandboxStores, withDurableSandbox } from '../src/tanstack.js';
import { logProviderCall, newPool, providerCalls, uniqueKey } from './helpers.js';
import { fakeHandle, fakeSandbox, fakeSandboxConfig, runChat } from './tanstack-fakes.js';

const APP = fileURLToPath(new URL('./tanstack-app.js', import.meta.url));

interface RunResult {
  runId: string;
  ok: boolean;
  error?: { name?: string; code?: string; message?: string };
}

interface App {
  process: ChildProcess;
  /** Resolves once the app printed `line` (or exited). */
  printed: (line: string) => Promise<void>;
  go: () => void;
  /** The runs' results once the app exited (rejects if it exited non-zero). */
  done: Promise<RunResult[]>;
  /** Exit code and signal once it exited, whatever they are. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface AppArgs {
  threadId: string;
  mode: 'lock' | 'lease';
  runs?: number;
  createDelayMs?: number;
  leaseMs?: number;
  barrier?: boolean;
  durable?: boolean;
}

function startApp(args: AppArgs): App {
  // By default a lease long against what an app does under it on a busy
  // machine; the tests that want one to run out set a short one.
  const full = { runs: 1, createDelayMs: 0, leaseMs: 30_000, barrier: false, ...args };
  const child = spawn(process.execPath, [APP, JSON.stringify(full)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters: Array<{ line: string; resolve: () => void }> = [];
  const check = (): void => {
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
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      for (const w of waiters.splice(0)) w.resolve();
      resolve({ code, signal });
    });
  });
  const done = exited.then(({ code, signal }) => {
    if (code !== 0) throw new Error(`app exited with ${code ?? signal}: ${err || out}`);
    return out
      .split('\n')
      .filter((l) => l.startsWith('{"runId"'))
      .map((l) => JSON.parse(l) as RunResult);
  });
  done.catch(() => undefined);
  return {
    process: child,
    printed: (line) =>
      new Promise<void>((resolve) => {
        waiters.push({ line, resolve });
        check();
      }),
    go: () => child.stdin.end('go\n'),
    done,
    exited,
  };
}

/** The thread's record as the app wrote it (the key is computed by TanStack AI, so look it up by thread). */
async function threadRecords(pool: pg.Pool, threadId: string) {
  return createInstanceStore(pool).list(threadId);
}

async function createdIds(pool: pg.Pool, threadId: string): Promise<string[]> {
  const result = await pool.query<{ sandbox_id: string }>(
    "SELECT sandbox_id FROM fake_provider_calls WHERE thread_id = $1 AND op = 'create' ORDER BY id",
    [threadId],
  );
  return result.rows.map((r) => r.sandbox_id);
}

let pool: pg.Pool;
before(() => {
  pool = newPool(4);
});
after(async () => {
  await pool.end();
});

for (const mode of ['lock', 'lease'] as const) {
  describe(`@tanstack/ai-sandbox 0.2.4 across processes, ${mode} mode`, () => {
    // defineDurableSandbox races in lease mode only (its ensure is ensureSandbox, whose
    // lock mode processes.test.ts covers): the suite stays short.
    for (const durable of mode === 'lease' ? [false, true] : [false]) {
      const definition = durable ? 'defineDurableSandbox' : 'defineSandbox';
      test(`${definition}: 4 processes x 5 concurrent chat() runs of one new thread: exactly one create, one record`, async () => {
        const threadId = uniqueKey(`tanstack-race-${mode}`);
        const apps = Array.from({ length: 4 }, () =>
          startApp({ threadId, mode, runs: 5, createDelayMs: 200, barrier: true, durable }),
        );
        await Promise.all(apps.map((a) => a.printed('ready')));
        for (const a of apps) a.go();
        const results = (await Promise.all(apps.map((a) => a.done))).flat();

        assert.equal(results.length, 20);
        assert.deepStrictEqual(
          results.filter((r) => !r.ok),
          [],
        );
        const counts = await providerCalls(pool, threadId);
        assert.equal(counts['create'], 1, JSON.stringify(counts));
        assert.equal(counts['resume'], 19, JSON.stringify(counts));
        const records = await threadRecords(pool, threadId);
        assert.equal(records.length, 1);
        assert.deepStrictEqual([records[0]?.providerSandboxId], await createdIds(pool, threadId));
      });
    }

    test('the holder is killed (SIGKILL) mid-create: another process takes the key and creates; a restarted process resumes', async () => {
      const threadId = uniqueKey(`tanstack-kill-${mode}`);
      const leaseMs = 1500;
      const holder = startApp({ threadId, mode, createDelayMs: 60_000, leaseMs });
      await holder.printed('creating');
      // The next app is up and connected before the kill: the time measured
      // is the key's, not a Node process's start on a busy machine.
      const next = startApp({ threadId, mode, leaseMs, barrier: true });
      await next.printed('ready');
      const killedAt = performance.now();
      holder.process.kill('SIGKILL');
      next.go();
      assert.equal((await holder.exited).signal, 'SIGKILL');
      const results = await next.done;
      const tookMs = performance.now() - killedAt;

      assert.deepStrictEqual(
        results.map((r) => r.ok),
        [true],
      );
      // Lock mode: the holder's transaction ended with its connection.
      // Lease mode: its claim ran out (at most leaseMs after its last renewal).
      // Not a wait for the killed holder's create (60 s) or for a timeout
      // (TCP keepalive: hours); room for a busy machine.
      assert.ok(tookMs < (mode === 'lock' ? 30_000 : leaseMs + 30_000), `took ${tookMs} ms`);
      const ids = await createdIds(pool, threadId);
      assert.equal(ids.length, 2, 'the killed create and the new one');
      const records = await threadRecords(pool, threadId);
      assert.equal(records.length, 1);
      assert.equal(records[0]?.providerSandboxId, ids[1], 'the record is the surviving create');

      const restarted = await startApp({ threadId, mode, leaseMs }).done;
      assert.deepStrictEqual(
        restarted.map((r) => r.ok),
        [true],
      );
      const counts = await providerCalls(pool, threadId);
      assert.equal(counts['create'], 2, JSON.stringify(counts));
      assert.equal(counts['resume'], 1, JSON.stringify(counts));
      assert.equal((await threadRecords(pool, threadId))[0]?.providerSandboxId, ids[1]);
    });
  });
}

describe('@tanstack/ai-sandbox 0.2.4, lease mode: a paused holder', () => {
  for (const durable of [false, true]) {
    const definition = durable ? 'defineDurableSandbox' : 'defineSandbox';
    const fate = durable ? 'its orphan sandbox is destroyed' : "0.2.4's ensure leaves its sandbox behind";
    test(`${definition}: its lease runs out, another process creates; its late write is refused (SB001) and ${fate}`, async () => {
      const threadId = uniqueKey('tanstack-pause');
      // Renewed every second until the pause, then left to run out.  The
      // create takes 5 s: far longer than the SIGSTOP takes to land after
      // "creating", so the holder never writes before it is paused.
      const leaseMs = 3000;
      const holder = startApp({ threadId, mode: 'lease', createDelayMs: 5000, leaseMs, durable });
      await holder.printed('creating');
      holder.process.kill('SIGSTOP');
      try {
        const next = await startApp({ threadId, mode: 'lease', leaseMs, durable }).done;
        assert.deepStrictEqual(
          next.map((r) => r.ok),
          [true],
        );
      } finally {
        holder.process.kill('SIGCONT');
      }
      const late = await holder.done;
      assert.equal(late.length, 1);
      assert.equal(late[0]?.ok, false);
      assert.equal(late[0]?.error?.name, 'ClaimLostError', JSON.stringify(late[0]));
      assert.equal(late[0]?.error?.code, 'SB001');

      const ids = await createdIds(pool, threadId);
      assert.equal(ids.length, 2);
      const records = await threadRecords(pool, threadId);
      assert.equal(records.length, 1);
      assert.equal(records[0]?.providerSandboxId, ids[1], 'the record is the new holder’s');
      const destroyed = await pool.query<{ sandbox_id: string }>(
        "SELECT sandbox_id FROM fake_provider_calls WHERE thread_id = $1 AND op = 'destroy'",
        [threadId],
      );
      // 0.2.4 (see the README): the paused holder's sandbox was created,
      // never recorded, and never destroyed.  defineDurableSandbox destroys it.
      assert.deepStrictEqual(
        destroyed.rows.map((r) => r.sandbox_id),
        durable ? [ids[0]] : [],
      );
    });
  }
});

describe('wiring mistakes', () => {
  test('stores passed as a second argument of 0.2.4 withSandbox are ignored: the run works and nothing is recorded (the trap)', async () => {
    const threadId = uniqueKey('tanstack-ignored');
    const instances = createInstanceStore(pool);
    const locks = createLockStore(pool, { lockKey: tanstackSandboxKey });
    const sandbox = fakeSandbox(pool, { threadId });
    const ignored = (withSandbox as unknown as (d: unknown, o: unknown) => ReturnType<typeof withSandbox>)(sandbox, {
      instances,
      locks,
    });
    assert.equal(await runChat(threadId, 'run-1', [ignored]), 'ok');
    assert.equal((await providerCalls(pool, threadId))['create'], 1);
    assert.deepStrictEqual(await threadRecords(pool, threadId), []);
  });

  test('withDurableSandbox: the same run is recorded', async () => {
    const threadId = uniqueKey('tanstack-durable');
    const instances = createInstanceStore(pool);
    const locks = createLockStore(pool, { lockKey: tanstackSandboxKey });
    const sandbox = fakeSandbox(pool, { threadId });
    assert.equal(await runChat(threadId, 'run-1', withDurableSandbox(sandbox, { instances, locks })), 'ok');
    const records = await threadRecords(pool, threadId);
    assert.equal(records.length, 1);
    assert.equal(records[0]?.latestRunId, 'run-1');
  });

  test('provideSandboxStores placed after withSandbox fails the run with a clear error, and leaks no sandbox', async () => {
    const threadId = uniqueKey('tanstack-order');
    const stores = { instances: createInstanceStore(pool), locks: createLockStore(pool) };
    // 0.2.4's withSandbox creates from its setup, before this package sees the
    // run: the check destroys the sandbox it made (handle.destroy, counted).
    const config = fakeSandboxConfig(pool, { threadId });
    const provider = config.provider;
    const counted = {
      ...provider,
      create: async (options: Parameters<typeof provider.create>[0]) => {
        const handle = await provider.create(options);
        return { ...handle, destroy: () => logProviderCall(pool, threadId, 'destroy', handle.id) };
      },
    };
    const sandbox = defineSandbox({ ...config, provider: counted });
    for (const runId of ['run-1', 'run-2']) {
      await assert.rejects(runChat(threadId, runId, [withSandbox(sandbox), provideSandboxStores(stores)]), {
        name: 'SandboxStoreError',
        message: /runs after withSandbox\(\).*destroyed it/,
      });
    }
    const calls = await providerCalls(pool, threadId);
    assert.equal(calls['destroy'], calls['create'], JSON.stringify(calls));
    assert.deepStrictEqual(await threadRecords(pool, threadId), []);
  });

  test('defineDurableSandbox with withSandbox before provideSandboxStores fails before any provider call', async () => {
    const threadId = uniqueKey('tanstack-order-durable');
    const stores = { instances: createInstanceStore(pool), locks: createLockStore(pool) };
    const sandbox = defineDurableSandbox(pool, fakeSandboxConfig(pool, { threadId }));
    await assert.rejects(runChat(threadId, 'run-1', [withSandbox(sandbox), provideSandboxStores(stores)]), {
      name: 'SandboxStoreError',
      message: /before provideSandboxStores\(\).*No provider call was made/,
    });
    await assert.rejects(runChat(threadId, 'run-2', [withSandbox(sandbox)]), {
      name: 'SandboxStoreError',
      message: /No provider call was made/,
    });
    assert.deepStrictEqual(await providerCalls(pool, threadId), { create: 0, resume: 0 });
    assert.deepStrictEqual(await threadRecords(pool, threadId), []);
    // In order, the same definition works.
    assert.equal(await runChat(threadId, 'run-3', [provideSandboxStores(stores), withSandbox(sandbox)]), 'ok');
    assert.deepStrictEqual(await providerCalls(pool, threadId), { create: 1, resume: 0 });
  });

  test('a withSandbox that ensures without the provided lock store (a version that ignores the capabilities) fails the run', async () => {
    const threadId = uniqueKey('tanstack-unaware');
    const stores = { instances: createInstanceStore(pool), locks: createLockStore(pool) };
    const unaware = {
      name: 'sandbox',
      provides: [SandboxCapability] as const,
      setup: (ctx: Parameters<typeof provideSandbox>[0]) => provideSandbox(ctx, fakeHandle('sbx-elsewhere')),
    };
    await assert.rejects(runChat(threadId, 'run-1', [provideSandboxStores(stores), unaware]), {
      name: 'SandboxStoreError',
      message: /without the PostgreSQL lock store/,
    });
  });

  test('a withSandbox of another copy of @tanstack/ai-sandbox (its own capabilities) fails the run, before or after', async () => {
    const threadId = uniqueKey('tanstack-copy');
    const stores = { instances: createInstanceStore(pool), locks: createLockStore(pool) };
    // Another copy's SandboxCapability: another object with the same name.
    const otherCopy = createCapability<SandboxHandle>()('sandbox');
    const [, provideOther] = otherCopy;
    const elsewhere = {
      name: 'sandbox',
      provides: [otherCopy] as const,
      setup: (ctx: Parameters<typeof provideOther>[0]) => provideOther(ctx, fakeHandle('sbx-elsewhere')),
    };
    await assert.rejects(runChat(threadId, 'run-1', [provideSandboxStores(stores), elsewhere]), {
      name: 'SandboxStoreError',
      message: /second copy of @tanstack\/ai-sandbox/,
    });
    await assert.rejects(runChat(threadId, 'run-2', [elsewhere, provideSandboxStores(stores)]), {
      name: 'SandboxStoreError',
      message: /runs after withSandbox\(\)/,
    });
  });

  test('provideSandboxStores refuses what is not a pair of stores', () => {
    const instances = createInstanceStore(pool);
    assert.throws(() => provideSandboxStores({ instances } as never), { name: 'InvalidArgumentError' });
    assert.throws(() => provideSandboxStores({ locks: createLockStore(pool) } as never), {
      name: 'InvalidArgumentError',
    });
  });
});

describe('defineDurableSandbox, in process', () => {
  test('age by the database clock: a record older than snapshotMaxAge is destroyed and recreated', async () => {
    const threadId = uniqueKey('tanstack-age');
    const stores = {
      instances: createInstanceStore(pool),
      locks: createLockStore(pool, { lockKey: tanstackSandboxKey }),
    };
    const config = { ...fakeSandboxConfig(pool, { threadId }), lifecycle: { snapshotMaxAge: '1m' } };
    const sandbox = defineDurableSandbox(pool, config);
    assert.equal(await runChat(threadId, 'run-1', withDurableSandbox(sandbox, stores)), 'ok');
    assert.equal(await runChat(threadId, 'run-2', withDurableSandbox(sandbox, stores)), 'ok');
    assert.deepStrictEqual(await providerCalls(pool, threadId), { create: 1, resume: 1 });
    await pool.query(
      "UPDATE sandbox_store.instances SET updated_at = pg_catalog.now() - interval '2 minutes' WHERE thread_id = $1",
      [threadId],
    );
    assert.equal(await runChat(threadId, 'run-3', withDurableSandbox(sandbox, stores)), 'ok');
    const ids = await createdIds(pool, threadId);
    assert.deepStrictEqual(await providerCalls(pool, threadId), { create: 2, resume: 1, destroy: 1 });
    assert.equal((await threadRecords(pool, threadId))[0]?.providerSandboxId, ids[1]);
  });

  test('destroyOnComplete: destroy runs under the key lock and deletes the record', async () => {
    const threadId = uniqueKey('tanstack-destroy');
    const stores = {
      instances: createInstanceStore(pool),
      locks: createLockStore(pool, { lockKey: tanstackSandboxKey }),
    };
    const config = { ...fakeSandboxConfig(pool, { threadId }), lifecycle: { destroyOnComplete: true } };
    const sandbox = defineDurableSandbox(pool, config, { mode: 'lease' });
    assert.equal(await runChat(threadId, 'run-1', withDurableSandbox(sandbox, stores)), 'ok');
    assert.deepStrictEqual(await providerCalls(pool, threadId), { create: 1, resume: 0, destroy: 1 });
    assert.deepStrictEqual(await threadRecords(pool, threadId), []);
  });
});

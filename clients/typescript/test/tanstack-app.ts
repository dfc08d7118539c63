/**
 * One "app server" for tanstack.test.ts: its own pool, the client wired into
 * the real @tanstack/ai-sandbox with `withDurableSandbox`, and `runs`
 * concurrent chat() runs of one thread with the fake provider.
 *
 *   node tanstack-app.js '{"threadId":..,"mode":"lock"|"lease","runs":n,"createDelayMs":n,"leaseMs":n,"barrier":bool,"durable":bool}'
 *
 * durable: the definition is `defineDurableSandbox` (this package's
 * ensureSandbox) instead of 0.2.4's `defineSandbox`.
 *
 * With barrier, it connects, prints "ready" and waits for a line on stdin.
 * It prints "creating" when its provider starts a create (the parent may
 * kill or stop it there), then one JSON line per run ({ runId, ok, error? })
 * and exits 0 (even if runs failed: the parent judges).
 */
import { createInstanceStore, createLockStore, tanstackSandboxKey, type LockMode } from '../src/index.js';
import { defineDurableSandbox, withDurableSandbox } from '../src/tanstack.js';
import { newPool } from './helpers.js';
import { fakeSandbox, fakeSandboxConfig, runChat } from './tanstack-fakes.js';

interface AppArgs {
  threadId: string;
  mode: LockMode;
  runs: number;
  createDelayMs: number;
  leaseMs: number;
  barrier: boolean;
  durable?: boolean;
}

const args = JSON.parse(process.argv[2] ?? '{}') as AppArgs;
const pool = newPool(Math.max(4, args.runs + 2));
const instances = createInstanceStore(pool);
const locks = createLockStore(pool, { mode: args.mode, leaseMs: args.leaseMs, lockKey: tanstackSandboxKey });
const fake = {
  threadId: args.threadId,
  createDelayMs: args.createDelayMs,
  onCreate: () => process.stdout.write('creating\n'),
};
const sandbox =
  args.durable === true
    ? defineDurableSandbox(pool, fakeSandboxConfig(pool, fake), { mode: args.mode, leaseMs: args.leaseMs })
    : fakeSandbox(pool, fake);
const middleware = withDurableSandbox(sandbox, { instances, locks });

try {
  await pool.query('SELECT 1');
  if (args.barrier) {
    process.stdout.write('ready\n');
    await new Promise<void>((resolve) => {
      process.stdin.once('data', () => resolve());
    });
    process.stdin.destroy();
  }
  const runs = Array.from({ length: args.runs }, async (_, i) => {
    const runId = `run-${process.pid}-${i}`;
    try {
      const text = await runChat(args.threadId, runId, middleware);
      return { runId, ok: text === 'ok', text };
    } catch (error) {
      const e = error as { name?: string; code?: string; message?: string };
      return { runId, ok: false, error: { name: e.name, code: e.code, message: e.message } };
    }
  });
  for (const result of await Promise.all(runs)) process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await pool.end();
}

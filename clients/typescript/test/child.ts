/**
 * One "app server" for processes.test.ts: its own pool, one ensureSandbox
 * with a fake provider that logs every create/resume in the database.
 *
 *   node child.js '{"key":..,"threadId":..,"runId":..,"mode":"lock"|"lease","createDelayMs":n,"barrier":bool}'
 *
 * With barrier, it connects, prints "ready", and waits for a line on stdin
 * before it calls ensureSandbox (so that all children call it at once).
 * Prints one JSON line: { outcome, providerSandboxId, latestRunId, pid }.
 */
import { randomUUID } from 'node:crypto';

import { ensureSandbox, type LockMode } from '../src/index.js';
import { logProviderCall, newPool, sleep } from './helpers.js';

interface ChildArgs {
  key: string;
  threadId: string;
  runId: string;
  mode: LockMode;
  createDelayMs: number;
  barrier: boolean;
}

const args = JSON.parse(process.argv[2] ?? '{}') as ChildArgs;
const pool = newPool(4);
try {
  await pool.query('SELECT 1');
  if (args.barrier) {
    process.stdout.write('ready\n');
    await new Promise<void>((resolve) => {
      process.stdin.once('data', () => resolve());
    });
    process.stdin.destroy();
  }
  const result = await ensureSandbox(pool, {
    key: args.key,
    threadId: args.threadId,
    runId: args.runId,
    provider: 'fake',
    mode: args.mode,
    leaseMs: 30_000, // long against a create and the waits of a loaded machine: no lease runs out here
    create: async () => {
      const id = `sbx-${randomUUID()}`;
      await logProviderCall(pool, args.threadId, 'create', id);
      await sleep(args.createDelayMs);
      return { sandbox: { id }, providerSandboxId: id };
    },
    resume: async (record) => {
      await logProviderCall(pool, args.threadId, 'resume', record.providerSandboxId);
      return { id: record.providerSandboxId };
    },
  });
  process.stdout.write(
    `${JSON.stringify({
      outcome: result.outcome,
      providerSandboxId: result.record.providerSandboxId,
      latestRunId: result.record.latestRunId,
      pid: process.pid,
    })}\n`,
  );
} finally {
  await pool.end();
}

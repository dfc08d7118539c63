/**
 * Across processes: several Node processes, each with its own pool (like
 * separate app servers), call ensureSandbox for one thread at once; a fake
 * provider counts its calls in the database.  Exactly one create.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';

import { createInstanceStore } from '../src/index.js';
import { newPool, providerCalls, uniqueKey } from './helpers.js';

const CHILD = fileURLToPath(new URL('./child.js', import.meta.url));
const PROCESSES = 6;

interface ChildResult {
  outcome: string;
  providerSandboxId: string;
  latestRunId: string;
  pid: number;
}

interface Child {
  ready: Promise<void>;
  go: () => void;
  done: Promise<ChildResult>;
}

function startChild(args: Record<string, unknown>): Child {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(args)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    out += chunk;
    if (out.includes('ready\n')) markReady();
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    err += chunk;
  });
  const done = new Promise<ChildResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0) {
        reject(new Error(`child exited with ${code}: ${err || out}`));
        return;
      }
      try {
        resolve(JSON.parse(last) as ChildResult);
      } catch {
        reject(new Error(`child printed no result: ${out} ${err}`));
      }
    });
  });
  return {
    ready: Promise.race([ready, done.then(() => undefined)]),
    go: () => child.stdin.end('go\n'),
    done,
  };
}

let pool: pg.Pool;
before(() => {
  pool = newPool(2);
});
after(async () => {
  await pool.end();
});

for (const mode of ['lock', 'lease'] as const) {
  describe(`across processes, ${mode} mode`, () => {
    test(`${PROCESSES} processes ensure one new thread at once: exactly one create`, async () => {
      const threadId = uniqueKey(`race-${mode}`);
      const key = `${threadId}/default/fake`;
      const children = Array.from({ length: PROCESSES }, (_, i) =>
        startChild({ key, threadId, runId: `run-${i}`, mode, createDelayMs: 300, barrier: true }),
      );
      await Promise.all(children.map((c) => c.ready));
      for (const c of children) c.go();
      const results = await Promise.all(children.map((c) => c.done));

      assert.equal(new Set(results.map((r) => r.pid)).size, PROCESSES);
      const counts = await providerCalls(pool, threadId);
      assert.equal(counts['create'], 1, JSON.stringify(counts));
      assert.equal(counts['resume'], PROCESSES - 1, JSON.stringify(counts));
      assert.deepStrictEqual(results.map((r) => r.outcome).sort(), [
        'created',
        ...Array<string>(PROCESSES - 1).fill('resumed'),
      ]);
      assert.equal(new Set(results.map((r) => r.providerSandboxId)).size, 1, 'one sandbox for everyone');
    });

    test('run-1 then run-2 of a new thread, in two processes: create, then resume', async () => {
      const threadId = uniqueKey(`seq-${mode}`);
      const key = `${threadId}/default/fake`;
      const run = (runId: string) => startChild({ key, threadId, runId, mode, createDelayMs: 0, barrier: false }).done;

      const first = await run('run-1');
      assert.equal(first.outcome, 'created');
      assert.deepStrictEqual(await providerCalls(pool, threadId), { create: 1, resume: 0 });

      const second = await run('run-2');
      assert.equal(second.outcome, 'resumed');
      assert.deepStrictEqual(await providerCalls(pool, threadId), { create: 1, resume: 1 });
      assert.equal(second.providerSandboxId, first.providerSandboxId);
      assert.equal(second.latestRunId, 'run-2');

      const stored = await createInstanceStore(pool).get(key);
      assert.equal(stored?.providerSandboxId, first.providerSandboxId);
      assert.equal(stored?.latestRunId, 'run-2');
      assert.equal(stored?.threadId, threadId);
    });
  });
}

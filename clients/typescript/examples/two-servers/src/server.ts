/**
 * One app server: a pg pool, the PostgreSQL stores wired into TanStack AI's
 * sandbox middleware, and one chat() run of a thread.
 *
 *   node dist/server.js <threadId> <serverName>
 *
 * Connects with the libpq environment (PGHOST, PGPORT, PGDATABASE, PGUSER,
 * PGPASSWORD). Prints one JSON line per provider call and one for the answer.
 */
import { chat, type ModelMessage } from '@tanstack/ai';
import { defineSandbox, defineWorkspace, localSource } from '@tanstack/ai-sandbox';
import pg from 'pg';
import { createInstanceStore, createLockStore, tanstackSandboxKey } from 'sandbox-store-client';
import { withDurableSandbox } from 'sandbox-store-client/tanstack';

import { FakeModelAdapter } from './fake-model.js';
import { fakeProvider } from './fake-provider.js';

const threadId = process.argv[2] ?? 'thread-42';
const server = process.argv[3] ?? `server-${process.pid}`;
const print = (line: object) => process.stdout.write(`${JSON.stringify({ server, ...line })}\n`);

const pool = new pg.Pool({ max: 5, keepAlive: true });
const instances = createInstanceStore(pool);
const locks = createLockStore(pool, { mode: 'lease', leaseMs: 30_000, lockKey: tanstackSandboxKey });

// Your provider (E2B, Daytona, ...) goes here; the fake keeps its sandboxes in a shared directory.
const provider = fakeProvider({ createMs: 500, onCall: (call, sandboxId) => print({ call, sandboxId }) });

const sandbox = defineSandbox({
  id: 'dev',
  provider,
  workspace: defineWorkspace({ source: localSource('.') }),
  // The file watcher runs `find` in the sandbox every 700 ms to report file
  // changes; the fake sandbox has no shell, so it is off (see the README).
  fileEvents: false,
});

const messages: ModelMessage[] = [{ role: 'user', content: 'What is in my sandbox?' }];

try {
  const answer = await chat({
    adapter: new FakeModelAdapter(), // your model adapter goes here
    messages,
    threadId,
    runId: `${server}-run`,
    stream: false, // the answer as one string; leave it out to stream chunks
    middleware: [...withDurableSandbox(sandbox, { instances, locks })],
  });
  print({ answer });
} finally {
  await pool.end();
}

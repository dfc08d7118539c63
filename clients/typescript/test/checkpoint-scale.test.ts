/**
 * The checkpoint store at realistic sizes: a conversation of a few MB of
 * JSON, and one thread with a couple of thousand checkpoints (list order
 * and time).  Times are reported as diagnostics; the bounds are loose
 * (shared CI machines), there to catch something quadratic, not to
 * benchmark (`make bench` does that).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';

import { createCheckpointStore, type PgSandboxCheckpointStore } from '../src/index.js';
import { checkpoint, conversation, file, scope, utf8Order, type Message } from './checkpoints.js';
import { newPool } from './helpers.js';

let pool: pg.Pool;
let store: PgSandboxCheckpointStore<Message>;
before(() => {
  pool = newPool(2);
  store = createCheckpointStore<Message>(pool);
});
after(async () => {
  await pool.end();
});

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const value = await fn();
  return [value, performance.now() - start];
}

test('a conversation of 5 MB (about 200 messages) and 50 files: stored and read back exactly', async (t) => {
  const s = scope('large');
  const thread = `${s}/thread`;
  const writer = await store.acquireWriter(thread);
  const messages = conversation(s, 5_000_000, 25_000);
  const json = JSON.stringify(messages).length;
  assert.ok(messages.length >= 150 && json >= 5_000_000, `${messages.length} messages, ${json} characters`);
  const big = checkpoint(`${s}/big`, thread, null, 1, {
    conversation: messages,
    files: Array.from({ length: 50 }, (_, i) => file(`src/f${i}.ts`, `${s}/${i}`, 1000 + i)),
  });
  const [, appendMs] = await timed(() => store.append({ checkpoint: big, expectedHeadId: null, writer }));
  const [got, getMs] = await timed(() => store.get(big.id));
  const [listed, listMs] = await timed(() => store.list(thread));
  t.diagnostic(`append ${appendMs.toFixed(0)} ms, get ${getMs.toFixed(0)} ms, list ${listMs.toFixed(0)} ms`);
  assert.deepStrictEqual(got, big);
  assert.deepStrictEqual(listed, [big]);
  for (const ms of [appendMs, getMs, listMs]) assert.ok(ms < 30_000, `${ms} ms`);
  // A child of it that keeps the conversation and adds a message.
  const child = checkpoint(`${s}/child`, thread, big.id, 2, {
    conversation: [...messages, { role: 'user', content: 'one more' }],
    files: big.files,
  });
  await store.append({ checkpoint: child, expectedHeadId: big.id, writer });
  assert.deepStrictEqual(await store.list(thread), [big, child]);
});

test('a thread of 2000 checkpoints: list in order (createdAt, then UTF-8 bytes of the id), in reasonable time', async (t) => {
  const s = scope('many');
  const thread = `${s}/thread`;
  const writer = await store.acquireWriter(thread);
  const COUNT = 2000;
  // About 4 checkpoints per createdAt, with ids whose UTF-8 order is not their UTF-16 order.
  const prefixes = ['😀', 'a', 'ｚ', 'B', 'é', '中'];
  const chain = Array.from({ length: COUNT }, (_, i) => ({
    id: `${s}/${prefixes[i % prefixes.length]}-${i}`,
    createdAt: (i * 7919) % 500,
  }));
  let head: string | null = null;
  const [, appendMs] = await timed(async () => {
    for (const { id, createdAt } of chain) {
      const c = checkpoint(id, thread, head, createdAt);
      head = (await store.append({ checkpoint: c, expectedHeadId: head, writer })).headId;
    }
  });
  const [listed, listMs] = await timed(() => store.list(thread));
  t.diagnostic(
    `${COUNT} appends ${appendMs.toFixed(0)} ms (${(appendMs / COUNT).toFixed(1)} ms each), list ${listMs.toFixed(0)} ms`,
  );
  const expected = [...chain].sort((a, b) => a.createdAt - b.createdAt || utf8Order(a.id, b.id)).map((c) => c.id);
  assert.notDeepStrictEqual(
    [...chain].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((c) => c.id),
    expected,
    'UTF-16 order differs, so the order is tested',
  );
  assert.equal(listed.length, COUNT);
  assert.deepStrictEqual(
    listed.map((c) => c.id),
    expected,
  );
  // Each listed checkpoint is the one appended (its parent is the previous one of the chain).
  const parentOf = new Map(chain.map((c, i) => [c.id, i === 0 ? null : chain[i - 1]!.id]));
  for (const c of listed) assert.equal(c.parentCheckpointId, parentOf.get(c.id));
  assert.equal(await store.getHead(thread), chain[COUNT - 1]!.id);
  assert.equal((await store.get(chain[1000]!.id))?.createdAt, chain[1000]!.createdAt);
  assert.ok(listMs < 10_000, `list took ${listMs} ms`);
  assert.ok(appendMs / COUNT < 200, `an append took ${appendMs / COUNT} ms on average`);
});

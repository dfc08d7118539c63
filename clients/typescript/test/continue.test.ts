/**
 * Continuing a run after its log (resumeOf, continueAfterLog): what a
 * takeover adds to the log never repeats or forks the answer the log holds.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { continueAfterLog, resumeOf } from '../src/index.js';

const start = (messageId: string) => ({ type: 'TEXT_MESSAGE_START', messageId, role: 'assistant' });
const text = (messageId: string, delta: string) => ({ type: 'TEXT_MESSAGE_CONTENT', messageId, delta });
const end = (messageId: string) => ({ type: 'TEXT_MESSAGE_END', messageId });
const marker = { type: 'CUSTOM', name: 'run.accepted', value: {} };

async function* from<T>(items: T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

async function all<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

test('resumeOf: the last assistant message, its text so far, open or not, started, terminal', () => {
  assert.deepEqual(resumeOf([]), {
    chunks: [],
    messageId: undefined,
    text: '',
    open: false,
    started: false,
    terminal: undefined,
  });
  const log = [marker, { type: 'RUN_STARTED' }, start('m1'), text('m1', 't0 '), text('m1', 't1 ')];
  const open = resumeOf(log);
  assert.equal(open.messageId, 'm1');
  assert.equal(open.text, 't0 t1 ');
  assert.equal(open.open, true);
  assert.equal(open.started, true);
  assert.equal(open.terminal, undefined);
  assert.deepEqual(open.chunks, log);
  const closed = resumeOf([...log, end('m1'), { type: 'RUN_FINISHED' }]);
  assert.equal(closed.open, false);
  assert.deepEqual(closed.terminal, { type: 'RUN_FINISHED' });
  // A user message does not count; a later assistant message does.
  const two = resumeOf([start('m1'), text('m1', 'a'), end('m1'), { ...start('u'), role: 'user' }, start('m2')]);
  assert.equal(two.messageId, 'm2');
  assert.equal(two.text, '');
  assert.equal(two.open, true);
});

test('continueAfterLog: an open message goes on under its own id; no second RUN_STARTED or message start', async () => {
  const log = [marker, { type: 'RUN_STARTED' }, start('m1'), text('m1', 't0 ')];
  const agent = [
    { type: 'RUN_STARTED' },
    start('m9'),
    text('m9', 't1 '),
    text('m9', 't2 '),
    end('m9'),
    { type: 'RUN_FINISHED' },
  ];
  assert.deepEqual(await all(continueAfterLog(log, from(agent))), [
    text('m1', 't1 '),
    text('m1', 't2 '),
    end('m1'),
    { type: 'RUN_FINISHED' },
  ]);
});

test('continueAfterLog: a tool call of the continued message names the open message as its parent', async () => {
  const log = [{ type: 'RUN_STARTED' }, start('m1'), text('m1', 'let me look ')];
  const call = { type: 'TOOL_CALL_START', toolCallId: 'c1', toolName: 'search', parentMessageId: 'm9' };
  assert.deepEqual(await all(continueAfterLog(log, from([start('m9'), call, end('m9')]))), [
    { ...call, parentMessageId: 'm1' },
    end('m1'),
  ]);
});

test('continueAfterLog: after a closed message, an empty new message is dropped and a non-empty one kept', async () => {
  const log = [{ type: 'RUN_STARTED' }, start('m1'), text('m1', 'all of it'), end('m1')];
  assert.deepEqual(await all(continueAfterLog(log, from([start('m2'), end('m2'), { type: 'RUN_FINISHED' }]))), [
    { type: 'RUN_FINISHED' },
  ]);
  assert.deepEqual(await all(continueAfterLog(log, from([start('m2'), text('m2', 'more'), end('m2')]))), [
    start('m2'),
    text('m2', 'more'),
    end('m2'),
  ]);
});

test('continueAfterLog: a log with nothing but the marker passes the stream on as it is', async () => {
  const agent = [{ type: 'RUN_STARTED' }, start('m1'), text('m1', 'x'), end('m1'), { type: 'RUN_FINISHED' }];
  assert.deepEqual(await all(continueAfterLog([marker], from(agent))), agent);
});

/**
 * bench/browser/resumable-replica.mjs: one replica of the chat-resume
 * example's app on Vercel's `resumable-stream` (2.2.13, Redis) instead of
 * sandbox_store, for the browser phase's comparison (bench/browser.sh).
 * It serves the example's own page (public/index.html, dist/page.js:
 * `@tanstack/ai-client` 0.33 with `stallFetch`) and streams the example's
 * counting model (dist/counting-model.js) through TanStack AI 0.58's
 * `chat()`, as the example's server does; only the route differs:
 *
 * - POST /api/chat without `Last-Event-ID` (a fresh question): the
 *   stream id is the run id the page sends (`X-Run-Id`), and the answer is
 *   `resumableStream(id, makeStream)`: this replica produces it (and keeps
 *   its text in memory, as the library does) unless the id is in progress
 *   elsewhere, when it follows that producer;
 * - a reconnect (the page re-sends the POST with `Last-Event-ID`, or a
 *   GET with ?offset): `resumeExistingStream(id, skipCharacters)`, the
 *   library's resume.  Its answers: a stream (a live producer answered),
 *   `null` (the stream is done: 204), `undefined` (no such stream: 404),
 *   or an error (no producer answered within the library's second: the
 *   route's 500, as an unhandled error of a route is).
 *   With ON_LOST=restart, that error starts a second producer for the same
 *   id instead (`createNewResumableStream(id, makeStream)`): what an app
 *   can do when the producer is gone, since the partial answer was only in
 *   its memory.
 *
 * Every SSE event carries `id: <stream id>:<character offset of the
 * event>`, so a reconnect names the stream and where to resume
 * (`skipCharacters`); the event at that offset comes again and the page's
 * client drops it as already seen.
 *
 *   PORT=0 REPLICA=a REDIS_SOCKET=/path/redis.sock EXAMPLE=<chat-resume dir> \
 *     TOKENS=400 TOKEN_MS=20 ON_LOST=fail node resumable-replica.mjs
 *
 * Prints `listening <port>`, then one `@ <json>` line per thing the
 * benchmark reads: {event: 'produce', id, second} when this replica starts
 * producing an answer, {event: 'produced', id, second, tokens} when it has
 * produced all of it, {event: 'resume', id, result} for each reconnect.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';

import { createClient } from 'redis';
import { createResumableStreamContext } from 'resumable-stream';

const env = (name, fallback) => process.env[name] ?? fallback;
const replica = env('REPLICA', `replica-${process.pid}`);
const example = env('EXAMPLE', '');
if (example === '') throw new Error('EXAMPLE: the chat-resume example directory (built)');
const exampleUrl = pathToFileURL(`${example.replace(/\/$/, '')}/`);
const onLost = env('ON_LOST', 'fail');

// The example's model and TanStack AI from the example's own node_modules (0.58).
const { CountingModel } = await import(new URL('dist/counting-model.js', exampleUrl).href);
const { chat, chatParamsFromRequestBody } = await import(
  new URL('node_modules/@tanstack/ai/dist/esm/index.js', exampleUrl).href
);
const model = new CountingModel(Number(env('TOKENS', 400)), Number(env('TOKEN_MS', 20)));

const socket = { path: env('REDIS_SOCKET', '/tmp/redis.sock') };
const publisher = createClient({ socket });
const subscriber = createClient({ socket });
publisher.on('error', (error) => console.error(`${replica}: redis publisher:`, error.message));
subscriber.on('error', (error) => console.error(`${replica}: redis subscriber:`, error.message));
await Promise.all([publisher.connect(), subscriber.connect()]);
const streams = createResumableStreamContext({ waitUntil: null, publisher, subscriber });

const say = (line) => process.stdout.write(`@ ${JSON.stringify({ replica, at: Date.now(), ...line })}\n`);

/** The answer to `body` as SSE text, each event with `id: <id>:<offset>`. */
function makeStream(id, body, second) {
  return () => {
    say({ event: 'produce', id, second });
    let iterator;
    let offset = 0;
    let count = 0;
    const event = (chunk) => {
      const text = `id: ${id}:${offset}\ndata: ${JSON.stringify(chunk)}\n\n`;
      offset += text.length;
      return text;
    };
    return new ReadableStream({
      async start() {
        const { messages } = await chatParamsFromRequestBody(body);
        iterator = chat({ adapter: model, messages, runId: id, threadId: body?.threadId ?? id })[
          Symbol.asyncIterator
        ]();
      },
      async pull(controller) {
        const { done, value } = await iterator.next();
        if (done) {
          say({ event: 'produced', id, second, tokens: count });
          controller.close();
          return;
        }
        if (value?.type === 'TEXT_MESSAGE_CONTENT') count += 1;
        controller.enqueue(event(value));
      },
    });
  };
}

/** A stream of strings onto node:http's response; a page that leaves stops our reading, not the producer. */
async function sendStream(res, stream) {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  res.flushHeaders();
  const reader = stream.getReader();
  res.on('close', () => void reader.cancel().catch(() => undefined));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || res.destroyed) break;
      res.write(value);
    }
  } finally {
    res.end();
  }
}

function parseResume(value) {
  const at = value.lastIndexOf(':');
  if (at <= 0) return null;
  const offset = Number(value.slice(at + 1));
  return Number.isInteger(offset) && offset >= 0 ? { id: value.slice(0, at), offset } : null;
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

async function chatRoute(req, res) {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const body = req.method === 'POST' ? await readBody(req) : undefined;
  if (req.method === 'POST' && body === undefined) return void res.writeHead(400).end('The body is not JSON.');
  const last = req.headers['last-event-id'] ?? url.searchParams.get('offset');
  if (typeof last !== 'string' || last === '') {
    if (req.method !== 'POST') return void res.writeHead(400).end('No resume offset.');
    const header = req.headers['x-run-id'];
    const id = typeof header === 'string' && header !== '' ? header : (body?.runId ?? randomUUID());
    const stream = await streams.resumableStream(id, makeStream(id, body, false));
    if (stream === null) return void res.writeHead(204).end();
    return sendStream(res, stream);
  }
  const resume = parseResume(last);
  if (resume === null) return void res.writeHead(400).end('Bad Last-Event-ID.');
  let stream;
  try {
    stream = await streams.resumeExistingStream(resume.id, resume.offset);
  } catch (error) {
    say({ event: 'resume', id: resume.id, result: 'error', message: String(error?.message ?? error) });
    if (onLost === 'restart' && body !== undefined) {
      // The producer is gone, and with it the partial answer: a second producer starts the answer again.
      const again = await streams.createNewResumableStream(resume.id, makeStream(resume.id, body, true));
      if (again !== null) return sendStream(res, again);
    }
    return void res.writeHead(500).end(`resume failed: ${String(error?.message ?? error)}`);
  }
  say({ event: 'resume', id: resume.id, result: stream === null ? 'done' : stream === undefined ? 'none' : 'stream' });
  if (stream === null) return void res.writeHead(204).end();
  if (stream === undefined) return void res.writeHead(404).end('No such stream.');
  return sendStream(res, stream);
}

const assets = {
  '/': { type: 'text/html', file: new URL('public/index.html', exampleUrl) },
  '/page.js': { type: 'text/javascript', file: new URL('dist/page.js', exampleUrl) },
};

async function handle(req, res) {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (path === '/health') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end(replica);
  if (path === '/api/chat' && (req.method === 'POST' || req.method === 'GET')) return chatRoute(req, res);
  const asset = assets[path];
  if (asset !== undefined && req.method === 'GET') {
    res.writeHead(200, { 'Content-Type': asset.type, 'Cache-Control': 'no-store' });
    return void res.end(readFileSync(asset.file));
  }
  res.writeHead(404).end();
}

const server = createServer((req, res) => {
  handle(req, res).catch((error) => {
    console.error(`${replica}:`, error);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});
server.listen(Number(env('PORT', 0)), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address !== null ? address.port : 0}\n`);
});

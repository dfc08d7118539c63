/**
 * One app replica for the browser tests: node:http around
 * createChatHandlers, with a fake model, serving the page too.
 *
 *   node replica.js '{"name":"A","port":0,"tokens":300,"tokenMs":15,"leaseMs":3000,"heartbeatMs":500,"page":"<dir>"}'
 *
 * - GET /, GET /page.js: the page (index.html written here, page.js the
 *   bundle in `page`);
 * - GET /health: 200 "<name>" (the load balancer's check);
 * - POST /api/chat, GET /api/chat: createChatHandlers' POST and GET.
 *
 * The route and its agent are the chat-resume example's
 * (examples/chat-resume/src/server.ts): its counting model streams the
 * tokens "t0 " .. "t<tokens-1> ", one every `tokenMs`; on a takeover it is
 * given the stored text (resume.text) as the start of its reply and goes on
 * from the first token that text lacks.  Every chunk it produces carries
 * `replica: <name>` (so the log tells who wrote what).
 *
 * Prints "listening <port>", then one line "@ <JSON>" for: each run it
 * drives ({ drive, resumed, from, messageId }: fresh from 0, or a takeover
 * from the first token not stored, in the stored message), each run write it
 * sends to the database and its outcome ({ write: 'run_log_append' |
 * 'run_log_close' | 'run_update' | 'run_claim' | 'run_log_upsert', ok,
 * sqlstate, sentAt: Date.now() when it was sent }), the end of a drive
 * ({ drove, to }), and a drive's error ({ failed, error }: a claim lost, a
 * write refused).
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';

import { chat, chatParamsFromRequestBody, type StreamChunk } from '@tanstack/ai';
import type pg from 'pg';

import { CountingModel, nextToken } from '../../examples/chat-resume/src/counting-model.js';
import { createChatHandlers } from '../../src/chat-handlers.js';
import { newPool } from '../helpers.js';

export interface ReplicaArgs {
  name: string;
  port: number;
  tokens: number;
  tokenMs: number;
  leaseMs: number;
  heartbeatMs: number;
  /** The directory of the page's bundle (page.js). */
  page: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as ReplicaArgs;

function emit(line: Record<string, unknown>): void {
  process.stdout.write(`@ ${JSON.stringify(line)}\n`);
}

/** Reports every run write each connection of `pool` sends, with its outcome. */
function watchWrites(pool: pg.Pool): void {
  const writes = /sandbox_store\.(run_log_append|run_log_upsert|run_log_close|run_update|run_claim)\(/;
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    (client as { query: unknown }).query = (...a: unknown[]) => {
      const text = typeof a[0] === 'string' ? a[0] : (a[0] as { text?: string } | undefined)?.text;
      const write = typeof text === 'string' ? writes.exec(text)?.[1] : undefined;
      if (write === undefined) return query(...a);
      const sentAt = Date.now();
      const report = (error: unknown) =>
        emit({
          write,
          ok: error == null,
          ...(error == null ? {} : { sqlstate: (error as { code?: string }).code }),
          sentAt,
        });
      const last = a.at(-1);
      if (typeof last === 'function') {
        return query(...a.slice(0, -1), (error: unknown, ...rest: unknown[]) => {
          report(error);
          return (last as (...r: unknown[]) => unknown)(error, ...rest);
        });
      }
      const result = query(...a);
      if (result instanceof Promise) result.then(() => report(null), report);
      return result;
    };
  });
}

const pool = newPool(10);
watchWrites(pool);

const model = new CountingModel(args.tokens, args.tokenMs);

// The chat-resume example's route (examples/chat-resume/src/server.ts), with what it does printed.
const { POST, GET } = createChatHandlers({
  pool,
  leaseMs: args.leaseMs,
  heartbeatMs: args.heartbeatMs,
  chat: async function* ({ body, resume, signal, runId, threadId }) {
    const history = body === undefined ? [] : (await chatParamsFromRequestBody(body)).messages;
    const messages =
      resume === undefined ? history : [...history, { role: 'assistant' as const, content: resume.text }];
    const from = resume === undefined ? 0 : nextToken(resume.text);
    emit({ drive: runId, resumed: resume !== undefined, from, messageId: resume?.messageId });
    const abortController = new AbortController();
    signal.addEventListener('abort', () => abortController.abort(signal.reason), { once: true });
    let last = from - 1;
    for await (const chunk of chat({ adapter: model, messages, runId, threadId, abortController })) {
      const delta = (chunk as { delta?: unknown }).delta;
      if (chunk.type === 'TEXT_MESSAGE_CONTENT' && typeof delta === 'string') last = nextToken(delta) - 1;
      yield { ...chunk, replica: args.name } as StreamChunk;
    }
    emit({ drove: runId, to: last });
  },
  onError: (error, { runId }) => emit({ failed: runId, error: String(error) }),
});

const indexHtml = `<!doctype html>
<html>
<head><meta charset="utf-8"><title>durable chat</title></head>
<body>
<p>replica: <span id="replica">${args.name}</span></p>
<div id="messages"></div>
<script type="module" src="/page.js"></script>
</body>
</html>
`;

function toRequest(req: IncomingMessage, body: Buffer): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
  }
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, {
    method: req.method ?? 'GET',
    headers,
    ...(req.method === 'POST' ? { body: new Uint8Array(body) } : {}),
  });
}

/** Sends the Response; stops reading its body when the client leaves (the run goes on without it). */
async function send(res: ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.flushHeaders();
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  res.on('close', () => {
    reader.cancel().catch(() => undefined);
  });
  for (;;) {
    const { done, value } = await reader.read();
    if (done || res.destroyed) break;
    res.write(value);
  }
  res.end();
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/health') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end(args.name);
    return;
  }
  if (req.method === 'GET' && path === '/') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(indexHtml);
    return;
  }
  if (req.method === 'GET' && path === '/page.js') {
    res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(join(args.page, 'page.js')));
    return;
  }
  if (path === '/api/chat' && (req.method === 'POST' || req.method === 'GET')) {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const request = toRequest(req, Buffer.concat(parts));
    await send(res, await (req.method === 'POST' ? POST(request) : GET(request)));
    return;
  }
  res.writeHead(404).end();
}

const server = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    emit({ error: String(error) });
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});
server.listen(args.port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address !== null ? address.port : 0}\n`);
});

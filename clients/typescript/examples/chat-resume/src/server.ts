/**
 * One replica of the chat app: node:http serving the page and the durable
 * chat route (`createChatHandlers`), on its own pool.
 *
 *   PORT=3001 REPLICA=a node dist/server.js
 *
 * Connects with the libpq environment (PGHOST, PGPORT, PGDATABASE, PGUSER,
 * PGPASSWORD).  Settings (environment): LEASE_MS (the driver lease,
 * default 30 000), HEARTBEAT_MS (default 5 000), TOKENS and TOKEN_MS (the
 * counting model's answer: default 400 tokens, one every 20 ms).  Prints
 * `listening <port>`; errors of drives (a claim lost to another replica, a
 * write refused) go to stderr.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';

import { chat, chatParamsFromRequestBody } from '@tanstack/ai';
import pg from 'pg';
import { createChatHandlers } from 'sandbox-store-client/chat';

import { CountingModel } from './counting-model.js';

const replica = process.env['REPLICA'] ?? `replica-${process.pid}`;
const setting = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

const pool = new pg.Pool({ max: 10, keepAlive: true });
const model = new CountingModel(setting('TOKENS', 400), setting('TOKEN_MS', 20));

// #region route (the client README's "Durable runs" shows this region as it is)
const { POST, GET } = createChatHandlers({
  pool,
  leaseMs: setting('LEASE_MS', 30_000), // how long a stopped replica holds its runs
  heartbeatMs: setting('HEARTBEAT_MS', 5_000),
  // The agent of one run, on the replica that drives it: the fresh POST's, or the one that took it over.
  chat: async function* ({ body, resume, signal, runId, threadId }) {
    // The request's conversation (a takeover served by a GET has no body: load the thread's messages from your store).
    const history = body === undefined ? [] : (await chatParamsFromRequestBody(body)).messages;
    // A takeover: the partial answer the log holds is the start of the model's reply.
    const messages =
      resume === undefined ? history : [...history, { role: 'assistant' as const, content: resume.text }];
    const abortController = new AbortController();
    signal.addEventListener('abort', () => abortController.abort(signal.reason), { once: true });
    yield* chat({ adapter: model, messages, runId, threadId, abortController });
  },
  onError: (error, { runId }) => console.error(`run ${runId}:`, error),
});
// #endregion

const page = {
  '/': { type: 'text/html', file: fileURLToPath(new URL('../public/index.html', import.meta.url)) },
  '/page.js': { type: 'text/javascript', file: fileURLToPath(new URL('../dist/page.js', import.meta.url)) },
} as const;

/** node:http's request as a fetch Request (the body read whole: a chat POST is small). */
async function toRequest(req: IncomingMessage): Promise<Request> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = req.method === 'POST' ? Buffer.concat(chunks) : undefined;
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, {
    method: req.method ?? 'GET',
    headers,
    ...(body === undefined ? {} : { body }),
  });
}

/** A fetch Response onto node:http's; a client that leaves cancels the body (the handlers stop reading for it). */
async function send(res: ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.flushHeaders();
  if (response.body === null) return void res.end();
  const reader = response.body.getReader();
  // The client may have left while the route was answering: then 'close' has fired already.
  if (res.destroyed) return void reader.cancel().catch(() => undefined);
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

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (path === '/health') {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    return void res.end(replica);
  }
  if (path === '/api/chat' && (req.method === 'POST' || req.method === 'GET')) {
    const request = await toRequest(req);
    return send(res, req.method === 'POST' ? await POST(request) : await GET(request));
  }
  const asset = page[path as keyof typeof page];
  if (asset !== undefined && req.method === 'GET') {
    res.writeHead(200, { 'Content-Type': asset.type, 'Cache-Control': 'no-store' });
    return void res.end(readFileSync(asset.file));
  }
  res.writeHead(404);
  res.end();
}

const server = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    console.error(`${replica}:`, error);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});
server.listen(Number(process.env['PORT'] ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address !== null ? address.port : 0}\n`);
});

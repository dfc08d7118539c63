/**
 * stallFetch (sandbox-store-client/browser) against a local HTTP server:
 * silence before the headers or in the body fails the request with
 * StreamStalledError, a 502/503/504 is a network error, a stream that
 * keeps sending (heartbeats) is never cut, and the caller's abort is
 * passed on as it is.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';

import { StreamStalledError, stallFetch } from '../src/browser.js';

let server: Server;
let base: string;
const open = new Set<import('node:http').ServerResponse>();

before(async () => {
  server = createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    if (req.url === '/silent-body') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(': hello\n\n'); // then nothing
    } else if (req.url === '/no-headers') {
      // never answers
    } else if (req.url?.startsWith('/status/')) {
      res.writeHead(Number(req.url.slice('/status/'.length)));
      res.end('upstream gone');
    } else if (req.url === '/beats') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      let n = 0;
      const timer = setInterval(() => {
        res.write(': keep-alive\n\n');
        if (++n === 10) {
          clearInterval(timer);
          res.end('data: {"type":"RUN_FINISHED"}\n\n');
        }
      }, 50);
      res.on('close', () => clearInterval(timer));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  for (const res of open) res.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function readAll(response: Response): Promise<string> {
  return await response.text();
}

test('a body that goes silent fails with StreamStalledError after silenceMs', async () => {
  // 2 s: the headers and the first comment, sent at once, come well within it on a loaded machine.
  const fetch = stallFetch({ silenceMs: 2_000 });
  const response = await fetch(`${base}/silent-body`);
  assert.equal(response.status, 200);
  await assert.rejects(readAll(response), (error: unknown) => error instanceof StreamStalledError);
});

test('a request whose headers never come fails with StreamStalledError', async () => {
  const fetch = stallFetch({ silenceMs: 300 });
  await assert.rejects(fetch(`${base}/no-headers`), (error: unknown) => error instanceof StreamStalledError);
});

test('502, 503 and 504 are network errors (TypeError); other statuses are answers', async () => {
  const fetch = stallFetch();
  for (const status of [502, 503, 504]) {
    await assert.rejects(fetch(`${base}/status/${status}`), TypeError, String(status));
  }
  const notFound = await fetch(`${base}/status/404`);
  assert.equal(notFound.status, 404);
  assert.equal(await notFound.text(), 'upstream gone');
});

test('a stream that keeps sending is never cut, however long it lasts', async () => {
  // 10 beats 50 ms apart (0.5 s in all) against a silence of 2 s: a loaded machine still beats in time.
  const fetch = stallFetch({ silenceMs: 2_000 });
  const text = await readAll(await fetch(`${base}/beats`));
  assert.match(text, /RUN_FINISHED/);
  assert.equal(text.split(': keep-alive').length - 1, 10);
});

test("the caller's abort is passed on as it is, not as a stall", async () => {
  const fetch = stallFetch({ silenceMs: 60_000 });
  const controller = new AbortController();
  const reason = new Error('the user left');
  const response = await fetch(`${base}/silent-body`, { signal: controller.signal });
  const reading = readAll(response);
  controller.abort(reason);
  await assert.rejects(reading, (error: unknown) => !(error instanceof StreamStalledError));
  await assert.rejects(
    fetch(`${base}/no-headers`, { signal: AbortSignal.abort(reason) }),
    (error: unknown) => error === reason,
  );
});

test('silenceMs must be a positive number', () => {
  assert.throws(() => stallFetch({ silenceMs: 0 }), RangeError);
  assert.throws(() => stallFetch({ silenceMs: Number.NaN }), RangeError);
});

/**
 * bench/browser/two-producers.mjs: what resumable-stream 2.2.13 does with
 * a second producer for one stream id, without a browser (run.mjs calls
 * it for scenario redis-two).  Each "replica" is a context of its own with
 * its own two Redis connections, as two processes would have; a producer
 * streams "<name>0 <name>1 ..." one token every tokenMs.  Four cases:
 *
 *   follow    B calls resumableStream(id) while A produces: B follows A
 *             (the library's counter says the id is taken)
 *   dead      A's Redis connections close mid-answer (what its death looks
 *             like to Redis), then B calls resumableStream(id), and a
 *             reader resumeExistingStream(id)
 *   two       B calls createNewResumableStream(id) while A produces; then
 *             a reader resumeExistingStream(id, 0)
 *   done      the same two producers; A finishes first; a reader that
 *             comes after A's end, while B still produces
 *
 * Returns one line of facts per case.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { createClient } from 'redis';
import { createResumableStreamContext } from 'resumable-stream';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function replica(socketPath) {
  const publisher = createClient({ socket: { path: socketPath } });
  const subscriber = createClient({ socket: { path: socketPath } });
  publisher.on('error', () => undefined);
  subscriber.on('error', () => undefined);
  await Promise.all([publisher.connect(), subscriber.connect()]);
  const ctx = createResumableStreamContext({ waitUntil: null, publisher, subscriber });
  return {
    ctx,
    // After what the library still has in flight (an end's SET and UNSUBSCRIBE): a disconnect would reject them unhandled.
    close: async () => {
      await sleep(200);
      await Promise.allSettled([publisher.quit(), subscriber.quit()]);
    },
  };
}

/** "<name>0 <name>1 ... <name>(n-1) ", one token every ms. */
function tokens(name, n, ms) {
  return () => {
    let i = 0;
    return new ReadableStream({
      async pull(controller) {
        if (i >= n) return controller.close();
        await sleep(ms);
        controller.enqueue(`${name}${i++} `);
      },
    });
  };
}

/** Everything a stream gives within ms (or until it ends). */
async function drain(stream, ms) {
  if (stream === null || stream === undefined) return String(stream);
  const reader = stream.getReader();
  let text = '';
  const deadline = Date.now() + ms;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const next = await Promise.race([reader.read(), sleep(left).then(() => null)]);
    if (next === null || next.done) break;
    text += next.value;
  }
  void reader.cancel().catch(() => undefined);
  return text;
}

const count = (text, name) => (text.match(new RegExp(`\\b${name}\\d+ `, 'g')) ?? []).length;
const outcome = async (promise) => {
  const started = Date.now();
  try {
    const value = await promise;
    return { value, ms: Date.now() - started };
  } catch (error) {
    return { error: String(error?.message ?? error), ms: Date.now() - started };
  }
};

export async function twoProducers(socketPath, { n = 50, tokenMs = 20 } = {}) {
  const lines = [];
  const run = `two-${Date.now()}`;

  // follow: resumableStream by a second replica while the first produces.
  {
    const a = await replica(socketPath);
    const b = await replica(socketPath);
    const id = `${run}-follow`;
    let bProduced = false;
    const first = await a.ctx.resumableStream(id, tokens('a', n, tokenMs));
    const firstText = drain(first, 60_000);
    await sleep(10 * tokenMs);
    const makeB = tokens('b', n, tokenMs);
    const second = await b.ctx.resumableStream(id, () => {
      bProduced = true;
      return makeB();
    });
    const text = await drain(second, 60_000);
    await firstText;
    lines.push(
      `follow: B's resumableStream for an id A produces: B ${bProduced ? 'produced a second answer' : 'produced nothing'}; ` +
        `B's response held ${count(text, 'a')} of A's ${n} tokens and ${count(text, 'b')} of its own`,
    );
    await Promise.all([a.close(), b.close()]);
  }

  // dead: A, a process of its own, killed (-9) mid-answer.
  {
    const b = await replica(socketPath);
    const id = `${run}-dead`;
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), 'produce', socketPath, id, String(n), String(tokenMs)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout.setEncoding('utf8');
    let had = 0;
    await new Promise((resolve, reject) => {
      child.on('exit', () => reject(new Error('the producer exited early')));
      child.stdout.on('data', (text) => {
        had += count(text, 'a');
        if (had >= 10) resolve();
      });
    });
    child.removeAllListeners('exit');
    child.kill('SIGKILL');
    let bProduced = false;
    const makeB = tokens('b', n, tokenMs);
    const again = await outcome(
      b.ctx.resumableStream(id, () => {
        bProduced = true;
        return makeB();
      }),
    );
    const resumed = await outcome(b.ctx.resumeExistingStream(id, 0));
    const state = await b.ctx.hasExistingStream(id);
    lines.push(
      `dead: A killed after it had sent ${had} tokens; B's resumableStream for the id: ${again.error ?? 'a stream'} after ${again.ms} ms` +
        ` (${bProduced ? 'B produced' : 'B produced nothing'}); resumeExistingStream: ${resumed.error ?? String(resumed.value)} after ${resumed.ms} ms;` +
        ` hasExistingStream still answers ${state} (the key lives 24 h); the ${had} tokens A had sent are nowhere to be read`,
    );
    await b.close();
  }

  // two and done: createNewResumableStream for an id A produces.
  {
    const a = await replica(socketPath);
    const b = await replica(socketPath);
    const c = await replica(socketPath);
    const id = `${run}-two`;
    const first = await a.ctx.resumableStream(id, tokens('a', n, tokenMs));
    const firstText = drain(first, 60_000);
    await sleep(10 * tokenMs);
    const second = await b.ctx.createNewResumableStream(id, tokens('b', 2 * n, tokenMs));
    const secondText = drain(second, 60_000);
    await sleep(5 * tokenMs);
    const reader = await outcome(c.ctx.resumeExistingStream(id, 0));
    const read = await drain(reader.value, 60_000);
    const interleaved = /a\d+ b\d+ a\d+ /.test(read) || /b\d+ a\d+ b\d+ /.test(read);
    lines.push(
      `two: B's createNewResumableStream for an id A produces: B started at once (nothing checks the id); a reader's ` +
        `resumeExistingStream got ${count(read, 'a')} of A's ${n} tokens and ${count(read, 'b')} of B's ${2 * n} in one stream` +
        `${interleaved ? ', interleaved' : ''}, which ended when A ended`,
    );
    await firstText; // A ends first: the id is marked done while B produces on
    const late = await outcome(c.ctx.resumeExistingStream(id, 0));
    const bText = await secondText;
    lines.push(
      `done: after A's end, while B produces (it produced ${count(bText, 'b')} tokens in all), a new reader's resumeExistingStream answered ` +
        `${late.error ?? (late.value === null ? 'null (done)' : late.value === undefined ? 'undefined (no stream)' : 'a stream')}`,
    );
    await Promise.all([a.close(), b.close(), c.close()]);
  }
  return lines;
}

// The killed producer of case dead: node two-producers.mjs produce SOCKET ID N MS
// streams "a0 a1 ..." through resumableStream and prints what it sends.
if (process.argv[2] === 'produce' && process.argv[1] === fileURLToPath(import.meta.url)) {
  const [socketPath, id, n, ms] = process.argv.slice(3);
  const a = await replica(socketPath);
  const stream = await a.ctx.resumableStream(id, tokens('a', Number(n), Number(ms)));
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    process.stdout.write(value);
  }
  await a.close();
}

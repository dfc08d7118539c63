/**
 * examples/chat-resume, run as its README says on a fresh copy of this
 * package (what git tracks: no node_modules, dist or lock file of the
 * example): `npm ci` here, `npm install` and `npm run build` in the
 * example, then `npm start` (on a free port) serves the page through the
 * balancer and answers a chat POST, the way @tanstack/ai-client sends it,
 * with every token once, and the run ends completed.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { createRunStore } from '../../../src/index.js';
import { TEST_DB, newPool, sleep, within } from '../../helpers.js';

const root = fileURLToPath(new URL('../../../../../../../', import.meta.url)); // test/lines/0.58/build/test/lines/0.58/ -> the package
const exampleReadme = readFileSync(join(root, 'examples', 'chat-resume', 'README.md'), 'utf8');

/** The example README's first sh block: its commands, without comments, `&&` split. */
function readmeCommands(): string[] {
  const block = /```sh\n([\s\S]*?)```/.exec(exampleReadme);
  assert.ok(block?.[1] !== undefined, 'the README has a sh block');
  return block[1]
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '')
    .flatMap((line) => line.split('&&').map((command) => command.trim()));
}

/** Three free ports in a row (the balancer's, and the replicas' after it). */
async function freeBase(): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const free = await Promise.all(
      [0, 1, 2].map(
        (i) =>
          new Promise<boolean>((done) => {
            const probe = createServer();
            probe.once('error', () => done(false));
            probe.listen(base + i, '127.0.0.1', () => probe.close(() => done(true)));
          }),
      ),
    );
    if (free.every(Boolean)) return base;
  }
}

test("examples/chat-resume builds and runs from its README's steps on a fresh copy: the page, and an answer through the balancer", async () => {
  const work = mkdtempSync(join(tmpdir(), 'sandbox-store-chat-resume-'));
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(name) || /^npm_config_(cache|registry)$/i.test(name)) env[name] = value;
  }
  Object.assign(env, {
    PGDATABASE: TEST_DB,
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  });
  const pool = newPool(2);
  let started: ReturnType<typeof spawn> | undefined;
  try {
    const client = join(work, 'clients', 'typescript');
    mkdirSync(client, { recursive: true });
    const left =
      /^(node_modules|dist|build|.*\.tgz|test\/.*\/(node_modules|build)|examples\/[^/]+\/(node_modules|dist|package-lock\.json))$/;
    cpSync(root, client, { recursive: true, filter: (path) => !left.test(relative(root, path).split(sep).join('/')) });

    const commands = readmeCommands();
    assert.deepEqual(commands, [
      'cd clients/typescript',
      'npm ci',
      'cd examples/chat-resume',
      'npm install',
      'npm run build',
      'npm start',
    ]);
    let cwd = work;
    for (const command of commands.slice(0, -1)) {
      if (command.startsWith('cd ')) {
        cwd = resolve(cwd, command.slice(3));
        continue;
      }
      const run = spawnSync('sh', ['-c', command], { cwd, env, encoding: 'utf8' });
      assert.equal(run.status, 0, `${command} (in ${relative(work, cwd)}) failed:\n${run.stdout}${run.stderr}`);
    }

    const base = await freeBase();
    const start = spawn('sh', ['-c', 'npm start'], {
      cwd,
      env: { ...env, PORT: String(base), TOKENS: '40', TOKEN_MS: '5', LEASE_MS: '60000' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: npm, node and the replicas are stopped together
    });
    started = start;
    let out = '';
    start.stdout?.setEncoding('utf8').on('data', (text: string) => {
      out += text;
    });
    start.stderr?.setEncoding('utf8').on('data', (text: string) => {
      out += text;
    });
    await within(
      60_000,
      (async () => {
        while (!out.includes(`open http://127.0.0.1:${base}/`)) {
          if (start.exitCode !== null) throw new Error(`npm start exited: ${out}`);
          await sleep(50);
        }
      })(),
      'npm start',
    );

    const url = `http://127.0.0.1:${base}`;
    const page = await fetch(`${url}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<ol id="messages">/);
    const script = await fetch(`${url}/page.js`);
    assert.equal(script.status, 200);
    assert.match(await script.text(), /stalled|silenceMs|keep-alive|fetchServerSentEvents|ChatClient/);

    const runId = `ts-test/example/${randomUUID()}`;
    const body = {
      threadId: `thread-${runId}`,
      runId,
      messages: [{ id: 'u1', role: 'user', content: 'count' }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    };
    const response = await fetch(`${url}/api/chat`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Run-Id': runId },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 200);
    const text = await within(60_000, response.text(), 'the answer');
    const deltas = [...text.matchAll(/"delta":"(t\d+) "/g)].map((m) => m[1]);
    assert.deepEqual(
      deltas,
      Array.from({ length: 40 }, (_, i) => `t${i}`),
    );
    assert.match(text, /RUN_FINISHED/);
    const runs = createRunStore(pool);
    const deadline = Date.now() + 10_000;
    let status = (await runs.get(runId))?.status;
    while (status === 'running' && Date.now() < deadline) {
      await sleep(20);
      status = (await runs.get(runId))?.status;
    }
    assert.equal(status, 'completed');
  } finally {
    if (started?.pid !== undefined && started.exitCode === null) {
      try {
        process.kill(-started.pid, 'SIGTERM');
      } catch {
        // gone already
      }
    }
    await pool.end();
    rmSync(work, { recursive: true, force: true });
  }
});

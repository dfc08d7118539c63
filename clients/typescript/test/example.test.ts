/**
 * examples/two-servers, run as the README says on a fresh checkout: a copy of
 * this package (its sources, package.json and lock file; no node_modules, no
 * dist) at sandbox_store/clients/typescript with the example beside it, then
 * the README's shell block, command by command (`npm ci` here, `npm install`,
 * `npm run build && npm start` in the example), with the registry, against
 * the test database: exactly one sandbox create between the two servers, and
 * the other resumes it; no file watcher warning (the example sets
 * `fileEvents: false`).  Then the README's refresh after a change to the
 * client: the example's copy of the client has the change.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { TEST_DB } from './helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url)); // build/test/ -> the package
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const exampleReadme = readFileSync(join(root, 'examples', 'two-servers', 'README.md'), 'utf8');
const REFRESH = 'rm -rf node_modules/sandbox-store-client && npm install';

/** The README's block that runs the example: its commands, without comments, `&&` split. */
function readmeCommands(): string[] {
  const at = readme.indexOf('To run it yourself');
  assert.ok(at >= 0, 'the README says how to run the example');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  assert.ok(block?.[1] !== undefined, 'a sh block follows');
  return block[1]
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '')
    .flatMap((line) => line.split('&&').map((command) => command.trim()));
}

/** What a newcomer's shell has: no npm_* of the `npm test` running this, but its cache. */
function userEnv(sandboxes: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(name) || /^npm_config_(cache|registry)$/i.test(name)) env[name] = value;
  }
  return {
    ...env,
    PGDATABASE: TEST_DB,
    SANDBOX_DIR: sandboxes,
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
}

interface Line {
  server?: string;
  call?: string;
  sandboxId?: string;
  answer?: string;
  record?: { provider_sandbox_id: string; latest_run_id: string; thread_id: string } | null;
  summary?: { threadId: string; creates: number; resumes: number; answers: number; sandboxes: string[] };
}

test("examples/two-servers builds and runs from the README's steps on a fresh copy, and its refresh picks up a change", () => {
  const work = mkdtempSync(join(tmpdir(), 'sandbox-store-example-'));
  try {
    const client = join(work, 'sandbox_store', 'clients', 'typescript');
    mkdirSync(client, { recursive: true });
    // A fresh checkout: what git tracks, not what installs and builds leave.
    const left = /^(node_modules|dist|build|.*\.tgz|examples\/[^/]+\/(node_modules|dist|package-lock\.json))$/;
    cpSync(root, client, {
      recursive: true,
      filter: (path) => !left.test(relative(root, path).split(sep).join('/')),
    });
    const sandboxes = join(work, 'sandboxes');
    const env = userEnv(sandboxes);

    let cwd = work;
    let stdout = '';
    let stderr = '';
    const commands = readmeCommands();
    assert.deepStrictEqual(commands, [
      'cd sandbox_store/clients/typescript',
      'npm ci',
      'cd examples/two-servers',
      'npm install',
      'npm run build',
      'npm start',
    ]);
    for (const command of commands) {
      if (command.startsWith('cd ')) {
        cwd = resolve(cwd, command.slice(3));
        continue;
      }
      const run = spawnSync('sh', ['-c', command], { cwd, env, encoding: 'utf8' });
      stdout = run.stdout;
      stderr = run.stderr;
      assert.equal(run.status, 0, `${command} (in ${relative(work, cwd)}) failed:\n${stdout}${stderr}`);
    }
    assert.equal(cwd, join(client, 'examples', 'two-servers'));

    // npm start: npm's own lines, then the example's JSON lines.
    const lines = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Line);
    const creates = lines.filter((line) => line.call === 'create');
    const resumes = lines.filter((line) => line.call === 'resume');
    assert.equal(creates.length, 1, stdout);
    assert.equal(resumes.length, 1, stdout);
    assert.notEqual(creates[0]?.server, resumes[0]?.server);
    assert.equal(resumes[0]?.sandboxId, creates[0]?.sandboxId);
    assert.deepStrictEqual(
      lines.filter((line) => line.answer !== undefined).map((line) => line.answer),
      ['Hello from the fake model.', 'Hello from the fake model.'],
    );
    assert.deepStrictEqual(readdirSync(sandboxes), [`${creates[0]?.sandboxId}.json`]);
    const record = lines.find((line) => line.record !== undefined)?.record;
    assert.equal(record?.provider_sandbox_id, creates[0]?.sandboxId);
    assert.equal(record?.latest_run_id, `${resumes[0]?.server}-run`);
    const summary = lines.find((line) => line.summary !== undefined)?.summary;
    assert.equal(summary?.creates, 1);
    assert.equal(summary?.resumes, 1);
    assert.equal(record?.thread_id, summary?.threadId);
    assert.doesNotMatch(stderr, /sandbox watch/);

    // A change to the client, then the READMEs' refresh: the example's copy has it.
    assert.ok(readme.includes(REFRESH), 'the README says how to refresh the copy');
    assert.ok(exampleReadme.includes(REFRESH), "the example's README says how to refresh the copy");
    const copied = join(cwd, 'node_modules', 'sandbox-store-client', 'dist', 'index.js');
    appendFileSync(join(client, 'src', 'index.ts'), 'export const refreshedByTheExample = 1;\n');
    const install = spawnSync('sh', ['-c', 'npm install'], { cwd, env, encoding: 'utf8' });
    assert.equal(install.status, 0, install.stderr);
    assert.doesNotMatch(readFileSync(copied, 'utf8'), /refreshedByTheExample/, 'npm install alone keeps the copy');
    const refresh = spawnSync('sh', ['-c', REFRESH], { cwd, env, encoding: 'utf8' });
    assert.equal(refresh.status, 0, `${refresh.stdout}${refresh.stderr}`);
    assert.match(readFileSync(copied, 'utf8'), /refreshedByTheExample/);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

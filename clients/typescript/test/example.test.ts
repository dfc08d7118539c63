/**
 * examples/two-servers, as a user would build and run it: its sources, its
 * package.json and its tsconfig.json (ESM, NodeNext) in a new project whose
 * node_modules holds the packed tarball of this package and the real
 * @tanstack/ai-sandbox 0.2.4, @tanstack/ai and pg of the lock file.  Its
 * main starts two server processes for one thread against the test
 * database: exactly one sandbox create between them, and the other resumes
 * it; no file watcher warning (the example sets `fileEvents: false`).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { TEST_DB } from './helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url)); // build/test/ -> the package
const example = join(root, 'examples', 'two-servers');
const pkgName = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { name: string }).name;

interface Line {
  server?: string;
  call?: string;
  sandboxId?: string;
  answer?: string;
  record?: { provider_sandbox_id: string; latest_run_id: string; thread_id: string } | null;
  summary?: { threadId: string; creates: number; resumes: number; answers: number; sandboxes: string[] };
}

test('examples/two-servers compiles as a user project and its two servers make exactly one sandbox', () => {
  const work = mkdtempSync(join(tmpdir(), 'sandbox-store-example-'));
  try {
    const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
      cwd: root,
      encoding: 'utf8',
    });
    const [packed] = JSON.parse(out) as Array<{ filename: string }>;
    assert.ok(packed !== undefined);
    const app = join(work, 'two-servers');
    cpSync(example, app, {
      recursive: true,
      filter: (path) => !/[/\\](node_modules|dist)$/.test(path),
    });
    const modules = join(app, 'node_modules');
    mkdirSync(join(modules, '@types'), { recursive: true });
    mkdirSync(join(modules, '@tanstack'), { recursive: true });
    mkdirSync(join(modules, pkgName), { recursive: true });
    execFileSync('tar', ['xzf', join(work, packed.filename), '-C', join(modules, pkgName), '--strip-components=1']);
    for (const dep of ['pg', '@types/pg', '@types/node', '@tanstack/ai', '@tanstack/ai-sandbox', 'typescript']) {
      assert.ok(existsSync(join(root, 'node_modules', dep)), `${dep} is installed`);
      symlinkSync(join(root, 'node_modules', dep), join(modules, dep));
    }
    const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { type?: string };
    assert.equal(pkg.type, 'module');

    try {
      execFileSync(process.execPath, [join(modules, 'typescript', 'bin', 'tsc'), '-p', app], {
        cwd: app,
        encoding: 'utf8',
      });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string };
      assert.fail(`the example does not compile:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    }

    const sandboxes = join(work, 'sandboxes');
    const run = spawnSync(process.execPath, [join(app, 'dist', 'main.js')], {
      cwd: app,
      encoding: 'utf8',
      env: { ...process.env, PGDATABASE: TEST_DB, SANDBOX_DIR: sandboxes },
    });
    const { stdout, stderr } = run;
    assert.equal(run.status, 0, `the example failed:\n${stdout}${stderr}`);
    const lines = stdout
      .split('\n')
      .filter((line) => line !== '')
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
    assert.equal(record?.thread_id, summary?.threadId);
    assert.doesNotMatch(stderr, /sandbox watch/);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

/**
 * Every TypeScript block of the README, and of the reference pages in docs/
 * (docs/*.md), compiles, as a consumer would build
 * it: against the packed tarball of this package and the real
 * @tanstack/ai-sandbox 0.2.4 and @tanstack/ai of the lock file, with
 * TanStack AI's compiler options.  A block marked `<!-- tanstack-main -->`
 * is TanStack AI main's (unpublished) shape: it compiles against a
 * declaration of that shape instead (withSandbox(sandbox, { instances,
 * locks, snapshots }), withLocks, createSandboxSnapshots and the checkpoint
 * store's interface), written from this package's restatement of it.
 * Names a block uses without defining (pool, sandbox, provider, key, ...)
 * are declared for all blocks.  A README or a docs page that drifts fails
 * here, its file and line in the name of the block's file
 * (README-<line>.ts, docs-<page>-<line>.ts).
 *
 * The extension's README too: the SQL blocks of "Getting started" and "Lease
 * mode" run in psql as written (ON_ERROR_STOP: a fence not its own claim's
 * fails with SB001), and the results their comments name come out.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { TEST_DB } from './helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url)); // build/test/ -> the package
const pkgName = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { name: string }).name;

interface Block {
  /** The Markdown file, relative to the package: README.md or docs/<page>.md. */
  file: string;
  line: number;
  code: string;
  main: boolean;
  /** A block for @tanstack/ai 0.58: compiled by the 0.58 line's tests (test/lines/0.58), not here. */
  line058: boolean;
}

/** The ```ts blocks of a Markdown file of the package, with the line they start on. */
function markdownBlocks(file: string): Block[] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]?.trim() !== '```ts') continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]?.trim() !== '```'; i++) body.push(lines[i] ?? '');
    blocks.push({
      file,
      line: start + 1,
      code: body.join('\n'),
      main: lines[start - 1]?.trim() === '<!-- tanstack-main -->',
      line058: lines[start - 1]?.trim() === '<!-- tanstack-0.58 -->',
    });
  }
  return blocks;
}

/** The blocks of the README, then of docs/*.md. */
function allBlocks(): Block[] {
  const pages = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...pages].flatMap(markdownBlocks);
}

/** The name a block is compiled under: README-<line>.ts, docs-<page>-<line>.ts. */
function blockFile(block: Block): string {
  return `${block.file.replace(/\.md$/, '').replace(/\//g, '-')}-${block.line}.ts`;
}

/** What the blocks use without defining it. */
const AMBIENT = `
declare const pool: import('pg').Pool
declare const instances: import('${pkgName}').PgSandboxInstanceStore
declare const locks: import('${pkgName}').PgLockStore
declare const sandbox: import('@tanstack/ai-sandbox').SandboxDefinition
declare const provider: import('@tanstack/ai-sandbox').SandboxProvider
declare const adapter: import('@tanstack/ai').AnyTextAdapter
declare const messages: Array<import('@tanstack/ai').ModelMessage>
declare const key: string
declare const threadId: string
declare const runId: string
declare const persistence: { stores: { messages: unknown; artifacts: unknown; blobs: unknown } }
declare const e2b: {
  create(options: { signal: AbortSignal }): Promise<{ id: string }>
  connect(id: string, options: { signal: AbortSignal }): Promise<{ id: string } | null>
  restore(snapshotId: string, options: { signal: AbortSignal }): Promise<{ id: string }>
  kill(id: string): Promise<void>
}
`;

/** TanStack AI main's @tanstack/ai-sandbox, as far as the README uses it. */
const MAIN_SHAPE = `
export interface SandboxInstanceRecord {
  key: string
  provider: string
  providerSandboxId: string
  latestSnapshotId?: string
  threadId: string
  latestRunId?: string
  updatedAt: number
}
export interface SandboxInstanceStore {
  get: (key: string) => Promise<SandboxInstanceRecord | null>
  upsert: (record: SandboxInstanceRecord) => Promise<void>
  delete: (key: string) => Promise<void>
}
export interface LockStore {
  withLock: <T>(key: string, fn: (signal: AbortSignal) => Promise<T>) => Promise<T>
}
export interface SandboxProvider { readonly name: string }
export interface SandboxDefinition { readonly id: string }
export interface ChatMiddleware { name?: string }
export interface SandboxCheckpoint {
  id: string
  threadId: string
  parentCheckpointId: string | null
  createdAt: number
  reason: 'automatic' | 'named' | 'fork-root'
  label?: string
  sourceRunId?: string
  files: ReadonlyArray<
    { path: string; kind: 'file'; blobKey: string; size: number } | { path: string; kind: 'dir' }
  >
  conversation: ReadonlyArray<import('@tanstack/ai').ModelMessage>
  artifacts: ReadonlyArray<{
    artifactId: string
    name: string
    mimeType: string
    size: number
    blobKey: string
    createdAt: number
  }>
}
export interface SandboxCheckpointWriter {
  threadId: string
  ownerToken: string
  fence: number
}
export interface SandboxCheckpointWriterLease extends SandboxCheckpointWriter {
  expiresAt: number
  renewAfterMs: number
  renew: () => Promise<{ expiresAt: number }>
  release: () => Promise<void>
}
export interface SandboxCheckpointStore {
  get: (id: string) => Promise<SandboxCheckpoint | null>
  list: (threadId: string) => Promise<Array<SandboxCheckpoint>>
  getHead: (threadId: string) => Promise<string | null>
  append: (input: {
    checkpoint: SandboxCheckpoint
    expectedHeadId: string | null
    writer: SandboxCheckpointWriter
  }) => Promise<{ headId: string }>
  deleteHead: (input: { threadId: string; checkpointId: string; writer: SandboxCheckpointWriter }) => Promise<void>
  acquireWriter: (threadId: string) => Promise<SandboxCheckpointWriterLease>
  listBlobReferences: () => Promise<Array<{ key: string; references: number }>>
  forkFromCheckpoint?: (input: {
    sourceThreadId: string
    sourceCheckpointId: string
    destinationThreadId: string
    destinationCheckpointId: string
    createdAt: number
    writer: SandboxCheckpointWriter
  }) => Promise<{ checkpoint: SandboxCheckpoint }>
}
export interface SnapshotPersistence {
  stores: { messages: unknown; artifacts: unknown; blobs: unknown }
}
export interface SandboxSnapshots {
  persistence: SnapshotPersistence
  checkpoints: SandboxCheckpointStore
}
export declare function createSandboxSnapshots(input: {
  persistence: SnapshotPersistence
  checkpoints: SandboxCheckpointStore
  sandbox?: SandboxDefinition
  instances?: SandboxInstanceStore
  locks?: LockStore
}): SandboxSnapshots
export declare function withSandbox(
  definition: SandboxDefinition,
  options?: {
    instances?: SandboxInstanceStore
    locks?: LockStore
    snapshots?: { persistence: SnapshotPersistence; checkpoints: SandboxCheckpointStore }
  },
): ChatMiddleware
export declare function withLocks(locks: LockStore): ChatMiddleware
`;

/** TanStack AI's tsconfig.base.json compiler options (noUnusedLocals off: snippets define what they show). */
const COMPILER_OPTIONS = {
  allowJs: true,
  allowSyntheticDefaultImports: true,
  allowUnreachableCode: false,
  allowUnusedLabels: false,
  declaration: true,
  esModuleInterop: true,
  forceConsistentCasingInFileNames: true,
  isolatedModules: true,
  lib: ['DOM', 'DOM.Iterable', 'ES2023'],
  module: 'ES2022',
  moduleResolution: 'Bundler',
  noEmit: true,
  noFallthroughCasesInSwitch: true,
  noImplicitOverride: true,
  noImplicitReturns: true,
  noUncheckedIndexedAccess: true,
  noUnusedLocals: false,
  noUnusedParameters: true,
  resolveJsonModule: true,
  skipLibCheck: true,
  strict: true,
  target: 'ES2020',
  useDefineForClassFields: true,
  noErrorTruncation: true,
  types: ['node'],
};

function tsc(project: string): void {
  const compiler = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [compiler, '-p', project], { cwd: project, encoding: 'utf8' });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    assert.fail(
      `README or docs blocks do not compile (README-<line>.ts, docs-<page>-<line>.ts: the file and the line the block starts on):\n${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
  }
}

test('every TypeScript block of the README and docs/*.md compiles against the packed package and the real TanStack packages', () => {
  const found = allBlocks();
  // The 0.58 line's packed.test.ts compiles the README's 0.58 blocks only.
  const misplaced = found.filter((b) => b.line058 && b.file !== 'README.md');
  assert.deepEqual(
    misplaced.map((b) => `${b.file}:${b.line}`),
    [],
    'a block marked tanstack-0.58 outside the README: test/lines/0.58/packed.test.ts does not read it',
  );
  const blocks = found.filter((b) => !b.line058);
  assert.ok(blocks.length >= 7, `found ${blocks.length} blocks`);
  assert.ok(
    blocks.some((b) => b.file === 'README.md'),
    'the README has blocks',
  );
  assert.ok(
    blocks.some((b) => b.main),
    'a block shows TanStack AI main',
  );
  const work = mkdtempSync(join(tmpdir(), 'sandbox-store-readme-'));
  try {
    const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
      cwd: root,
      encoding: 'utf8',
    });
    const [packed] = JSON.parse(out) as Array<{ filename: string }>;
    assert.ok(packed !== undefined);
    const consumer = join(work, 'consumer');
    const modules = join(consumer, 'node_modules');
    mkdirSync(join(modules, '@types'), { recursive: true });
    mkdirSync(join(modules, '@tanstack'), { recursive: true });
    mkdirSync(join(modules, pkgName), { recursive: true });
    execFileSync('tar', ['xzf', join(work, packed.filename), '-C', join(modules, pkgName), '--strip-components=1']);
    for (const dep of [
      'pg',
      '@types/pg',
      '@types/node',
      'pg-types',
      'pg-protocol',
      '@tanstack/ai',
      '@tanstack/ai-sandbox',
    ]) {
      assert.ok(existsSync(join(root, 'node_modules', dep)), `${dep} is installed`);
      symlinkSync(join(root, 'node_modules', dep), join(modules, dep));
    }
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));

    for (const main of [false, true]) {
      const dir = join(consumer, main ? 'main' : 'published');
      mkdirSync(dir);
      writeFileSync(join(dir, 'ambient.d.ts'), AMBIENT);
      const include = ['ambient.d.ts'];
      for (const block of blocks.filter((b) => b.main === main)) {
        writeFileSync(join(dir, blockFile(block)), `${block.code}\nexport {}\n`);
        include.push(blockFile(block));
      }
      const compilerOptions: Record<string, unknown> = { ...COMPILER_OPTIONS };
      if (main) {
        writeFileSync(join(dir, 'tanstack-main.d.ts'), MAIN_SHAPE);
        compilerOptions['paths'] = { '@tanstack/ai-sandbox': ['./tanstack-main.d.ts'] };
      }
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include }));
      tsc(dir);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('the README mistake is a compile error against 0.2.4: stores as a second argument of withSandbox', () => {
  // The check above would not notice if 0.2.4 accepted the call; make sure
  // the README's claim (TS2554) holds for the installed package.
  const dir = mkdtempSync(join(root, 'build', 'readme-mistake-'));
  try {
    writeFileSync(
      join(dir, 'mistake.ts'),
      `import { withSandbox, type SandboxDefinition } from '@tanstack/ai-sandbox'
declare const sandbox: SandboxDefinition
withSandbox(sandbox, { instances: {}, locks: {} })
`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: COMPILER_OPTIONS, include: ['mistake.ts'] }),
    );
    const compiler = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    let output = '';
    try {
      execFileSync(process.execPath, [compiler, '-p', dir], { cwd: dir, encoding: 'utf8' });
    } catch (error) {
      output = (error as { stdout?: string }).stdout ?? '';
    }
    assert.match(output, /TS2554: Expected 1 arguments, but got 2/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The ```sql blocks of a section (from its heading to the next heading of any level) of the extension's README. */
function extensionReadmeSql(heading: string): string {
  const text = readFileSync(join(root, '..', '..', 'README.md'), 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `the extension's README has "${heading}"`);
  const rest = text.slice(start + heading.length + 2);
  const section = rest.slice(0, rest.search(/\n#{1,6} /) === -1 ? undefined : rest.search(/\n#{1,6} /));
  const blocks = [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  assert.ok(blocks.length > 0, `"${heading}" has a sql block`);
  return blocks.join('\n');
}

test("the extension README's SQL examples run as written (psql), and say what they return", () => {
  const script = [
    "SELECT sandbox_store.sandbox_delete('t42/default/e2b');",
    extensionReadmeSql('## Getting started'),
    extensionReadmeSql('### Lease mode'),
    "SELECT 'record: ' || provider_sandbox_id || ' ' || latest_run_id FROM sandbox_store.sandbox_get('t42/default/e2b');",
    "SELECT sandbox_store.sandbox_delete('t42/default/e2b');",
  ].join('\n');
  const psql = spawnSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', TEST_DB], {
    input: script,
    encoding: 'utf8',
  });
  assert.equal(psql.error, undefined, String(psql.error));
  assert.equal(psql.status, 0, `the README's SQL failed:\n${psql.stdout}${psql.stderr}`);
  const lines = psql.stdout.split('\n');
  // Getting started: create, resume stamped with run-2, then recreate with the old record.
  assert.ok(lines.includes('create'), psql.stdout);
  assert.ok(lines.includes('resume|sbx-9f3|run-2'), psql.stdout);
  assert.ok(lines.includes('recreate|sbx-9f3'), psql.stdout);
  // Lease mode: written with the fence its own ensure returned.
  assert.ok(lines.includes('record: sbx-a1c run-4'), psql.stdout);
});

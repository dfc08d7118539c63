/**
 * The package as a consumer sees it: the ESM entry point resolved by name
 * (self-reference through package.json "exports"), its declarations, what
 * `npm pack` puts in the tarball, and a consumer project compiled against
 * the unpacked tarball with TanStack AI's compiler options (its
 * tsconfig.base.json: ES2022 modules, Bundler resolution, strict, ...),
 * handing the stores to a `withSandbox`-shaped function typed with TanStack
 * AI's interfaces.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
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

const root = fileURLToPath(new URL('../../', import.meta.url)); // build/test/ -> the package

interface PackageJson {
  name: string;
  type: string;
  private?: boolean;
  license?: string;
  repository?: unknown;
  engines?: { node?: string };
  peerDependencies?: Record<string, string>;
}

const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as PackageJson;

/** A built module without its comments (their examples import TanStack packages). */
function codeOf(file: string): string {
  return readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
}

test('the package entry point exports the API', async () => {
  assert.equal(pkg.type, 'module');
  const api = (await import(pkg.name)) as Record<string, unknown>;
  for (const name of [
    'createInstanceStore',
    'createLockStore',
    'createCheckpointStore',
    'SandboxCheckpointError',
    'SandboxCheckpointConflictError',
    'SandboxCheckpointWriterLostError',
    'ensureSandbox',
    'tanstackSandboxKey',
    'ClaimLostError',
    'ConnectionUnavailableError',
    'DeadlockError',
    'LockNotAvailableError',
    'InvalidArgumentError',
    'LockLostError',
    'SandboxStoreError',
    'createRunStore',
    'createStreamDurability',
    'createRunDriver',
    'isRunStatus',
    'isTerminalRunStatus',
    'RunNotFoundError',
    'RunFinishedError',
    'InvalidLogOffsetError',
    'continueAfterLog',
    'resumeOf',
  ]) {
    assert.equal(typeof api[name], 'function', name);
  }
  assert.ok(existsSync(`${root}dist/index.d.ts`), 'type declarations are built');
});

test('the tanstack and chat entry points export the wiring; only they import a TanStack package; browser imports nothing', async () => {
  const api = (await import(`${pkg.name}/tanstack`)) as Record<string, unknown>;
  for (const name of ['withDurableSandbox', 'provideSandboxStores', 'defineDurableSandbox']) {
    assert.equal(typeof api[name], 'function', name);
  }
  const chat = (await import(`${pkg.name}/chat`)) as Record<string, unknown>;
  assert.equal(typeof chat['createChatHandlers'], 'function', 'createChatHandlers');
  const browser = (await import(`${pkg.name}/browser`)) as Record<string, unknown>;
  assert.equal(typeof browser['stallFetch'], 'function', 'stallFetch');
  assert.doesNotMatch(codeOf(`${root}dist/browser.js`), /\bimport\b/, 'dist/browser.js imports nothing');
  for (const file of readdirSync(`${root}dist`, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.js') || file === 'tanstack.js' || file === 'chat-handlers.js') continue;
    assert.doesNotMatch(
      codeOf(`${root}dist/${file}`),
      /(?:from|import)\s*\(?\s*['"]@tanstack\//,
      `dist/${file} imports no TanStack package`,
    );
  }
});

test('the package is publishable: not private, licensed, with a repository and engines', () => {
  assert.notEqual(pkg.private, true);
  assert.equal(pkg.license, 'PostgreSQL');
  assert.ok(existsSync(`${root}LICENSE`));
  assert.ok(pkg.repository !== undefined);
  assert.match(pkg.engines?.node ?? '', /^>=\d+/);
  assert.ok(pkg.peerDependencies?.['pg'] !== undefined, 'pg is a peer dependency');
});

test('npm pack: the tarball holds the built package, its sources, README, docs and LICENSE, nothing else; a consumer compiles against it with TanStack AI compiler options', () => {
  const work = mkdtempSync(join(tmpdir(), 'sandbox-store-pack-'));
  try {
    const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
      cwd: root,
      encoding: 'utf8',
    });
    const [packed] = JSON.parse(out) as Array<{ filename: string; files: Array<{ path: string }> }>;
    assert.ok(packed !== undefined);
    const files = packed.files.map((f) => f.path).sort();
    for (const file of files) {
      assert.ok(
        ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE'].includes(file) ||
          /^dist\/.+\.(js|d\.ts|js\.map|d\.ts\.map)$/.test(file) ||
          /^src\/.+\.ts$/.test(file) ||
          /^docs\/.+\.md$/.test(file),
        `unexpected file in the tarball: ${file}`,
      );
    }
    // The README's links into docs/ resolve in the tarball too.
    for (const needed of [
      'package.json',
      'README.md',
      'LICENSE',
      'dist/index.js',
      'dist/index.d.ts',
      'docs/locks.md',
    ]) {
      assert.ok(files.includes(needed), `${needed} is in the tarball`);
    }
    assert.ok(!files.some((f) => f.includes('test')), 'no tests in the tarball');

    // A consumer project: the tarball unpacked as its dependency, pg and the
    // type packages from this package's own node_modules.
    const consumer = join(work, 'consumer');
    const modules = join(consumer, 'node_modules');
    mkdirSync(join(modules, '@types'), { recursive: true });
    mkdirSync(join(modules, pkg.name), { recursive: true });
    execFileSync('tar', ['xzf', join(work, packed.filename), '-C', join(modules, pkg.name), '--strip-components=1']);
    for (const dep of ['pg', '@types/pg', '@types/node', 'pg-types', 'pg-protocol']) {
      if (existsSync(join(root, 'node_modules', dep))) symlinkSync(join(root, 'node_modules', dep), join(modules, dep));
    }
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
    // TanStack AI's tsconfig.base.json compiler options.
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          allowJs: true,
          allowSyntheticDefaultImports: true,
          allowUnreachableCode: false,
          allowUnusedLabels: false,
          checkJs: true,
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
          noUnusedLocals: true,
          noUnusedParameters: true,
          resolveJsonModule: true,
          skipLibCheck: false,
          strict: true,
          target: 'ES2020',
          useDefineForClassFields: true,
          noErrorTruncation: true,
          types: ['node'],
        },
        include: ['consumer.ts'],
      }),
    );
    writeFileSync(
      join(consumer, 'consumer.ts'),
      `import pg from 'pg'
import {
  createInstanceStore,
  createLockStore,
  ensureSandbox,
  tanstackSandboxKey,
  SandboxStoreError,
} from '${pkg.name}'

// TanStack AI's interfaces, as @tanstack/ai-sandbox and @tanstack/ai declare them.
interface SandboxInstanceRecord {
  key: string
  provider: string
  providerSandboxId: string
  latestSnapshotId?: string
  threadId: string
  latestRunId?: string
  updatedAt: number
}
interface SandboxInstanceStore {
  get: (key: string) => Promise<SandboxInstanceRecord | null>
  upsert: (record: SandboxInstanceRecord) => Promise<void>
  delete: (key: string) => Promise<void>
}
interface LockStore {
  withLock: <T>(key: string, fn: (signal: AbortSignal) => Promise<T>) => Promise<T>
}
declare function withSandbox(definition: { id: string }, options?: { instances?: SandboxInstanceStore; locks?: LockStore }): unknown

const pool = new pg.Pool()
const instances: SandboxInstanceStore = createInstanceStore(pool)
const locks: LockStore = createLockStore(pool, { mode: 'lease', lockKey: tanstackSandboxKey })
withSandbox({ id: 'dev' }, { instances, locks })

export async function main(): Promise<string> {
  const controller = new AbortController()
  const value = await createLockStore(pool).withLock('k', async (signal) => (signal.aborted ? 'lost' : 'held'), {
    signal: controller.signal,
  })
  const ensured = await ensureSandbox<string>(pool, {
    key: 'k',
    threadId: 't',
    runId: 'r',
    provider: 'fake',
    create: async () => ({ sandbox: 'new', providerSandboxId: 'sbx' }),
    resume: async () => 'resumed',
  })
  try {
    await instances.get('k')
  } catch (error) {
    if (error instanceof SandboxStoreError) return error.sqlstate ?? 'none'
  }
  return value + ensured.outcome
}
`,
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    try {
      execFileSync(process.execPath, [tsc, '-p', consumer], { cwd: consumer, encoding: 'utf8' });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string };
      assert.fail(`the consumer does not compile:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('npm pack, then npm install of the tarball into a new project as the README says: both entry points import, and their types resolve under NodeNext', () => {
  const work = mkdtempSync(join(tmpdir(), 'sandbox-store-install-'));
  try {
    const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
      cwd: root,
      encoding: 'utf8',
    });
    const [packed] = JSON.parse(out) as Array<{ filename: string }>;
    assert.ok(packed !== undefined);

    // The README's install commands, with the versions this package is tested with.
    const dev = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { devDependencies: Record<string, string> })
      .devDependencies;
    const at = (name: string): string => `${name}@${dev[name] ?? 'latest'}`;
    const app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    const npm = (args: string[]): void => {
      try {
        execFileSync('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], {
          cwd: app,
          encoding: 'utf8',
          stdio: 'pipe',
        });
      } catch (error) {
        const e = error as { stdout?: string; stderr?: string };
        assert.fail(`npm ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
      }
    };
    npm(['install', join(work, packed.filename), at('pg'), at('@tanstack/ai-sandbox'), at('@tanstack/ai')]);
    npm(['install', '-D', at('@types/pg')]);
    const installed = join(app, 'node_modules', pkg.name);
    assert.ok(!lstatSync(installed).isSymbolicLink(), 'the tarball is installed as a copy, not a link');
    assert.ok(!existsSync(join(installed, 'node_modules')), 'the package brings no dependency of its own');

    // Both entry points, resolved from the app through "exports".
    const exported = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const main = await import('${pkg.name}');
const tanstack = await import('${pkg.name}/tanstack');
const kinds = (m) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, typeof v]));
console.log(JSON.stringify({ main: kinds(main), tanstack: kinds(tanstack) }));`,
      ],
      { cwd: app, encoding: 'utf8' },
    );
    const api = JSON.parse(exported) as { main: Record<string, string>; tanstack: Record<string, string> };
    for (const name of ['withDurableSandbox', 'provideSandboxStores', 'defineDurableSandbox']) {
      assert.equal(api.tanstack[name], 'function', `${pkg.name}/tanstack exports ${name}`);
    }
    for (const name of ['createInstanceStore', 'createLockStore', 'ensureSandbox', 'tanstackSandboxKey']) {
      assert.equal(api.main[name], 'function', `${pkg.name} exports ${name}`);
    }

    // Their declarations, found through "exports" by TypeScript's NodeNext resolution.
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
        },
        include: ['app.ts'],
      }),
    );
    writeFileSync(
      join(app, 'app.ts'),
      `import pg from 'pg'
import type { SandboxDefinition } from '@tanstack/ai-sandbox'
import { createInstanceStore, createLockStore, tanstackSandboxKey } from '${pkg.name}'
import { provideSandboxStores, withDurableSandbox } from '${pkg.name}/tanstack'

declare const sandbox: SandboxDefinition
const pool = new pg.Pool()
const instances = createInstanceStore(pool)
const locks = createLockStore(pool, { mode: 'lease', leaseMs: 30_000, lockKey: tanstackSandboxKey })
export const middleware = [...withDurableSandbox(sandbox, { instances, locks })]
export const provider = provideSandboxStores({ instances, locks })
`,
    );
    try {
      execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], {
        cwd: app,
        encoding: 'utf8',
      });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string };
      assert.fail(`the app does not compile against the installed tarball:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

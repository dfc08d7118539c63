/**
 * The packed package next to @tanstack/ai 0.58, as an app installs it: a
 * plain `npm install` of the tarball with pg and @tanstack/ai@0.58.0 (no
 * @tanstack/ai-sandbox: its 0.2.4 wants 0.42), the main entry point loads
 * without any 0.42-only package, and the README's 0.58 blocks (marked
 * `<!-- tanstack-0.58 -->`) compile against it with TanStack AI's compiler
 * options.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../../../../../', import.meta.url)); // test/lines/0.58/build/test/lines/0.58/ -> the package
const line = fileURLToPath(new URL('../../../../', import.meta.url)); // -> test/lines/0.58/
const pkgName = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string }).name;
const lineDev = (
  JSON.parse(readFileSync(join(line, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
).devDependencies;

/** The README's blocks for 0.58. */
function blocks058(): Array<{ line: number; code: string }> {
  const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n');
  const out: Array<{ line: number; code: string }> = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]?.trim() !== '```ts' || lines[i - 1]?.trim() !== '<!-- tanstack-0.58 -->') continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]?.trim() !== '```'; i++) body.push(lines[i] ?? '');
    out.push({ line: start + 1, code: body.join('\n') });
  }
  return out;
}

/** What the blocks use without defining it. */
const AMBIENT = `
declare const pool: import('pg').Pool
declare const textAdapter: import('@tanstack/ai').AnyTextAdapter
declare const messages: Array<import('@tanstack/ai').ModelMessage>
declare const threadId: string
declare const model: import('@tanstack/ai').AnyTextAdapter
declare function setting(name: string, fallback: number): number
declare function render(messages: Array<import('@tanstack/ai-client').UIMessage>): void
`;

/** TanStack AI's tsconfig.base.json compiler options (as readme.test.ts). */
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

test('a plain npm install of the tarball next to @tanstack/ai 0.58 loads, and the README blocks for 0.58 compile against it', () => {
  const found = blocks058();
  assert.ok(found.length >= 1, 'the README has a block for 0.58');
  const work = mkdtempSync(join(tmpdir(), 'sandbox-store-058-'));
  try {
    const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
      cwd: root,
      encoding: 'utf8',
    });
    const [packed] = JSON.parse(out) as Array<{ filename: string }>;
    assert.ok(packed !== undefined);
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
    const at = (name: string): string => `${name}@${lineDev[name] ?? 'latest'}`;
    npm(['install', join(work, packed.filename), at('pg'), at('@tanstack/ai'), at('@tanstack/ai-client')]);
    npm(['install', '-D', at('@types/pg'), at('@types/node')]);
    assert.ok(!existsSync(join(app, 'node_modules', '@tanstack', 'ai-sandbox')), 'no @tanstack/ai-sandbox');
    const installed = JSON.parse(
      readFileSync(join(app, 'node_modules', '@tanstack', 'ai', 'package.json'), 'utf8'),
    ) as {
      version: string;
    };
    assert.match(installed.version, /^0\.58\./);

    // The main entry point loads without the 0.42 line's packages.
    const exported = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const m = await import('${pkgName}'); console.log(['createRunStore', 'createStreamDurability', 'createRunDriver', 'createLockStore', 'RunFinishedError'].filter((n) => typeof m[n] === 'function').join(','))`,
      ],
      { cwd: app, encoding: 'utf8' },
    ).trim();
    assert.equal(exported, 'createRunStore,createStreamDurability,createRunDriver,createLockStore,RunFinishedError');

    // The README's 0.58 blocks compile.
    const include = ['ambient.d.ts'];
    writeFileSync(join(app, 'ambient.d.ts'), AMBIENT);
    for (const block of found) {
      writeFileSync(join(app, `block-${block.line}.ts`), `${block.code}\nexport {}\n`);
      include.push(`block-${block.line}.ts`);
    }
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: COMPILER_OPTIONS, include }));
    try {
      execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], {
        cwd: app,
        encoding: 'utf8',
      });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string };
      assert.fail(
        `README blocks for 0.58 do not compile (block-<README line>.ts):\n${e.stdout ?? ''}${e.stderr ?? ''}`,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test("the README's route is examples/chat-resume's, as it is (but the semicolons)", () => {
  const server = readFileSync(join(root, 'examples', 'chat-resume', 'src', 'server.ts'), 'utf8');
  const from = server.indexOf('\n', server.indexOf('// #region route')) + 1;
  const region = server.slice(from, server.indexOf('// #endregion', from));
  const plain = (code: string): string => code.replace(/;$/gm, '').trim();
  const route = blocks058().find((block) => block.code.includes('createChatHandlers({'));
  assert.ok(route !== undefined, 'the README has the route');
  assert.ok(plain(route.code).endsWith(plain(region)), `the README's route:\n${route.code}\nthe example's:\n${region}`);
});

/**
 * The package as a consumer sees it: the ESM entry point resolved by name
 * (self-reference through package.json "exports"), and its declarations.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url)); // dist/test/ -> the package

test('the package entry point exports the API', async () => {
  const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { name: string; type: string };
  assert.equal(pkg.type, 'module');
  const api = (await import(pkg.name)) as Record<string, unknown>;
  for (const name of [
    'createInstanceStore',
    'createLockStore',
    'ensureSandbox',
    'tanstackSandboxKey',
    'ClaimLostError',
    'LockNotAvailableError',
    'InvalidArgumentError',
    'LockLostError',
    'SandboxStoreError',
  ]) {
    assert.equal(typeof api[name], 'function', name);
  }
  assert.ok(existsSync(`${root}dist/src/index.d.ts`), 'type declarations are built');
});

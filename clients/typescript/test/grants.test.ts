/**
 * An app role without the README's two GRANT lines: every call fails with
 * SQLSTATE 42501, and the error names the two lines; once they are run (as
 * the extension's owner), the same calls work.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type pg from 'pg';

import { SandboxStoreError, createInstanceStore, createLockStore, ensureSandbox } from '../src/index.js';
import { newPool, uniqueKey } from './helpers.js';

const role = `sandbox_store_ts_app_${randomUUID().slice(0, 8)}`;
const GRANTS = [
  `GRANT USAGE ON SCHEMA sandbox_store TO ${role}`,
  `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO ${role}`,
];
let admin: pg.Pool;
let app: pg.Pool;

before(async () => {
  admin = newPool(2);
  await admin.query(`CREATE ROLE ${role} LOGIN`);
  app = newPool(2, { user: role });
});
after(async () => {
  await app.end();
  await admin.query(`REVOKE USAGE ON SCHEMA sandbox_store FROM ${role}`);
  await admin.query(`REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store FROM ${role}`);
  await admin.query(`DROP ROLE ${role}`);
  await admin.end();
});

/** The error of a call made without the grants. */
function withoutGrants(error: unknown): boolean {
  assert.ok(error instanceof SandboxStoreError, String(error));
  assert.equal(error.sqlstate, '42501');
  assert.equal(error.code, '42501');
  assert.match(error.message, /^permission denied/);
  assert.ok(error.message.includes('GRANT USAGE ON SCHEMA sandbox_store TO app;'), error.message);
  assert.ok(error.message.includes('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO app;'), error.message);
  return true;
}

test('a role without the two GRANT lines gets 42501 naming them; with them, the calls work', async () => {
  const key = uniqueKey('grants');
  const instances = createInstanceStore(app);
  const locks = createLockStore(app, { mode: 'lease' });
  const ensure = () =>
    ensureSandbox(app, {
      key,
      threadId: 't',
      runId: 'run-1',
      provider: 'fake',
      create: async () => ({ sandbox: 'sbx', providerSandboxId: 'sbx-1' }),
      resume: async () => 'sbx',
    });

  await assert.rejects(instances.get(key), withoutGrants);
  await assert.rejects(
    locks.withLock(key, async () => undefined),
    withoutGrants,
  );
  await assert.rejects(ensure(), withoutGrants);

  for (const grant of GRANTS) await admin.query(grant);
  assert.equal(await instances.get(key), null);
  assert.equal(await locks.withLock(key, async () => 'held'), 'held');
  assert.equal((await ensure()).outcome, 'created');
  assert.equal((await instances.get(key))?.providerSandboxId, 'sbx-1');
});

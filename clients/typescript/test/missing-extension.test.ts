/**
 * A database without the extension: the server only says that schema
 * "sandbox_store" (3F000) or a function of it (42883) does not exist; the
 * client's error adds that the extension is not installed in that database,
 * and how to install it (CREATE EXTENSION, or the SQL edition's scripts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';

import {
  SandboxStoreError,
  createCheckpointStore,
  createInstanceStore,
  createRunStore,
  createStreamDurability,
  createLockStore,
  ensureSandbox,
} from '../src/index.js';
import { TEST_DB, newPool, uniqueKey, within } from './helpers.js';

const database = `${TEST_DB}_noext_${randomUUID().slice(0, 8)}`;
let admin: pg.Client;
let pool: pg.Pool;

before(async () => {
  admin = new pg.Client({ database: TEST_DB });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${database}"`);
  pool = newPool(4, { database });
});
after(async () => {
  await pool.end();
  await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  await admin.end();
});

function notInstalled(sqlstate: string, hint: RegExp) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof SandboxStoreError, String(error));
    assert.equal(error.sqlstate, sqlstate, error.message);
    assert.match(error.message, /sandbox_store/);
    assert.match(error.message, /not installed in the database the pool connects to/);
    assert.ok(error.message.includes('CREATE EXTENSION sandbox_store;'), error.message);
    assert.match(error.message, hint);
    return true;
  };
}

test('without the extension, every call says it is not installed in that database and how to install it', async () => {
  const key = uniqueKey('noext');
  const missingSchema = notInstalled('3F000', /^schema "sandbox_store" does not exist\. .*SQL edition/);
  await within(10_000, assert.rejects(createInstanceStore(pool).get(key), missingSchema));
  for (const mode of ['lock', 'lease'] as const) {
    await within(
      10_000,
      assert.rejects(
        createLockStore(pool, { mode }).withLock(key, async () => undefined),
        missingSchema,
      ),
    );
  }
  await within(
    10_000,
    assert.rejects(
      ensureSandbox(pool, {
        key,
        threadId: 't',
        runId: 'run-1',
        provider: 'fake',
        create: async () => ({ sandbox: 'sbx', providerSandboxId: 'sbx-1' }),
        resume: async () => 'sbx',
      }),
      missingSchema,
    ),
  );
  await within(10_000, assert.rejects(createCheckpointStore(pool).getHead('thread'), missingSchema));
});

test('with the schema but not the function: 42883, with the same hint and ALTER EXTENSION ... UPDATE', async () => {
  const db = new pg.Client({ database });
  await db.connect();
  try {
    await db.query('CREATE SCHEMA sandbox_store');
    await within(
      10_000,
      assert.rejects(
        createInstanceStore(pool).get(uniqueKey('noext')),
        notInstalled('42883', /^function sandbox_store\..* does not exist\. .*ALTER EXTENSION sandbox_store UPDATE;/),
      ),
    );
    // The run functions name the version they need.
    const needs15 = (error: unknown): boolean => {
      assert.ok(error instanceof SandboxStoreError, String(error));
      assert.equal(error.sqlstate, '42883', error.message);
      assert.match(
        error.message,
        /^function sandbox_store\.run_get\(.* does not exist\. The run functions .* need sandbox_store 1\.5 or later/,
      );
      assert.ok(error.message.includes('ALTER EXTENSION sandbox_store UPDATE;'), error.message);
      return true;
    };
    await within(10_000, assert.rejects(createRunStore(pool).get('run-1'), needs15));
    await within(
      10_000,
      assert.rejects(createStreamDurability(pool, { runId: 'run-1' }).append([{ type: 'RUN_STARTED' }]), (error) =>
        /run_log_append.* need sandbox_store 1\.5 or later/.test(String(error)),
      ),
    );
  } finally {
    await db.query('DROP SCHEMA IF EXISTS sandbox_store');
    await db.end();
  }
});

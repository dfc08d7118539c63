/**
 * Before the suite: drop and recreate the test database (default
 * sandbox_store_ts), CREATE EXTENSION sandbox_store there (it must be
 * installed, at 1.1 or later; or the SQL edition's plain script), and create
 * the fake provider's call log.  Connects to $PGDATABASE (default postgres)
 * as a superuser, or as the SQL edition's owner (with-sql-edition.sh).
 */
import { readFileSync } from 'node:fs';

import pg from 'pg';

import { TEST_DB } from './helpers.js';

const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

const admin = new pg.Client({ database: process.env['PGDATABASE'] ?? 'postgres' });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${ident(TEST_DB)} WITH (FORCE)`);
await admin.query(`CREATE DATABASE ${ident(TEST_DB)}`);
await admin.end();

const db = new pg.Client({ database: TEST_DB });
await db.connect();
// The SQL edition's plain script (SB_EDITION=plain, SB_PLAIN_SCRIPT: set by
// test/scripts/with-sql-edition.sh) is run as a psql -f would run it;
// the C edition and the SQL edition through pg_tle are extensions.
const plainScript = process.env['SB_EDITION'] === 'plain' ? process.env['SB_PLAIN_SCRIPT'] : undefined;
if (plainScript !== undefined) {
  await db.query(readFileSync(plainScript, 'utf8'));
} else {
  await db.query('CREATE EXTENSION sandbox_store');
}
const { rows } = await db.query<{ extversion: string }>(
  plainScript !== undefined
    ? 'SELECT version AS extversion FROM sandbox_store.edition()'
    : "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store'",
);
const version = rows[0]?.extversion ?? '';
if (!/^1\.([1-9]|\d\d+)/.test(version) && !/^[2-9]/.test(version)) {
  throw new Error(`sandbox_store ${version} is installed; these tests need 1.1 or later (lease mode)`);
}
await db.query(`CREATE TABLE fake_provider_calls (
  id bigserial PRIMARY KEY,
  thread_id text NOT NULL,
  op text NOT NULL,
  sandbox_id text,
  at timestamptz NOT NULL DEFAULT clock_timestamp())`);
await db.end();
console.log(`test database ${TEST_DB} ready (sandbox_store ${version})`);

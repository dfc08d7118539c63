--
-- ensure: every decision of sandbox_ensure, the lock it takes, and the
-- other lock functions.  (Races between sessions: specs/*.spec.)
--
\i sql/include/fresh.sql
\pset null '<null>'
SET timezone = 'UTC';

-- create: no record.  The row carries no record; the lock is held until the
-- transaction ends, as pg_locks shows, under the key's lock id.
BEGIN;
SELECT * FROM sandbox_store.sandbox_ensure(key => 'e1', run_id => 'run-1');
SELECT mode, granted, lock_id = sandbox_store.sandbox_lock_id('e1') AS key_lock
  FROM my_sb_locks;
-- pg_locks itself: an advisory lock in the edition's key-lock class
-- (docs/reference.md, "The per-key lock"), the key's lock id split into
-- classid (high 32 bits) and objid (low 32 bits).
SELECT mode, objsubid = pg_temp.sb_key_lock_class() AS key_lock_class,
       (classid::bigint << 32 | objid::bigint) = sandbox_store.sandbox_lock_id('e1') AS key_lock_id
  FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
SELECT key FROM sandbox_store.sandbox_upsert('e1', 'prov-x', 'sbx-e1', 'thread-e', latest_run_id => 'run-1',
                                             latest_snapshot_id => 'snap-e1');
COMMIT;
SELECT count(*) AS locks_after_commit FROM my_sb_locks;

-- resume: a fresh record, stamped with run_id and now() in the caller's
-- transaction.
BEGIN;
SELECT action, key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id,
       updated_at = now() AS stamped_now
  FROM sandbox_store.sandbox_ensure('e1', 'run-2');
SELECT latest_run_id, updated_at = now() AS stamped_now FROM sandbox_store.sandbox_get('e1');
COMMIT;

-- The stamp is rolled back with the caller's transaction.
BEGIN;
SELECT action, latest_run_id FROM sandbox_store.sandbox_ensure('e1', 'run-rolled-back');
ROLLBACK;
SELECT latest_run_id FROM sandbox_store.sandbox_get('e1');

-- recreate by max_age: a record older than max_age comes back as it was,
-- unstamped, so the caller can destroy that sandbox.
SELECT updated_at FROM sandbox_store.sandbox_upsert('e2', 'prov-x', 'sbx-old', 'thread-e',
  latest_snapshot_id => 'snap-old', latest_run_id => 'run-old',
  updated_at => '2026-01-01 00:00:00+00');
BEGIN;
SELECT * FROM sandbox_store.sandbox_ensure('e2', 'run-3', max_age => '1 hour');
SELECT latest_run_id, updated_at FROM sandbox_store.sandbox_get('e2');
-- the caller destroys sbx-old, creates a new sandbox and records it.
SELECT provider_sandbox_id, latest_snapshot_id, latest_run_id
  FROM sandbox_store.sandbox_upsert('e2', 'prov-x', 'sbx-new', 'thread-e', latest_run_id => 'run-3');
COMMIT;
-- Younger than max_age: resume.
SELECT action, provider_sandbox_id, latest_run_id FROM sandbox_store.sandbox_ensure('e2', 'run-4', max_age => '1 hour');
-- max_age is compared with now(): exactly as old as max_age is still fresh.
BEGIN;
SELECT key FROM sandbox_store.sandbox_upsert('e3', 'p', 'sbx-e3', 't', updated_at => now() - interval '10 minutes');
SELECT action FROM sandbox_store.sandbox_ensure('e3', 'r', max_age => '10 minutes');
SELECT key FROM sandbox_store.sandbox_upsert('e3', 'p', 'sbx-e3', 't', updated_at => now() - interval '10 minutes 0.001 seconds');
SELECT action FROM sandbox_store.sandbox_ensure('e3', 'r', max_age => '10 minutes');
ROLLBACK;
-- max_age 0: a record last written before this transaction started is stale.
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('e1', 'r0', max_age => '0');
ROLLBACK;
-- months and days count as in timestamp arithmetic.
SELECT key FROM sandbox_store.sandbox_upsert('e4', 'p', 'sbx-e4', 't', updated_at => now() - interval '20 days');
SELECT action FROM sandbox_store.sandbox_ensure('e4', 'r', max_age => '1 mon');
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('e4', 'r', max_age => '2 weeks');
ROLLBACK;

-- recreate by provider: a record of another provider; the same provider resumes.
BEGIN;
SELECT action, provider, provider_sandbox_id FROM sandbox_store.sandbox_ensure('e1', 'run-5', provider => 'prov-y');
ROLLBACK;
SELECT action, provider, provider_sandbox_id FROM sandbox_store.sandbox_ensure('e1', 'run-5', provider => 'prov-x');
-- Both conditions: either one makes it recreate.
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('e1', 'run-6', max_age => '1 day', provider => 'prov-y');
ROLLBACK;

-- Outside a transaction block the lock ends with the statement: a create or
-- recreate answer says so; a resume needs no warning.
SELECT action FROM sandbox_store.sandbox_ensure('e-auto', 'run-1');
SELECT action FROM sandbox_store.sandbox_ensure('e2', 'run-5', max_age => '0');
SELECT action FROM sandbox_store.sandbox_ensure('e1', 'run-7');
SELECT count(*) AS locks_after_statement FROM my_sb_locks;

-- One lock per key, however often it is taken in a transaction; one per key
-- for different keys.
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('e1', 'run-8');
SELECT action FROM sandbox_store.sandbox_ensure('e1', 'run-9');
SELECT sandbox_store.sandbox_lock('e1');
SELECT sandbox_store.sandbox_try_lock('e1');
SELECT count(*) FROM my_sb_locks;
SELECT action FROM sandbox_store.sandbox_ensure('e2', 'run-9');
SELECT count(*) FROM my_sb_locks;
COMMIT;
SELECT count(*) FROM my_sb_locks;

-- A lock taken in a subtransaction that rolls back is released with it.
BEGIN;
SAVEPOINT s1;
SELECT action FROM sandbox_store.sandbox_ensure('e1', 'run-10');
SELECT count(*) FROM my_sb_locks;
ROLLBACK TO SAVEPOINT s1;
SELECT count(*) FROM my_sb_locks;
COMMIT;

-- wait: NULL, 0 and a bounded wait all succeed at once on a free key, and a
-- bounded wait leaves lock_timeout as the session had it.
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('e1', 'r', wait => NULL);
SELECT action FROM sandbox_store.sandbox_ensure('w0', 'r', wait => '0');
SELECT action FROM sandbox_store.sandbox_ensure('w1', 'r', wait => '2 seconds');
SELECT sandbox_store.sandbox_lock('w2', wait => '0');
SELECT sandbox_store.sandbox_lock('w3', wait => '500 ms');
SELECT sandbox_store.sandbox_lock('w4');
SHOW lock_timeout;
SELECT count(*) FROM my_sb_locks;
ROLLBACK;
SET lock_timeout = '3s';
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('w1', 'r', wait => '1 minute');
SELECT sandbox_store.sandbox_lock('w3', wait => '1 microsecond');
SHOW lock_timeout;
ROLLBACK;
SHOW lock_timeout;
RESET lock_timeout;

-- try_lock: true when taken (or already held by this transaction).
BEGIN;
SELECT sandbox_store.sandbox_try_lock('t1'), sandbox_store.sandbox_try_lock('t1');
SELECT count(*) FROM my_sb_locks;
COMMIT;
SELECT count(*) FROM my_sb_locks;

-- The lock id is FNV-1a 64 of the key's bytes: fixed forever.
SELECT k, sandbox_store.sandbox_lock_id(k)
  FROM (VALUES ('a'), ('e1'), ('thread-1/def/prov'), ('ключ')) v(k);
-- Different keys, different ids; the lock does not depend on the database encoding's
-- collation, only on bytes.
SELECT sandbox_store.sandbox_lock_id('a') <> sandbox_store.sandbox_lock_id('A');

-- Under REPEATABLE READ, a transaction that sees the newest state proceeds.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT action, latest_run_id FROM sandbox_store.sandbox_ensure('e1', 'run-rr');
SELECT action FROM sandbox_store.sandbox_ensure('rr-new', 'run-rr');
SELECT key FROM sandbox_store.sandbox_upsert('rr-new', 'p', 'sbx-rr', 't');
SELECT action FROM sandbox_store.sandbox_ensure('rr-new', 'run-rr2');
SELECT sandbox_store.sandbox_delete('rr-new'), sandbox_store.sandbox_delete('rr-missing');
COMMIT;

DROP VIEW my_sb_locks;

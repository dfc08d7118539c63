--
-- key_collation: a nondeterministic collation on the key is refused.
--
-- Each key's lock is taken on the key's exact bytes, so under a collation
-- that calls 'THREAD-1' and 'Thread-1' equal, sandbox_ensure('THREAD-1')
-- would resume the record of 'Thread-1' without holding its lock.  The
-- extension's event trigger refuses such an ALTER TABLE; with it disabled
-- (as a superuser can), every call fails (0A000) while the key of
-- instances or leases, or a unique index on it, has a nondeterministic
-- collation, and works again once it is undone.
--
-- Nondeterministic collations need ICU: a server built without it skips
-- the test (expected output key_collation_1.out).
--
\i sql/include/fresh.sql
SELECT pg_temp.err($$CREATE COLLATION kc_ci (provider = icu, locale = 'und-u-ks-level2',
                                           deterministic = false)$$) = 'ok' AS have_icu \gset
\if :have_icu
\else
\echo 'this server has no ICU: skipped'
\quit
\endif
SELECT key FROM sandbox_store.sandbox_upsert('Thread-1', 'e2b', 'sbx-1', 'kc-t');

-- The guard refuses the change.
\set VERBOSITY sqlstate
ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE sandbox_store.bounded_text COLLATE kc_ci;
\set VERBOSITY default

DO $g$ BEGIN IF EXISTS (SELECT FROM pg_event_trigger WHERE evtname = 'sandbox_store_guard') THEN ALTER EVENT TRIGGER sandbox_store_guard DISABLE; END IF; END $g$;
ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE sandbox_store.bounded_text COLLATE kc_ci;
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('Thread-1');
\set VERBOSITY sqlstate
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('THREAD-1', 'run-1');
ROLLBACK;
SELECT key FROM sandbox_store.sandbox_get('THREAD-1');
SELECT key FROM sandbox_store.sandbox_upsert('THREAD-1', 'e2b', 'sbx-2', 'kc-t');
SELECT sandbox_store.sandbox_try_lock('THREAD-1');
SELECT sandbox_store.sandbox_delete('THREAD-1');
SELECT key FROM sandbox_store.sandbox_list('kc-t');
SET sandbox_store.direct_reads = off;
SELECT key FROM sandbox_store.sandbox_get('THREAD-1');
RESET sandbox_store.direct_reads;
\set VERBOSITY default
ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE sandbox_store.bounded_text COLLATE "default";
-- 'THREAD-1' is a key of its own again.
BEGIN;
SELECT action, key FROM sandbox_store.sandbox_ensure('THREAD-1', 'run-1');
ROLLBACK;
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('Thread-1');

-- A unique index on the key with such a collation: ON CONFLICT (key)
-- could take it as its arbiter.
CREATE UNIQUE INDEX kc_key_ci ON sandbox_store.instances (key COLLATE kc_ci);
\set VERBOSITY sqlstate
SELECT key FROM sandbox_store.sandbox_upsert('THREAD-1', 'e2b', 'sbx-2', 'kc-t');
\set VERBOSITY default
DROP INDEX sandbox_store.kc_key_ci;

-- The key of leases (its type cannot change under the claims view, but a
-- unique index can be added).
CREATE UNIQUE INDEX kc_lease_key_ci ON sandbox_store.leases (key COLLATE kc_ci);
\set VERBOSITY sqlstate
SELECT fence FROM sandbox_store.sandbox_claim('Thread-1', '1 hour', wait => '0');
SELECT sandbox_store.sandbox_try_lock('Thread-1');
\set VERBOSITY default
DROP INDEX sandbox_store.kc_lease_key_ci;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_claim('Thread-1', '1 hour', wait => '0')$$) AS claimed;

-- Undone, every call works, and the records are as they were.
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_upsert('THREAD-1', 'e2b', 'sbx-2', 'kc-t');
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_list('kc-t') ORDER BY key COLLATE "C";
DROP COLLATION kc_ci;

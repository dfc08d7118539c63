--
-- relations_renamed: a managed relation renamed or moved away is missing.
--
-- Which features a database has comes from the installed version of the
-- extension (leases and fence_seq exist from 1.1), never from whether a
-- relation of that name is found.  So with leases or fence_seq renamed or
-- moved to another schema, every call fails with 42P01 (as for a missing
-- instances) instead of quietly behaving as 1.0 and ignoring the claims;
-- a look-alike table put in the old place is not read either.  Named back,
-- everything works and the claim is still there.
--
-- The extension's event trigger refuses these renames (test guard); it is
-- disabled here, as a superuser can, to test the functions' own defence.
--
\i sql/include/fresh.sql
DO $g$ BEGIN IF EXISTS (SELECT FROM pg_event_trigger WHERE evtname = 'sandbox_store_guard') THEN ALTER EVENT TRIGGER sandbox_store_guard DISABLE; END IF; END $g$;
SELECT key FROM sandbox_store.sandbox_upsert('rn-1', 'e2b', 'sbx-1', 'rn-t');
SELECT fence AS rnf FROM sandbox_store.sandbox_claim('rn-1', '1 hour') \gset

-- leases renamed.
ALTER TABLE sandbox_store.leases RENAME TO rn_leases;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_try_lock('rn-1')$$) AS try_lock;
SELECT pg_temp.err($$SELECT action FROM sandbox_store.sandbox_ensure('rn-1', 'run-1', wait => '0')$$) AS ensure_lock_mode;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock('rn-1', wait => '0')$$) AS lock;
SELECT pg_temp.err(format($$SELECT key FROM sandbox_store.sandbox_upsert('rn-1', 'e2b', 'sbx-2', 'rn-t', fence => %s)$$, :rnf)) AS fenced_upsert;
SELECT pg_temp.err($$SELECT fence FROM sandbox_store.sandbox_claim('rn-2', '1 hour')$$) AS claim;
SELECT pg_temp.err($$SELECT key FROM sandbox_store.sandbox_get('rn-1')$$) AS get;
SET sandbox_store.direct_reads = off;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_try_lock('rn-1')$$) AS try_lock_spi;
RESET sandbox_store.direct_reads;
ALTER TABLE sandbox_store.rn_leases RENAME TO leases;
SELECT sandbox_store.sandbox_try_lock('rn-1') AS try_lock_back;

-- leases moved to another schema, and a look-alike (empty, not a member
-- of the extension) in its place.
CREATE SCHEMA rn_elsewhere;
ALTER TABLE sandbox_store.leases SET SCHEMA rn_elsewhere;
CREATE TABLE sandbox_store.leases (LIKE rn_elsewhere.leases INCLUDING ALL);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_try_lock('rn-1')$$) AS try_lock;
SELECT pg_temp.err($$SELECT action FROM sandbox_store.sandbox_ensure('rn-1', 'run-1', lease => '1 hour', wait => '0')$$) AS ensure_lease_mode;
SET sandbox_store.direct_reads = off;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_try_lock('rn-1')$$) AS try_lock_spi;
RESET sandbox_store.direct_reads;
SELECT count(*) AS look_alike_rows FROM sandbox_store.leases;
DROP TABLE sandbox_store.leases;
ALTER TABLE rn_elsewhere.leases SET SCHEMA sandbox_store;
DROP SCHEMA rn_elsewhere;
SELECT sandbox_store.sandbox_try_lock('rn-1') AS try_lock_back;

-- fence_seq renamed: a claim needs a new fence.
ALTER SEQUENCE sandbox_store.fence_seq RENAME TO rn_seq;
SELECT pg_temp.err($$SELECT fence FROM sandbox_store.sandbox_claim('rn-3', '1 hour')$$) AS claim;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_try_lock('rn-3')$$) AS try_lock;
ALTER SEQUENCE sandbox_store.rn_seq RENAME TO fence_seq;
SELECT fence > :rnf AS newer_fence FROM sandbox_store.sandbox_claim('rn-3', '1 hour');

-- The claim on rn-1 survived all of it.
SELECT key, fence = :rnf AS same_fence FROM sandbox_store.claims ORDER BY key;

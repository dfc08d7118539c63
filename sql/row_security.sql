--
-- row_security: row-level security on a managed table is refused with a
-- clear error (0A000), on every path, rather than applied by one read path
-- and not the other.  The functions act as the tables' owner for every
-- caller, so a policy could not tell callers apart.
--
\i sql/include/fresh.sql
SELECT key FROM sandbox_store.sandbox_upsert('rls-1', 'e2b', 'sbx-1', 'rls-t');
CREATE POLICY rls_none ON sandbox_store.instances USING (false);

ALTER TABLE sandbox_store.instances ENABLE ROW LEVEL SECURITY;
\set VERBOSITY sqlstate
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('rls-1');
SET sandbox_store.direct_reads = off;
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('rls-1');
RESET sandbox_store.direct_reads;
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_list('rls-t');
SELECT key FROM sandbox_store.sandbox_upsert('rls-2', 'e2b', 'sbx-2', 'rls-t');
SELECT action FROM sandbox_store.sandbox_ensure('rls-1', 'run-1');
SELECT sandbox_store.sandbox_delete('rls-1');
SELECT key FROM sandbox_store.sandbox_reap('1 second');
\set VERBOSITY default
SELECT sandbox_store.sandbox_get('rls-1');

-- FORCE alone, and on leases: refused as well.
ALTER TABLE sandbox_store.instances DISABLE ROW LEVEL SECURITY;
ALTER TABLE sandbox_store.instances FORCE ROW LEVEL SECURITY;
\set VERBOSITY sqlstate
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('rls-1');
\set VERBOSITY default
ALTER TABLE sandbox_store.instances NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sandbox_store.leases ENABLE ROW LEVEL SECURITY;
-- (The SQL edition takes the claim: the ensure then gives up after 1 s.)
SET lock_timeout = '1s';
\set VERBOSITY sqlstate
SELECT fence > 0 FROM sandbox_store.sandbox_claim('rls-1', lease => '1 min');
SELECT pg_temp.err($$SELECT action FROM sandbox_store.sandbox_ensure('rls-1', 'run-1')$$) AS ensure;
\set VERBOSITY default
ALTER TABLE sandbox_store.leases DISABLE ROW LEVEL SECURITY;

-- Off again: everything works, nothing was changed by the refused calls.
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('rls-1');
SELECT key FROM sandbox_store.sandbox_list('rls-t');
DROP POLICY rls_none ON sandbox_store.instances;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_delete('rls-1')$$) AS deleted;
RESET lock_timeout;

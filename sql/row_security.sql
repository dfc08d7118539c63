--
-- row_security: the functions act as the tables' owner for every caller,
-- and both editions treat row-level security on a managed table as
-- PostgreSQL treats it for the owner's own statements: enabled without
-- FORCE it does not apply to the owner, so every call runs and sees every
-- row; enabled and forced, a call is refused with 42501 (PostgreSQL's
-- message), since the functions cannot apply a policy (they run with
-- row_security off, and the C edition's direct reads run no query); FORCE
-- without ENABLE applies nothing.  The output is the same in both editions.
--
\i sql/include/fresh.sql
SELECT key FROM sandbox_store.sandbox_upsert('rls-1', 'e2b', 'sbx-1', 'rls-t');
SELECT key FROM sandbox_store.sandbox_upsert('rls-old', 'e2b', 'sbx-o', 'rls-t', updated_at => now() - interval '1 day');
CREATE POLICY rls_none ON sandbox_store.instances USING (false);
CREATE POLICY rls_none ON sandbox_store.leases USING (false);

-- Enabled, not forced: not applied (the owner is exempt), on every path.
ALTER TABLE sandbox_store.instances ENABLE ROW LEVEL SECURITY;
ALTER TABLE sandbox_store.leases ENABLE ROW LEVEL SECURITY;
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('rls-1');
SET sandbox_store.direct_reads = off;
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('rls-1');
RESET sandbox_store.direct_reads;
SELECT key FROM sandbox_store.sandbox_list('rls-t');
SELECT key FROM sandbox_store.sandbox_upsert('rls-2', 'e2b', 'sbx-2', 'rls-t');
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('rls-1', 'run-1');
COMMIT;
SELECT fence > 0 AS claimed FROM sandbox_store.sandbox_claim('rls-c', lease => '1 min');
SELECT sandbox_store.sandbox_release('rls-c', owner_token) FROM sandbox_store.claims WHERE key = 'rls-c';
SELECT sandbox_store.sandbox_delete('rls-2');
SELECT key FROM sandbox_store.sandbox_reap('1 hour');

-- FORCE without ENABLE: nothing is applied either.
ALTER TABLE sandbox_store.instances DISABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE sandbox_store.leases DISABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
SELECT key, latest_run_id FROM sandbox_store.sandbox_get('rls-1');
SELECT fence > 0 AS claimed FROM sandbox_store.sandbox_claim('rls-c', lease => '1 min');
SELECT sandbox_store.sandbox_release('rls-c', owner_token) FROM sandbox_store.claims WHERE key = 'rls-c';

-- Enabled and forced on instances: every call that reads or writes it is
-- refused, and changes nothing.
ALTER TABLE sandbox_store.leases NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sandbox_store.instances ENABLE ROW LEVEL SECURITY;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_get('rls-1')$$) AS get;
SET sandbox_store.direct_reads = off;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_get('rls-1')$$) AS get_by_query;
RESET sandbox_store.direct_reads;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_list('rls-t')$$) AS list;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert('rls-3', 'e2b', 'sbx-3', 'rls-t')$$) AS upsert;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('rls-1', 'run-2', lease => '1 min')$$) AS ensure;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_delete('rls-1')$$) AS delete;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_reap('1 second')$$) AS reap;

-- Enabled and forced on leases: every call that reads or writes it is
-- refused.
ALTER TABLE sandbox_store.instances NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY;
ALTER TABLE sandbox_store.leases ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_claim('rls-1', lease => '1 min')$$) AS claim;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('rls-1', 'run-2', lease => '1 min')$$) AS ensure;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock('rls-1')$$) AS lock;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_try_lock('rls-1')$$) AS try_lock;

-- Off again: nothing was changed by the refused calls.
ALTER TABLE sandbox_store.leases NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY;
DROP POLICY rls_none ON sandbox_store.instances;
DROP POLICY rls_none ON sandbox_store.leases;
SELECT key, latest_run_id FROM sandbox_store.sandbox_get('rls-1');
SELECT key FROM sandbox_store.sandbox_list('rls-t');
SELECT key, fence > 0 AS fenced, owner_token IS NULL AS released FROM sandbox_store.leases ORDER BY key;

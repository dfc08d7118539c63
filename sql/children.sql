--
-- children: a table an admin makes that inherits from a managed table is
-- not part of the store.  Every statement of the functions reads and writes
-- the managed table ONLY, as the direct primary-key reads do: a child's rows
-- are never returned, stamped, deleted or reaped, and a child's claim row
-- never holds a key.
--
\i sql/include/fresh.sql
SELECT key FROM sandbox_store.sandbox_upsert('ch-1', 'e2b', 'sbx-1', 'ch-t', updated_at => now() - interval '2 days');
CREATE TABLE public.ch_instances () INHERITS (sandbox_store.instances);
INSERT INTO public.ch_instances VALUES ('ch-1', 'e2b', 'child', NULL, 'ch-t', NULL, now() - interval '2 days'),
                                       ('ch-2', 'e2b', 'child', NULL, 'ch-t', NULL, now() - interval '2 days');
CREATE TABLE public.ch_leases () INHERITS (sandbox_store.leases);
INSERT INTO public.ch_leases VALUES ('ch-3', 99, gen_random_uuid(), now() + interval '1 hour');

SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('ch-1');
SELECT count(*) AS child_only FROM sandbox_store.sandbox_get('ch-2');
SET sandbox_store.direct_reads = off;
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('ch-1');
SELECT count(*) AS child_only FROM sandbox_store.sandbox_get('ch-2');
RESET sandbox_store.direct_reads;
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_list('ch-t');
BEGIN;
SELECT action, provider_sandbox_id FROM sandbox_store.sandbox_ensure('ch-1', 'run-1');
SELECT action FROM sandbox_store.sandbox_ensure('ch-2', 'run-1');
ROLLBACK;
-- The child's claim row is no claim: the key is free, in both modes.
SELECT sandbox_store.sandbox_try_lock('ch-3') AS free;
SELECT fence < 99 AS own_fence FROM sandbox_store.sandbox_claim('ch-3', '1 minute');
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_reap('1 day');
SELECT sandbox_store.sandbox_delete('ch-2') AS deleted;
-- The children are as they were.
SELECT key, provider_sandbox_id, latest_run_id FROM ONLY public.ch_instances ORDER BY key;
SELECT key, fence FROM ONLY public.ch_leases ORDER BY key;
DROP TABLE public.ch_instances, public.ch_leases;

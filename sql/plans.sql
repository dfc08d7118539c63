--
-- plans: every statement the functions run for one key (or for one
-- thread's records) finds its rows through an index, even when a backend
-- plans it while the tables are empty and freshly vacuumed.
--
-- A backend keeps its plans (generic plans, made after five custom ones)
-- until something invalidates them.  Planned on a table the planner
-- believes empty (VACUUM of an empty table: 0 pages, 0 tuples), a probe of
-- the primary key is a sequential scan costing nothing, and the backend
-- would keep scanning the whole table on every call while the table grows
-- (a lease-mode create was measured slowing down 4x within 5 seconds).
--
\i sql/include/fresh.sql

VACUUM sandbox_store.instances, sandbox_store.leases;
-- What the planner sees: no pages, no tuples.
SELECT relname, relpages, reltuples FROM pg_class
 WHERE oid IN ('sandbox_store.instances'::regclass, 'sandbox_store.leases'::regclass) ORDER BY relname;

-- A new backend has planned nothing yet.  pg_temp.every_call calls every
-- function 8 times (with direct reads off, sandbox_get and the lock-mode
-- claim check run their statements too); pg_temp.scans_since gives the
-- scans of the tables since scans_before was taken (this backend's counts,
-- which include statements of earlier transactions not yet reported).
\c
SET sandbox_store.direct_reads = off;
CREATE TEMP TABLE scans_before (relname name, seq_scan int8, idx_scan int8);
CREATE FUNCTION pg_temp.scans_since(OUT relname name, OUT seq_scans int8, OUT probed bool)
RETURNS SETOF record LANGUAGE sql AS $$
  SELECT s.relname, s.seq_scan - b.seq_scan, s.idx_scan - b.idx_scan > 0
    FROM pg_stat_xact_user_tables s JOIN scans_before b USING (relname)
   WHERE s.schemaname = 'sandbox_store' AND s.relname IN ('instances', 'leases') ORDER BY 1
$$;
CREATE FUNCTION pg_temp.every_call(round text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  f int8;
  t uuid;
BEGIN
  FOR i IN 1..8 LOOP
    PERFORM sandbox_store.sandbox_upsert('p-' || round || i, 'e2b', 'sbx', 'p-t' || round);
    PERFORM sandbox_store.sandbox_get('p-' || round || i);
    PERFORM sandbox_store.sandbox_list('p-t' || round);
    PERFORM sandbox_store.sandbox_ensure('p-' || round || i, 'run-1');
    PERFORM sandbox_store.sandbox_ensure('p-' || round || i, 'run-2', max_age => '0 s');
    PERFORM sandbox_store.sandbox_ensure('n-' || round || i, 'run-1');
    PERFORM sandbox_store.sandbox_lock_holder('p-' || round || i);
    PERFORM sandbox_store.sandbox_delete('p-' || round || i);
    -- Lease mode: claim, renew, fenced write and delete, release.
    SELECT c.fence, c.owner_token INTO f, t FROM sandbox_store.sandbox_claim('q-' || round || i, '1 hour') AS c;
    PERFORM sandbox_store.sandbox_renew('q-' || round || i, t, '1 hour');
    PERFORM sandbox_store.sandbox_upsert('q-' || round || i, 'e2b', 'sbx', 'q-t', fence => f);
    PERFORM sandbox_store.sandbox_delete('q-' || round || i, fence => f);
    PERFORM sandbox_store.sandbox_release('q-' || round || i, t);
    -- The two-commit create: ensure with a lease, then the write that releases.
    SELECT e.fence INTO f FROM sandbox_store.sandbox_ensure('r-' || round || i, 'run-1', lease => '1 hour') AS e;
    PERFORM sandbox_store.sandbox_upsert_release('r-' || round || i, f, 'e2b', 'sbx', 'r-t');
    -- Taking over an expired claim retires it first.
    PERFORM sandbox_store.sandbox_claim('s-' || round || i, '1 millisecond');
    PERFORM pg_catalog.pg_sleep(0.002);
    PERFORM sandbox_store.sandbox_claim('s-' || round || i, '1 hour');
  END LOOP;
END $$;
BEGIN;
INSERT INTO scans_before
  SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE schemaname = 'sandbox_store';
SELECT pg_temp.every_call('a');
SELECT * FROM pg_temp.scans_since();
COMMIT;

-- The functions did their work (a failed call would have stopped the loop).
SELECT count(*) AS records, count(*) FILTER (WHERE key LIKE 'r-%') AS lease_created
  FROM sandbox_store.instances;
SELECT count(*) AS claims FROM sandbox_store.claims;

-- The same backend, its plans kept: the tables are emptied and vacuumed
-- again, which invalidates them; the plans made next use the indexes too.
DELETE FROM sandbox_store.instances;
DELETE FROM sandbox_store.leases;
VACUUM sandbox_store.instances, sandbox_store.leases;
BEGIN;
TRUNCATE scans_before;
INSERT INTO scans_before
  SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE schemaname = 'sandbox_store';
SELECT pg_temp.every_call('b');
SELECT * FROM pg_temp.scans_since();
COMMIT;
SELECT count(*) AS records FROM sandbox_store.instances;

-- A caller's settings do not shape the plans either.  A search_path other
-- than the one a plan was made under makes PostgreSQL plan the statement
-- again, inside the call: with the records deleted (the planner still
-- believes the tables empty) and this session's search_path changed, the
-- plans made next use the indexes too.
DELETE FROM sandbox_store.instances;
DELETE FROM sandbox_store.leases;
SET search_path = sandbox_store, public;
BEGIN;
TRUNCATE scans_before;
INSERT INTO scans_before
  SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE schemaname = 'sandbox_store';
SELECT pg_temp.every_call('c');
SELECT * FROM pg_temp.scans_since();
COMMIT;
RESET search_path;

-- Plans made while the caller has index and bitmap scans off (the tables
-- vacuumed again, so every plan is made anew) use the indexes, and so do
-- the calls after the settings are reset.
DELETE FROM sandbox_store.instances;
DELETE FROM sandbox_store.leases;
VACUUM sandbox_store.instances, sandbox_store.leases;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
BEGIN;
TRUNCATE scans_before;
INSERT INTO scans_before
  SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE schemaname = 'sandbox_store';
SELECT pg_temp.every_call('d');
SELECT * FROM pg_temp.scans_since();
COMMIT;
RESET enable_indexscan;
RESET enable_bitmapscan;
DELETE FROM sandbox_store.instances;
DELETE FROM sandbox_store.leases;
BEGIN;
TRUNCATE scans_before;
INSERT INTO scans_before
  SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE schemaname = 'sandbox_store';
SELECT pg_temp.every_call('e');
SELECT * FROM pg_temp.scans_since();
COMMIT;
SELECT count(*) AS records FROM sandbox_store.instances;

-- The run functions too: made in this backend while the run tables are
-- empty and vacuumed, and under the caller's index and bitmap scans off,
-- every single-run call probes the indexes (a pooled backend's plan of a
-- resume read would otherwise scan the whole log on every read).  Prune is
-- left out: it scans the logs by nature.
VACUUM sandbox_store.runs, sandbox_store.run_logs, sandbox_store.run_log_entries;
CREATE FUNCTION pg_temp.run_seq_scans_since(OUT relname name, OUT seq_scans int8)
RETURNS SETOF record LANGUAGE sql AS $$
  SELECT s.relname, s.seq_scan - b.seq_scan
    FROM pg_stat_xact_user_tables s JOIN scans_before b USING (relname)
   WHERE s.schemaname = 'sandbox_store' AND s.relname IN ('runs', 'run_logs', 'run_log_entries') ORDER BY 1
$$;
CREATE FUNCTION pg_temp.every_run_call(round text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  r text;
  e int8;
BEGIN
  FOR i IN 1..8 LOOP
    r := 'run-' || round || i;
    PERFORM sandbox_store.run_create_or_resume(r, 'rt-' || round, i);
    e := sandbox_store.run_claim(r);
    PERFORM * FROM sandbox_store.run_log_watch(r);
    PERFORM sandbox_store.run_log_append(r, '[{"a": 1}, {"b": 2}]', e);
    PERFORM sandbox_store.run_log_upsert(r, '{2}', '[{"b": 3}]', e);
    PERFORM sandbox_store.run_update(r, '{"usage": {"t": 1}}', e);
    PERFORM * FROM sandbox_store.run_log_read(r, 1);
    PERFORM * FROM sandbox_store.run_log_status(r);
    PERFORM sandbox_store.run_get(r);
    PERFORM sandbox_store.run_list_by_thread('rt-' || round);
    PERFORM sandbox_store.run_find_active('rt-' || round);
    PERFORM sandbox_store.run_log_close(r, e);
    PERFORM sandbox_store.run_update(r, '{"status": "completed"}', e);
  END LOOP;
END $$;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
BEGIN;
TRUNCATE scans_before;
INSERT INTO scans_before
  SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE schemaname = 'sandbox_store';
SELECT pg_temp.every_run_call('a');
SELECT * FROM pg_temp.run_seq_scans_since();
COMMIT;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT count(*) AS runs, count(*) FILTER (WHERE status = 'completed') AS completed,
       (SELECT count(*) FROM sandbox_store.run_log_entries) AS entries
  FROM sandbox_store.runs;

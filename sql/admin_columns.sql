--
-- admin_columns: an admin adds and drops columns of sandbox_store.instances
-- (and retypes and adds columns of the run tables, at the end).
--
-- The functions that return rows of the table (sandbox_get, sandbox_list,
-- sandbox_upsert, sandbox_upsert_release, sandbox_reap) return its row
-- type, which then has the extra column (with its stored value) or a
-- dropped one (invisible).  They must never crash, misread or fail because
-- of it, on either read path.
--
-- Since 1.4 the extension's event trigger refuses such columns (pg_dump
-- cannot carry them: test guard).  A superuser can still disable it, so
-- this test disables it first and checks that the functions stay robust.
--
\i sql/include/fresh.sql
DO $g$ BEGIN IF EXISTS (SELECT FROM pg_event_trigger WHERE evtname = 'sandbox_store_guard') THEN ALTER EVENT TRIGGER sandbox_store_guard DISABLE; END IF; END $g$;
CREATE ROLE ac_app;
-- (So that SET ROLE works for a non-superuser too: the SQL edition's suites
-- run as one with CREATEROLE.)
GRANT ac_app TO CURRENT_USER;
GRANT USAGE ON SCHEMA sandbox_store TO ac_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO ac_app;

SELECT key FROM sandbox_store.sandbox_upsert('ac-1', 'e2b', 'sbx-1', 'ac-t', 'snap-1', 'run-1',
       '2026-01-01 00:00:00+00');

-- An extra nullable column, and one NOT NULL with a default (a fast default:
-- the existing row does not hold it physically).
ALTER TABLE sandbox_store.instances ADD COLUMN note text;
ALTER TABLE sandbox_store.instances ADD COLUMN n int8 NOT NULL DEFAULT 7;

SET ROLE ac_app;
SELECT * FROM sandbox_store.sandbox_get('ac-1');
SET sandbox_store.direct_reads = off;
RESET ROLE;
SET sandbox_store.direct_reads = off;
SET ROLE ac_app;
SELECT * FROM sandbox_store.sandbox_get('ac-1');
SELECT * FROM sandbox_store.sandbox_list('ac-t');
SELECT * FROM sandbox_store.sandbox_upsert('ac-2', 'e2b', 'sbx-2', 'ac-t', NULL, 'run-2',
       '2026-01-02 00:00:00+00');
SELECT key, n FROM sandbox_store.sandbox_list('ac-t');
SELECT action, key, provider_sandbox_id FROM sandbox_store.sandbox_ensure('ac-2', 'run-3', max_age => '1 day');
-- The lease-mode create's last write (1.3) inserts by column name too: the
-- NOT NULL column gets its default.
SELECT action, fence AS acf5 FROM sandbox_store.sandbox_ensure('ac-5', 'run-5', lease => '1 hour') \gset
SELECT key, provider_sandbox_id, thread_id, note, n
  FROM sandbox_store.sandbox_upsert_release('ac-5', :acf5, 'e2b', 'sbx-5', 'ac-u');
RESET ROLE;
SELECT count(*) AS claims_left FROM sandbox_store.claims WHERE key = 'ac-5';
RESET sandbox_store.direct_reads;
UPDATE sandbox_store.instances SET note = 'kept', n = 42 WHERE key = 'ac-1';
SET ROLE ac_app;
SELECT key, note, n FROM sandbox_store.sandbox_get('ac-1');
SELECT key, note, n FROM sandbox_store.sandbox_list('ac-t');
SELECT key, note, n FROM sandbox_store.sandbox_reap(idle_for => '1 hour', max_rows => 1);
RESET ROLE;

-- Dropped again: the row type keeps a dropped column, which is skipped.
ALTER TABLE sandbox_store.instances DROP COLUMN note;
ALTER TABLE sandbox_store.instances DROP COLUMN n;
SET ROLE ac_app;
SELECT * FROM sandbox_store.sandbox_upsert('ac-3', 'e2b', 'sbx-3', 'ac-t', NULL, 'run-3',
       '2026-01-03 00:00:00+00');
SELECT * FROM sandbox_store.sandbox_get('ac-3');
SELECT * FROM sandbox_store.sandbox_list('ac-t');
RESET ROLE;
SET sandbox_store.direct_reads = off;
SET ROLE ac_app;
SELECT * FROM sandbox_store.sandbox_get('ac-3');
SELECT action, key FROM sandbox_store.sandbox_ensure('ac-3', 'run-4', max_age => '1 day');
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_reap(idle_for => '1 hour');
RESET ROLE;
RESET sandbox_store.direct_reads;

-- A column added in the middle of the record's columns' order is impossible
-- (ADD COLUMN appends), but a record column dropped and added again moves to
-- the end: the functions still return it under its name.
ALTER TABLE sandbox_store.instances DROP COLUMN latest_snapshot_id;
ALTER TABLE sandbox_store.instances ADD COLUMN latest_snapshot_id sandbox_store.bounded_text;
SELECT key, latest_snapshot_id FROM sandbox_store.sandbox_upsert('ac-4', 'e2b', 'sbx-4', 'ac-t', 'snap-4');
SELECT key, latest_snapshot_id FROM sandbox_store.sandbox_get('ac-4');
SELECT action, key, latest_snapshot_id, provider_sandbox_id FROM sandbox_store.sandbox_ensure('ac-4', 'run-5');
SELECT fence AS acf6 FROM sandbox_store.sandbox_claim('ac-6', '1 hour') \gset
SELECT key, latest_snapshot_id, provider_sandbox_id
  FROM sandbox_store.sandbox_upsert_release('ac-6', :acf6, 'e2b', 'sbx-6', 'ac-u', 'snap-6');
SELECT key, latest_snapshot_id FROM sandbox_store.sandbox_get('ac-6');
SELECT count(*) AS claims_left FROM sandbox_store.claims WHERE key = 'ac-6';

-- The run tables retyped (bigint to numeric): run_log_append reads the
-- tail and the epochs as bigints still, so the seqs go on from the tail, a
-- stale epoch is refused, and so is none once the epoch is cleared (the
-- detail names the highest epoch the run had: read as a bigint too).
SELECT sandbox_store.run_create_or_resume('ac-run', 'ac-t', 1767225600000) IS NOT NULL AS created;
SELECT sandbox_store.run_claim('ac-run') AS epoch \gset
SELECT sandbox_store.run_log_append('ac-run', '[{"n": 1}, {"n": 2}]', :epoch) AS before_retype;
ALTER TABLE sandbox_store.run_logs ALTER COLUMN last_seq TYPE numeric;
ALTER TABLE sandbox_store.runs ALTER COLUMN driver_epoch TYPE numeric, ALTER COLUMN max_driver_epoch TYPE numeric;
SELECT sandbox_store.run_log_append('ac-run', '[{"n": 3}, {"n": 4}]', :epoch) AS after_retype;
\set VERBOSITY sqlstate
SELECT sandbox_store.run_log_append('ac-run', '[{"n": 5}]', :epoch - 1);
\set VERBOSITY default
SELECT sandbox_store.run_update('ac-run', '{"driverEpoch": null}') AS cleared;
CREATE FUNCTION pg_temp.detail(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  d text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || d;
END $$;
SELECT replace(pg_temp.detail($q$SELECT sandbox_store.run_log_append('ac-run', '[{"n": 5}]')$q$), :'epoch', 'E')
       AS unfenced_after_clear;
SELECT seq, chunk FROM sandbox_store.run_log_read('ac-run', 0, 10);
-- The entries' seq retyped, then a column with a default added: the
-- append still writes the next seqs, and the new column gets its default.
SELECT sandbox_store.run_claim('ac-run') AS epoch \gset
ALTER TABLE sandbox_store.run_log_entries ALTER COLUMN seq TYPE numeric;
SELECT sandbox_store.run_log_append('ac-run', '[{"n": 6}, {"n": 7}]', :epoch) AS seq_retyped;
ALTER TABLE sandbox_store.run_log_entries ALTER COLUMN seq TYPE bigint, ADD COLUMN note text DEFAULT 'by default';
SELECT sandbox_store.run_log_append('ac-run', '[{"n": 8}]', :epoch) AS column_added;
SELECT seq, chunk, note FROM sandbox_store.run_log_entries WHERE run_id = 'ac-run' AND seq > 4 ORDER BY seq;

-- Put the table back as it was for the tests that follow.
SELECT sandbox_store.sandbox_delete(key) FROM sandbox_store.instances ORDER BY key;
DROP OWNED BY ac_app;
DROP ROLE ac_app;
\set ECHO none
\i sql/include/reinstall.sql
\set ECHO all

--
-- security: an app role needs USAGE on the schema and EXECUTE on the
-- functions, and gets nothing on the table; a hostile search_path is never used.
--
\pset null '<null>'
SET timezone = 'UTC';

CREATE ROLE regress_sb_app;
CREATE ROLE regress_sb_nobody;
CREATE ROLE regress_sb_usage_only;
-- The two lines the README tells an admin to run:
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_app;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_usage_only;

CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- The app role does everything through the functions.
SET ROLE regress_sb_app;
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('sec-1', 'run-1');
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_upsert('sec-1', 'p', 'sbx-sec', 'thread-sec');
COMMIT;
SELECT action, latest_run_id FROM sandbox_store.sandbox_ensure('sec-1', 'run-2');
SELECT key FROM sandbox_store.sandbox_get('sec-1');
SELECT key FROM sandbox_store.sandbox_list('thread-sec');
BEGIN;
SELECT sandbox_store.sandbox_lock('sec-1'), sandbox_store.sandbox_try_lock('sec-2');
SELECT sandbox_store.sandbox_lock_id('sec-1') IS NOT NULL AS has_id;
COMMIT;
SELECT sandbox_store.sandbox_delete('sec-1');
-- ... and nothing to the table directly.
SELECT pg_temp.err($$SELECT * FROM sandbox_store.instances$$);
SELECT pg_temp.err($$INSERT INTO sandbox_store.instances VALUES ('x', 'p', 's', NULL, 't', NULL, now())$$);
SELECT pg_temp.err($$UPDATE sandbox_store.instances SET provider = 'x'$$);
SELECT pg_temp.err($$DELETE FROM sandbox_store.instances$$);
SELECT pg_temp.err($$TRUNCATE sandbox_store.instances$$);
SELECT pg_temp.err($$CREATE TABLE sandbox_store.mine (i int)$$);
RESET ROLE;

-- A role without grants can call nothing.
SET ROLE regress_sb_nobody;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_get('sec-1')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_ensure('sec-1', 'r')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock('sec-1')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.instances$$);
RESET ROLE;
-- USAGE alone is not enough: EXECUTE is granted per function.
SET ROLE regress_sb_usage_only;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_get('sec-1')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert('sec-1', 'p', 's', 't')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_delete('sec-1')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_list('t')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_ensure('sec-1', 'r')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock('sec-1')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_try_lock('sec-1')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock_id('sec-1')$$);
RESET ROLE;
SELECT count(*) FROM sandbox_store.instances WHERE key = 'sec-1';

-- A hostile search_path: objects named like those the extension uses, in a
-- schema searched before pg_catalog.
CREATE SCHEMA evil;
CREATE TABLE evil.instances (LIKE sandbox_store.instances);
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql
  AS $$ SELECT '2000-01-01 00:00:00+00'::timestamptz $$;
CREATE FUNCTION evil.octet_length(text) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION evil.hashtext(text) RETURNS int LANGUAGE sql AS $$ SELECT 42 $$;
CREATE FUNCTION evil.texteq_always(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.texteq_always);
CREATE FUNCTION evil.tsge_always(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR evil.>= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.tsge_always);
GRANT USAGE ON SCHEMA evil TO regress_sb_app;
GRANT ALL ON ALL TABLES IN SCHEMA evil TO regress_sb_app;

SET ROLE regress_sb_app;
SET search_path = evil, pg_catalog, public;
-- the hostile objects are what an unqualified name would find:
SELECT now() = '2000-01-01 00:00:00+00' AS evil_now, 'a' = 'b' AS evil_eq;
SELECT key FROM sandbox_store.sandbox_upsert('hostile-a', 'p', 'sbx-a', 'thread-h',
                                    updated_at => pg_catalog.now() - interval '2 hours');
SELECT key FROM sandbox_store.sandbox_upsert('hostile-b', 'p', 'sbx-b', 'thread-h');
-- key equality is the real one: 'hostile-a' does not match 'hostile-b'.
SELECT key FROM sandbox_store.sandbox_get('hostile-a');
SELECT key FROM sandbox_store.sandbox_list('thread-h') ORDER BY key;
SELECT sandbox_store.sandbox_delete('hostile-missing');
-- max_age uses the real now() and >=: the 2-hour-old record is stale.
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('hostile-a', 'run-h', max_age => '1 hour');
ROLLBACK;
-- resume stamps the real now().
BEGIN;
SELECT action, updated_at = pg_catalog.now() AS real_now
  FROM sandbox_store.sandbox_ensure('hostile-b', 'run-h');
COMMIT;
SELECT count(*) AS evil_rows FROM evil.instances;
RESET search_path;
RESET ROLE;
SELECT key, latest_run_id FROM sandbox_store.instances WHERE key LIKE 'hostile-%' ORDER BY key;

-- Installing under a hostile search_path works the same: every name in the
-- script is qualified.
DROP EXTENSION sandbox_store;
SET search_path = evil, pg_catalog, public;
CREATE EXTENSION sandbox_store;
-- shown under the hostile path, the constraints name pg_catalog's functions
SELECT pg_get_constraintdef(oid) FROM pg_constraint
 WHERE conrelid = 'sandbox_store.instances'::regclass AND contype = 'c' ORDER BY conname;
SELECT pg_get_function_arguments('sandbox_store.sandbox_upsert'::regproc);
RESET search_path;
SELECT count(*) AS evil_rows FROM evil.instances;

DROP SCHEMA evil CASCADE;
REVOKE ALL ON SCHEMA sandbox_store FROM regress_sb_app, regress_sb_usage_only;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store FROM regress_sb_app;
DROP ROLE regress_sb_app, regress_sb_nobody, regress_sb_usage_only;

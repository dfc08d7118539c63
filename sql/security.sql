--
-- security: what roles can and cannot do through the functions.  An app
-- role needs USAGE on the schema and EXECUTE on the functions and gets
-- nothing on the tables; a hostile search_path is never used, by the calls
-- (even when they first run under it) nor by the install script.  The
-- privileges themselves, as catalog facts, are in pgTAP 03_privileges.sql.
--
\i sql/include/fresh.sql
\pset null '<null>'
SET timezone = 'UTC';

CREATE ROLE regress_sb_app;
CREATE ROLE regress_sb_nobody;
CREATE ROLE regress_sb_usage_only;
-- (So that SET ROLE works for a non-superuser too: the SQL edition's suites
-- run as one with CREATEROLE.)
GRANT regress_sb_app, regress_sb_nobody, regress_sb_usage_only TO CURRENT_USER;
-- The two lines the README tells an admin to run:
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_app;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_usage_only;

-- After those two lines the app role can execute the documented interface
-- (docs/reference.md, "SQL interface") and nothing else: every function
-- the owner of the extension's tables owns, in any schema the app role may
-- use but PostgreSQL's own, this session's pg_temp and pg_tle's (whose
-- pgtle."sandbox_store--VERSION.sql"() functions only return the scripts
-- the installing role registered), against that list.  A helper that became callable would show in the first
-- query, a documented function the two lines miss in the second.  (An event
-- trigger's function cannot be called at all.)
CREATE TEMP TABLE documented (fn) AS VALUES
  ('sandbox_store.sandbox_upsert'), ('sandbox_store.sandbox_upsert_release'),
  ('sandbox_store.sandbox_get'), ('sandbox_store.sandbox_delete'),
  ('sandbox_store.sandbox_list'), ('sandbox_store.sandbox_ensure'),
  ('sandbox_store.sandbox_lock'), ('sandbox_store.sandbox_try_lock'),
  ('sandbox_store.sandbox_lock_id'), ('sandbox_store.sandbox_lock_holder'),
  ('sandbox_store.sandbox_claim'), ('sandbox_store.sandbox_renew'),
  ('sandbox_store.sandbox_release'), ('sandbox_store.sandbox_reap'),
  ('sandbox_store.checkpoint_acquire_writer'), ('sandbox_store.checkpoint_renew_writer'),
  ('sandbox_store.checkpoint_release_writer'), ('sandbox_store.checkpoint_append'),
  ('sandbox_store.checkpoint_delete_head'), ('sandbox_store.checkpoint_fork'),
  ('sandbox_store.checkpoint_get'), ('sandbox_store.checkpoint_list'),
  ('sandbox_store.checkpoint_head'), ('sandbox_store.checkpoint_blob_references'),
  ('sandbox_store.run_create_or_resume'), ('sandbox_store.run_get'),
  ('sandbox_store.run_update'), ('sandbox_store.run_list_by_thread'),
  ('sandbox_store.run_list_reclaimable'), ('sandbox_store.run_find_active'),
  ('sandbox_store.run_claim'), ('sandbox_store.run_log_append'),
  ('sandbox_store.run_log_upsert'), ('sandbox_store.run_log_close'),
  ('sandbox_store.run_log_read'), ('sandbox_store.run_log_status'), ('sandbox_store.run_log_watch'),
  ('sandbox_store.run_log_wake'),
  ('sandbox_store.run_log_prune'),
  ('sandbox_store.edition'), ('sandbox_store.unsupported_changes'),
  ('sandbox_store.distribute');
CREATE TEMP VIEW app_callable AS
SELECT n.nspname || '.' || p.proname AS fn, p.oid::regprocedure AS function
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname !~ '^pg_' AND n.nspname NOT IN ('information_schema', 'pgtle')
   AND has_schema_privilege('regress_sb_app', n.oid, 'USAGE')
   AND has_function_privilege('regress_sb_app', p.oid, 'EXECUTE')
   AND p.proowner = (SELECT relowner FROM pg_class WHERE oid = 'sandbox_store.instances'::regclass)
   AND p.prorettype <> 'event_trigger'::regtype;
SELECT function AS callable_but_not_documented FROM app_callable
 WHERE fn NOT IN (SELECT fn FROM documented) ORDER BY 1;
SELECT fn AS documented_but_not_callable FROM documented
 WHERE fn NOT IN (SELECT fn FROM app_callable) ORDER BY 1;
-- The helpers are out of reach, whatever the app role is granted on them:
-- drawing a fence past every fence (which would make every later claim
-- fail for good) is refused, and fence_seq stays where it was.
SELECT last_value AS fence_seq_before FROM sandbox_store.fence_seq \gset
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store_internal TO regress_sb_app;
SET ROLE regress_sb_app;
SELECT pg_temp.err($$SELECT sandbox_store_internal._draw_claim_fence(9223372036854775806)$$);
RESET ROLE;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store_internal FROM regress_sb_app;
SELECT last_value = :fence_seq_before AS fence_seq_unchanged FROM sandbox_store.fence_seq;

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
SELECT sandbox_store.sandbox_lock_holder('sec-1') = pg_backend_pid() AS holder_is_me;
COMMIT;
SELECT sandbox_store.sandbox_delete('sec-1');
-- The calls leave the caller's identity as it was.
SELECT current_user;
-- 1.1: lease mode, renew, release, fenced writes, reap and lock_holder, with
-- the same two grants.  (Tokens and fences are random or moving: kept in
-- psql variables, never printed.)
SELECT action, fence AS sec_fence, owner_token AS sec_token
  FROM sandbox_store.sandbox_ensure('sec-l', 'run-1', lease => '1 minute') \gset
SELECT :'action' AS action, :sec_fence > 0 AS has_fence;
SELECT key, provider_sandbox_id
  FROM sandbox_store.sandbox_upsert('sec-l', 'p', 'sbx-l', 'thread-sec', fence => :sec_fence);
SELECT sandbox_store.sandbox_renew('sec-l', :'sec_token', '2 minutes') > now() + interval '1 minute'
       AS renewed;
SELECT sandbox_store.sandbox_lock_holder('sec-l') AS lock_holder;
SELECT key FROM sandbox_store.sandbox_reap('100 years', max_rows => 1);
-- The claims view is not a function: the two grant lines do not open it.
SELECT pg_temp.err($$SELECT count(*) FROM sandbox_store.claims$$);
SELECT sandbox_store.sandbox_delete('sec-l', fence => :sec_fence);
SELECT sandbox_store.sandbox_release('sec-l', :'sec_token');
-- ... and nothing to the table directly.
SELECT pg_temp.err($$SELECT * FROM sandbox_store.instances$$);
SELECT pg_temp.err($$INSERT INTO sandbox_store.instances VALUES ('x', 'p', 's', NULL, 't', NULL, now())$$);
SELECT pg_temp.err($$UPDATE sandbox_store.instances SET provider = 'x'$$);
SELECT pg_temp.err($$DELETE FROM sandbox_store.instances$$);
SELECT pg_temp.err($$TRUNCATE sandbox_store.instances$$);
SELECT pg_temp.err($$CREATE TABLE sandbox_store.mine (i int)$$);
-- ... nor to the leases table or the fence sequence.
SELECT pg_temp.err($$SELECT * FROM sandbox_store.leases$$);
SELECT pg_temp.err($$INSERT INTO sandbox_store.leases VALUES ('x', 1, NULL, NULL)$$);
SELECT pg_temp.err($$UPDATE sandbox_store.leases SET fence = 1$$);
SELECT pg_temp.err($$DELETE FROM sandbox_store.leases$$);
SELECT pg_temp.err($$TRUNCATE sandbox_store.leases$$);
SELECT pg_temp.err($$SELECT nextval('sandbox_store.fence_seq')$$);
SELECT pg_temp.err($$SELECT setval('sandbox_store.fence_seq', 1)$$);
SELECT pg_temp.err($$SELECT currval('sandbox_store.fence_seq')$$);
SELECT pg_temp.err($$SELECT last_value FROM sandbox_store.fence_seq$$);
SELECT pg_temp.err($$ALTER SEQUENCE sandbox_store.fence_seq RESTART$$);
RESET ROLE;

-- Reading the claims view takes a grant of its own; it opens the view only,
-- read-only, and still not the table under it.
GRANT SELECT ON sandbox_store.claims TO regress_sb_app;
SET ROLE regress_sb_app;
SELECT fence AS sec_fence, owner_token AS sec_token
  FROM sandbox_store.sandbox_ensure('sec-l', 'run-2', lease => '1 minute') \gset
SELECT key, fence = :sec_fence AS same_fence, owner_token = :'sec_token' AS same_token,
       lease_expires_at > now() AS live
  FROM sandbox_store.claims;
SELECT pg_temp.err($$UPDATE sandbox_store.claims SET lease_expires_at = now()$$);
SELECT pg_temp.err($$DELETE FROM sandbox_store.claims$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.leases$$);
SELECT sandbox_store.sandbox_release('sec-l', :'sec_token');
-- 1.3: a write that ends the claim, with the same two grants.
SELECT fence AS sec_fence_u FROM sandbox_store.sandbox_claim('sec-u', '1 minute') \gset
SELECT key, provider_sandbox_id
  FROM sandbox_store.sandbox_upsert_release('sec-u', :sec_fence_u, 'p', 'sbx-u', 'thread-sec');
SELECT count(*) AS live_claims FROM sandbox_store.claims;
RESET ROLE;
REVOKE SELECT ON sandbox_store.claims FROM regress_sb_app;

-- The app role may not set the fence sequence, yet its claim moves the
-- sequence up when it is behind the key's fence: that setval runs as the
-- tables' owner.
SELECT setval('sandbox_store.fence_seq', 1) AS sequence_set_back;
SET ROLE regress_sb_app;
SELECT fence AS sec_fence2, owner_token AS sec_token2
  FROM sandbox_store.sandbox_claim('sec-l', '1 minute') \gset
SELECT :sec_fence2 > :sec_fence AS above_the_keys_last;
SELECT sandbox_store.sandbox_release('sec-l', :'sec_token2');
RESET ROLE;
SELECT last_value = :sec_fence2 AS drawn_from_the_sequence FROM sandbox_store.fence_seq;

-- A role without grants can call nothing, nor reach the relations.
SET ROLE regress_sb_nobody;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert('sec-1', 'p', 's', 't')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_get('sec-1')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_delete('sec-1')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_list('t')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_ensure('sec-1', 'r')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock('sec-1')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_try_lock('sec-1')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock_id('sec-1')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_renew('sec-1', gen_random_uuid(), '1 minute')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_release('sec-1', gen_random_uuid())$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_reap('1 day')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock_holder('sec-1')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_claim('sec-1', '1 minute')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('sec-1', 1, 'p', 's', 't')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.instances$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.claims$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.leases$$);
SELECT pg_temp.err($$SELECT nextval('sandbox_store.fence_seq')$$);
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
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_renew('sec-1', gen_random_uuid(), '1 minute')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_release('sec-1', gen_random_uuid())$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_reap('1 day')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock_holder('sec-1')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_claim('sec-1', '1 minute')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('sec-1', 1, 'p', 's', 't')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.claims$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.leases$$);
SELECT pg_temp.err($$SELECT nextval('sandbox_store.fence_seq')$$);
RESET ROLE;
SELECT count(*) FROM sandbox_store.instances WHERE key = 'sec-1';

-- A hostile search_path: look-alikes of every function and operator the
-- extension uses, in a schema searched before pg_catalog, and tables named
-- instances and leases there and in pg_temp (searched first for relations).
-- Every look-alike logs its calls to evil.calls.  A new backend, so that the
-- extension's statements are first prepared under that path.
\c -
SET timezone = 'UTC';
CREATE SCHEMA evil;
CREATE TABLE evil.calls (fn text NOT NULL);
CREATE TABLE evil.instances (key text, provider text, provider_sandbox_id text,
  latest_snapshot_id text, thread_id text, latest_run_id text, updated_at timestamptz);
CREATE TABLE evil.leases (key text, fence bigint, owner_token uuid, lease_expires_at timestamptz);
CREATE TEMP TABLE instances (LIKE evil.instances);
CREATE TEMP TABLE leases (LIKE evil.leases);
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO evil.calls VALUES ('now()'); RETURN '2000-01-01 00:00:00+00'; END $$;
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO evil.calls VALUES ('clock_timestamp()'); RETURN '2000-01-01 00:00:00+00'; END $$;
CREATE FUNCTION evil.gen_random_uuid() RETURNS uuid LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO evil.calls VALUES ('gen_random_uuid()'); RETURN '00000000-0000-0000-0000-000000000000'; END $$;
CREATE FUNCTION evil.nextval(regclass) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO evil.calls VALUES ('nextval(regclass)'); RETURN 424242; END $$;
CREATE FUNCTION evil.hashtext(text) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO evil.calls VALUES ('hashtext(text)'); RETURN 42; END $$;
CREATE FUNCTION evil.octet_length(text) RETURNS int LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO evil.calls VALUES ('octet_length(text)'); RETURN 1; END $$;
CREATE FUNCTION evil.text_eq(text, text) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO evil.calls VALUES ('=(text,text)'); RETURN true; END $$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.text_eq);
CREATE FUNCTION evil.ts_cmp(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO evil.calls VALUES ('comparison(timestamptz,timestamptz)'); RETURN true; END $$;
CREATE OPERATOR evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.ts_cmp);
CREATE OPERATOR evil.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.ts_cmp);
CREATE OPERATOR evil.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.ts_cmp);
CREATE OPERATOR evil.>= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.ts_cmp);
CREATE FUNCTION evil.ts_arith(timestamptz, interval) RETURNS timestamptz LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO evil.calls VALUES ('arithmetic(timestamptz,interval)'); RETURN '2000-01-01 00:00:00+00'; END $$;
CREATE OPERATOR evil.+ (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = evil.ts_arith);
CREATE OPERATOR evil.- (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = evil.ts_arith);
GRANT USAGE ON SCHEMA evil TO regress_sb_app;
GRANT ALL ON ALL TABLES IN SCHEMA evil TO regress_sb_app;

SET ROLE regress_sb_app;
SET search_path = evil, pg_catalog, public;
-- The traps are armed: an unqualified name finds the look-alike (thirteen
-- calls logged), and instances and leases are the temporary tables.
SELECT now() = '2000-01-01 00:00:00+00' AS "now", clock_timestamp() = '2000-01-01 00:00:00+00' AS "clock",
       gen_random_uuid() = '00000000-0000-0000-0000-000000000000' AS "uuid",
       nextval('sandbox_store.fence_seq') = 424242 AS "nextval", hashtext('x') = 42 AS "hashtext",
       octet_length('abcd') = 1 AS "octet_length", 'a' = 'b' AS "=";
SELECT '2001-01-01'::timestamptz < '2000-01-01'::timestamptz AS "<",
       '2001-01-01'::timestamptz <= '2000-01-01'::timestamptz AS "<=",
       '2000-01-01'::timestamptz > '2001-01-01'::timestamptz AS ">",
       '2000-01-01'::timestamptz >= '2001-01-01'::timestamptz AS ">=",
       '2001-01-01'::timestamptz + interval '1 day' = '2000-01-01' AS "+",
       '2001-01-01'::timestamptz - interval '1 day' = '2000-01-01' AS "-";
SELECT count(*) AS trap_calls FROM evil.calls;
DELETE FROM evil.calls;
SELECT c.relname, c.relnamespace = pg_my_temp_schema() AS in_pg_temp
  FROM pg_class c WHERE c.oid IN ('instances'::regclass, 'leases'::regclass) ORDER BY 1;
-- The calls.  upsert's updated_at default is the real now().
SELECT key FROM sandbox_store.sandbox_upsert('hostile-a', 'p', 'sbx-a', 'thread-h',
                                    updated_at => pg_catalog.now() OPERATOR(pg_catalog.-) interval '2 hours');
SELECT key, updated_at = pg_catalog.now() AS real_now
  FROM sandbox_store.sandbox_upsert('hostile-b', 'p', 'sbx-b', 'thread-h');
SELECT key FROM sandbox_store.sandbox_upsert('hostile-o', 'p', 'sbx-o', 'thread-o');
SELECT key FROM sandbox_store.sandbox_upsert('hostile-x', 'p', 'sbx-x', 'thread-o');
-- key and thread equality are the real ones; list is most recent first.
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('hostile-a');
SELECT key FROM sandbox_store.sandbox_list('thread-h');
SELECT sandbox_store.sandbox_delete('hostile-x') AS deleted_x,
       sandbox_store.sandbox_delete('hostile-missing') AS deleted_missing;
-- max_age uses the real now() and >=: the 2-hour-old record is stale.  The
-- key's lock is the real one (its id is compared with the normal path's below).
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('hostile-a', 'run-h', max_age => '1 hour');
SELECT sandbox_store.sandbox_lock_id('hostile-a') AS h_lock_id \gset
RESET ROLE;
SELECT count(*) AS holds_the_lock FROM sandbox_store.key_locks
 WHERE pid = pg_backend_pid() AND granted AND lock_id = :h_lock_id;
SET ROLE regress_sb_app;
ROLLBACK;
-- resume stamps the real now().
BEGIN;
SELECT action, updated_at = pg_catalog.now() AS real_now
  FROM sandbox_store.sandbox_ensure('hostile-b', 'run-h');
COMMIT;
-- another provider is compared for real: recreate.
BEGIN;
SELECT action, provider FROM sandbox_store.sandbox_ensure('hostile-o', 'run-h', provider => 'q');
ROLLBACK;
-- Lease mode under the hostile path: real fence, token and clock.
SELECT action AS h_action, fence AS h_fence, owner_token AS h_token,
       lease_expires_at AS h_expires
  FROM sandbox_store.sandbox_ensure('hostile-c', 'run-h', lease => '1 minute') \gset
SELECT sandbox_store.sandbox_renew('hostile-c', :'h_token', '2 minutes') AS h_renewed \gset
SELECT key FROM sandbox_store.sandbox_upsert('hostile-c', 'p', 'sbx-c', 'thread-h', fence => :h_fence);
-- the reaper's "idle longer than" uses the real < and -: nothing is 100 years old.
SELECT key FROM sandbox_store.sandbox_reap('100 years');
SELECT sandbox_store.sandbox_release('hostile-c', :'h_token');
-- 1.3: a claim, then the write that ends it.
SELECT fence AS h_fence_u FROM sandbox_store.sandbox_claim('hostile-u', '1 minute') \gset
SELECT key, provider_sandbox_id
  FROM sandbox_store.sandbox_upsert_release('hostile-u', :h_fence_u, 'p', 'sbx-u', 'thread-u');
RESET ROLE;
-- 1.4: the guard (an event trigger) refuses a column on instances and lets
-- DDL on another table through.
\set VERBOSITY sqlstate
ALTER TABLE sandbox_store.instances ADD COLUMN region text;
ALTER TABLE evil.instances ADD COLUMN region text;
\set VERBOSITY default
RESET search_path;
SELECT :'h_action' AS action,
       :h_fence <> 424242 AS real_fence,
       :'h_token'::uuid <> '00000000-0000-0000-0000-000000000000' AS real_token,
       :'h_expires'::timestamptz > clock_timestamp() + interval '50 seconds' AS real_expiry,
       :'h_renewed'::timestamptz > clock_timestamp() + interval '110 seconds' AS real_renewal,
       :h_lock_id = sandbox_store.sandbox_lock_id('hostile-a') AS real_lock_id;
-- Every write went to the extension's tables, each to its own key.
SELECT key, fence = CASE key WHEN 'hostile-c' THEN :h_fence ELSE :h_fence_u END AS same_fence,
       owner_token, lease_expires_at
  FROM sandbox_store.leases WHERE key LIKE 'hostile-%' ORDER BY key;
SELECT key, provider, provider_sandbox_id, thread_id, latest_run_id
  FROM sandbox_store.instances WHERE key LIKE 'hostile-%' ORDER BY key;
SELECT (SELECT count(*) FROM evil.instances) AS evil_instances,
       (SELECT count(*) FROM pg_temp.instances) AS temp_instances,
       (SELECT count(*) FROM evil.leases) AS evil_leases,
       (SELECT count(*) FROM pg_temp.leases) AS temp_leases;

-- Installing under a hostile search_path works the same: every name in the
-- script is qualified.
SET search_path = evil, pg_catalog, public;
\set ECHO none
\i sql/include/reinstall.sql
\set ECHO all
-- shown under the hostile path, the constraints name pg_catalog's functions
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE (conrelid IN ('sandbox_store.instances'::regclass, 'sandbox_store.leases'::regclass)
        OR contypid = 'sandbox_store.bounded_text'::regtype)
   AND contype = 'c' ORDER BY conname;
SELECT pg_get_function_arguments('sandbox_store.sandbox_upsert'::regproc);
RESET search_path;
SELECT count(*) AS evil_rows FROM evil.instances;
-- No look-alike was ever called, by a function or by the install script.
SELECT DISTINCT fn FROM evil.calls ORDER BY fn;

DROP SCHEMA evil CASCADE;
REVOKE ALL ON SCHEMA sandbox_store FROM regress_sb_app, regress_sb_usage_only;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store FROM regress_sb_app;
DROP ROLE regress_sb_app, regress_sb_nobody, regress_sb_usage_only;

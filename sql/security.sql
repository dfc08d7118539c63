--
-- security: an app role needs USAGE on the schema and EXECUTE on the
-- functions, and gets nothing on the table; a hostile search_path is never used.
--
\i sql/include/fresh.sql
\pset null '<null>'
SET timezone = 'UTC';

CREATE ROLE regress_sb_app;
CREATE ROLE regress_sb_nobody;
CREATE ROLE regress_sb_usage_only;
-- The two lines the README tells an admin to run:
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_app;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_usage_only;

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

-- A role without grants can call nothing.
SET ROLE regress_sb_nobody;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_get('sec-1')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_ensure('sec-1', 'r')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock('sec-1')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.instances$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_ensure('sec-1', 'r', lease => '1 minute')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_renew('sec-1', gen_random_uuid(), '1 minute')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_release('sec-1', gen_random_uuid())$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_reap('1 day')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock_holder('sec-1')$$);
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
SELECT pg_temp.err($$SELECT * FROM sandbox_store.claims$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.leases$$);
SELECT pg_temp.err($$SELECT nextval('sandbox_store.fence_seq')$$);
RESET ROLE;
SELECT count(*) FROM sandbox_store.instances WHERE key = 'sec-1';

-- A hostile search_path: objects named like those the extension uses, in a
-- schema searched before pg_catalog.
CREATE SCHEMA evil;
CREATE TABLE evil.instances (key text, provider text, provider_sandbox_id text,
  latest_snapshot_id text, thread_id text, latest_run_id text, updated_at timestamptz);
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql
  AS $$ SELECT '2000-01-01 00:00:00+00'::timestamptz $$;
CREATE FUNCTION evil.octet_length(text) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION evil.hashtext(text) RETURNS int LANGUAGE sql AS $$ SELECT 42 $$;
CREATE FUNCTION evil.texteq_always(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.texteq_always);
CREATE FUNCTION evil.tsge_always(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR evil.>= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.tsge_always);
-- 1.1: look-alikes of what claims and the reaper use.
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz LANGUAGE sql
  AS $$ SELECT '2000-01-01 00:00:00+00'::timestamptz $$;
CREATE FUNCTION evil.gen_random_uuid() RETURNS uuid LANGUAGE sql
  AS $$ SELECT '00000000-0000-0000-0000-000000000000'::uuid $$;
CREATE FUNCTION evil.nextval(regclass) RETURNS bigint LANGUAGE sql AS $$ SELECT 424242::bigint $$;
CREATE FUNCTION evil.tscmp_always(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR evil.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.tscmp_always);
CREATE OPERATOR evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.tscmp_always);
CREATE OPERATOR evil.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.tscmp_always);
CREATE FUNCTION evil.tspl(timestamptz, interval) RETURNS timestamptz LANGUAGE sql
  AS $$ SELECT '2000-01-01 00:00:00+00'::timestamptz $$;
CREATE OPERATOR evil.+ (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = evil.tspl);
CREATE OPERATOR evil.- (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = evil.tspl);
GRANT USAGE ON SCHEMA evil TO regress_sb_app;
GRANT ALL ON ALL TABLES IN SCHEMA evil TO regress_sb_app;

SET ROLE regress_sb_app;
SET search_path = evil, pg_catalog, public;
-- the hostile objects are what an unqualified name would find:
SELECT now() = '2000-01-01 00:00:00+00' AS evil_now, 'a' = 'b' AS evil_eq,
       clock_timestamp() = '2000-01-01 00:00:00+00' AS evil_clock,
       gen_random_uuid() = '00000000-0000-0000-0000-000000000000' AS evil_uuid,
       nextval('sandbox_store.fence_seq') = 424242 AS evil_nextval,
       pg_catalog.now() < '1999-01-01'::timestamptz AS evil_lt;
SELECT key FROM sandbox_store.sandbox_upsert('hostile-a', 'p', 'sbx-a', 'thread-h',
                                    updated_at => pg_catalog.now() OPERATOR(pg_catalog.-) interval '2 hours');
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
-- Lease mode under the hostile path: real fence, token and clock.
SELECT action AS h_action, fence AS h_fence, owner_token AS h_token,
       lease_expires_at AS h_expires
  FROM sandbox_store.sandbox_ensure('hostile-c', 'run-h', lease => '1 minute') \gset
SELECT sandbox_store.sandbox_renew('hostile-c', :'h_token', '2 minutes') AS h_renewed \gset
SELECT key FROM sandbox_store.sandbox_upsert('hostile-c', 'p', 'sbx-c', 'thread-h', fence => :h_fence);
-- the reaper's "idle longer than" uses the real < and -: nothing is 100 years old.
SELECT key FROM sandbox_store.sandbox_reap('100 years');
SELECT sandbox_store.sandbox_release('hostile-c', :'h_token');
RESET search_path;
RESET ROLE;
SELECT :'h_action' AS action,
       :h_fence <> 424242 AS real_fence,
       :'h_token'::uuid <> '00000000-0000-0000-0000-000000000000' AS real_token,
       :'h_expires'::timestamptz > clock_timestamp() + interval '50 seconds' AS real_expiry,
       :'h_renewed'::timestamptz > clock_timestamp() + interval '110 seconds' AS real_renewal;
SELECT key, fence = :h_fence AS same_fence, owner_token, lease_expires_at
  FROM sandbox_store.leases WHERE key = 'hostile-c';
SELECT key, latest_run_id FROM sandbox_store.instances WHERE key LIKE 'hostile-%' ORDER BY key;

-- Installing under a hostile search_path works the same: every name in the
-- script is qualified.
DROP EXTENSION sandbox_store;
SET search_path = evil, pg_catalog, public;
CREATE EXTENSION sandbox_store;
-- shown under the hostile path, the constraints name pg_catalog's functions
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE (conrelid IN ('sandbox_store.instances'::regclass, 'sandbox_store.leases'::regclass)
        OR contypid = 'sandbox_store.bounded_text'::regtype)
   AND contype = 'c' ORDER BY conname;
SELECT pg_get_function_arguments('sandbox_store.sandbox_upsert'::regproc);
RESET search_path;
SELECT count(*) AS evil_rows FROM evil.instances;

DROP SCHEMA evil CASCADE;
REVOKE ALL ON SCHEMA sandbox_store FROM regress_sb_app, regress_sb_usage_only;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store FROM regress_sb_app;
DROP ROLE regress_sb_app, regress_sb_nobody, regress_sb_usage_only;

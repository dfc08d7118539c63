-- A hostile search_path (docs/reference.md, security): schema evil is searched before
-- pg_catalog and holds look-alikes of what the extension uses: now(), an
-- always-true = (text, text), >= (timestamptz, timestamptz), - (timestamptz,
-- interval), hashtext(), octet_length(), and tables named instances (in evil
-- and in pg_temp, which is searched first for relations).  Version 1.1 adds
-- look-alikes of what lease mode and the reaper use: clock_timestamp(),
-- gen_random_uuid(), nextval(regclass), > < <= (timestamptz, timestamptz),
-- + (timestamptz, interval), and tables named leases.  Every trap logs its
-- calls to evil.calls.
--
-- The extension is first called (so its SPI plans are first prepared) under
-- the hostile path.  Results are captured into temporary tables and checked
-- afterwards under the normal search_path, because pgTAP itself is not safe
-- against these traps.
BEGIN;
CREATE EXTENSION IF NOT EXISTS sandbox_store;

SELECT plan(24);

-- The traps ---------------------------------------------------------------

CREATE SCHEMA evil;
CREATE TABLE evil.calls (fn text NOT NULL);

CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('now()'); RETURN '2001-01-01 00:00:30+00'; END $$;

CREATE FUNCTION evil.text_eq(text, text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('=(text,text)'); RETURN true; END $$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.text_eq);

CREATE FUNCTION evil.ts_ge(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('>=(timestamptz,timestamptz)'); RETURN true; END $$;
CREATE OPERATOR evil.>= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.ts_ge);

CREATE FUNCTION evil.ts_mi(timestamptz, interval) RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('-(timestamptz,interval)'); RETURN '1970-01-01 00:00:00+00'; END $$;
CREATE OPERATOR evil.- (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = evil.ts_mi);

CREATE FUNCTION evil.hashtext(text) RETURNS integer LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('hashtext(text)'); RETURN 0; END $$;

CREATE FUNCTION evil.octet_length(text) RETURNS integer LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('octet_length(text)'); RETURN 1; END $$;

CREATE TABLE evil.instances (LIKE sandbox_store.instances);
CREATE TEMP TABLE instances (LIKE sandbox_store.instances) ON COMMIT DROP;

-- 1.1: the look-alikes of lease mode and the reaper.
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('clock_timestamp()'); RETURN '2001-01-01 00:00:40+00'; END $$;

CREATE FUNCTION evil.gen_random_uuid() RETURNS uuid LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('gen_random_uuid()'); RETURN '00000000-0000-0000-0000-000000000000'; END $$;

CREATE FUNCTION evil.nextval(regclass) RETURNS bigint LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('nextval(regclass)'); RETURN 424242; END $$;

CREATE FUNCTION evil.ts_gt(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('>(timestamptz,timestamptz)'); RETURN true; END $$;
CREATE OPERATOR evil.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.ts_gt);

CREATE FUNCTION evil.ts_lt(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('<(timestamptz,timestamptz)'); RETURN true; END $$;
CREATE OPERATOR evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.ts_lt);

CREATE FUNCTION evil.ts_le(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('<=(timestamptz,timestamptz)'); RETURN true; END $$;
CREATE OPERATOR evil.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.ts_le);

CREATE FUNCTION evil.ts_pl(timestamptz, interval) RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS
$$ BEGIN INSERT INTO evil.calls VALUES ('+(timestamptz,interval)'); RETURN '1970-01-01 00:00:00+00'; END $$;
CREATE OPERATOR evil.+ (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = evil.ts_pl);

CREATE TABLE evil.leases (LIKE sandbox_store.leases);
CREATE TEMP TABLE leases (LIKE sandbox_store.leases) ON COMMIT DROP;

-- (1.4) Run a DDL statement, returning 'ok' or its SQLSTATE (no operator
-- or function a look-alike could replace).
CREATE FUNCTION pg_temp.try_ddl(q text) RETURNS text LANGUAGE plpgsql AS
$$ BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $$;

-- Capture tables (created under the normal path, without calling the extension).
CREATE TEMP TABLE h_upsert ON COMMIT DROP AS
    SELECT 0 AS n, * FROM sandbox_store.instances WHERE false;
CREATE TEMP TABLE h_ensure (n int, action text, key text, provider text,
    provider_sandbox_id text, latest_snapshot_id text, thread_id text, latest_run_id text,
    updated_at timestamptz, fence bigint, owner_token uuid, lease_expires_at timestamptz)
    ON COMMIT DROP;

-- Under the hostile search_path -------------------------------------------

SET LOCAL search_path = evil, pg_catalog;

-- The traps are armed: unqualified names resolve to evil.
CREATE TEMP TABLE h_armed ON COMMIT DROP AS
    SELECT now() AS now_is,
           ('a'::text = 'b'::text) AS a_eq_b,
           ('1970-01-01'::timestamptz >= '2001-01-01'::timestamptz) AS old_ge_new,
           ('2001-01-01'::timestamptz - '1 day'::interval) AS minus_is,
           hashtext('x') AS hashtext_is,
           octet_length('abcd') AS octet_length_is,
           (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE c.oid = 'instances'::regclass) AS instances_schema;
CREATE TEMP TABLE h_armed_calls ON COMMIT DROP AS SELECT count(*) AS n FROM evil.calls;
DELETE FROM evil.calls;
CREATE TEMP TABLE h_armed2 ON COMMIT DROP AS
    SELECT clock_timestamp() AS clock_is,
           gen_random_uuid() AS uuid_is,
           nextval('sandbox_store.fence_seq') AS nextval_is,
           ('1970-01-01'::timestamptz > '2001-01-01'::timestamptz) AS old_gt_new,
           ('2001-01-01'::timestamptz < '1970-01-01'::timestamptz) AS new_lt_old,
           ('2001-01-01'::timestamptz <= '1970-01-01'::timestamptz) AS new_le_old,
           ('2001-01-01'::timestamptz + '1 day'::interval) AS plus_is,
           (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE c.oid = 'leases'::regclass) AS leases_schema;
CREATE TEMP TABLE h_armed2_calls ON COMMIT DROP AS SELECT count(*) AS n FROM evil.calls;
DELETE FROM evil.calls;

INSERT INTO h_upsert SELECT 1, * FROM sandbox_store.sandbox_upsert(
    key => 'a', provider => 'p1', provider_sandbox_id => 'sb-a', thread_id => 't1',
    updated_at => '2001-01-01 00:00:00+00');
INSERT INTO h_upsert SELECT 2, * FROM sandbox_store.sandbox_upsert(
    key => 'b', provider => 'p1', provider_sandbox_id => 'sb-b', thread_id => 't2');
INSERT INTO h_upsert SELECT 3, * FROM sandbox_store.sandbox_upsert(
    key => 'c', provider => 'p1', provider_sandbox_id => 'sb-c', thread_id => 't1',
    latest_snapshot_id => 'snap-c', updated_at => '2001-01-01 00:00:10+00');

CREATE TEMP TABLE h_get_a ON COMMIT DROP AS
    SELECT * FROM sandbox_store.sandbox_get('a');
CREATE TEMP TABLE h_list_t1 ON COMMIT DROP AS
    SELECT row_number() OVER () AS n, * FROM sandbox_store.sandbox_list('t1');

-- b is fresh: resume, stamped with the real now().
INSERT INTO h_ensure SELECT 1, * FROM sandbox_store.sandbox_ensure('b', 'run-b', max_age => '1 hour');
-- a was written in 2001: older than max_age by the real clock.
INSERT INTO h_ensure SELECT 2, * FROM sandbox_store.sandbox_ensure('a', 'run-a', max_age => '1 minute');
-- c belongs to provider p1, not p2.
INSERT INTO h_ensure SELECT 3, * FROM sandbox_store.sandbox_ensure('c', 'run-c', provider => 'p2');
-- zz has no record.
INSERT INTO h_ensure SELECT 4, * FROM sandbox_store.sandbox_ensure('zz', 'run-z');

CREATE TEMP TABLE h_lock_id ON COMMIT DROP AS
    SELECT sandbox_store.sandbox_lock_id('a') AS id;
CREATE TEMP TABLE h_delete ON COMMIT DROP AS
    SELECT sandbox_store.sandbox_delete('a') AS deleted_a,
           sandbox_store.sandbox_delete('nope') AS deleted_nope;

-- Lease mode (1.1): claim d, renew, fenced upsert, reap, release.
INSERT INTO h_ensure SELECT 5, * FROM sandbox_store.sandbox_ensure('d', 'run-d', lease => '1 minute');
CREATE TEMP TABLE h_renew ON COMMIT DROP AS
    SELECT sandbox_store.sandbox_renew('d', (SELECT owner_token FROM h_ensure WHERE n = 5),
                                       '2 minutes') AS expires;
INSERT INTO h_upsert SELECT 4, * FROM sandbox_store.sandbox_upsert(
    key => 'd', provider => 'p1', provider_sandbox_id => 'sb-d', thread_id => 't3',
    updated_at => '2001-01-01 00:00:20+00', fence => (SELECT fence FROM h_ensure WHERE n = 5));
-- c (2001) is idle for 25 years, not 100: the real < and - keep it.
CREATE TEMP TABLE h_reap ON COMMIT DROP AS
    SELECT key FROM sandbox_store.sandbox_reap('100 years');
CREATE TEMP TABLE h_release ON COMMIT DROP AS
    SELECT sandbox_store.sandbox_release('d', (SELECT owner_token FROM h_ensure WHERE n = 5))
           AS released;
-- (1.3) claim e, then write it and end the claim in one call.
INSERT INTO h_ensure SELECT 6, * FROM sandbox_store.sandbox_ensure('e', 'run-e', lease => '1 minute');
INSERT INTO h_upsert SELECT 5, * FROM sandbox_store.sandbox_upsert_release(
    key => 'e', fence => (SELECT fence FROM h_ensure WHERE n = 6), provider => 'p1',
    provider_sandbox_id => 'sb-e', thread_id => 't4', updated_at => '2001-01-01 00:00:21+00');
-- (1.4) The guard (an event trigger) under the hostile path: it refuses a
-- column on instances and lets DDL on another table through.
CREATE TEMP TABLE h_guard ON COMMIT DROP AS
    SELECT pg_temp.try_ddl('ALTER TABLE sandbox_store.instances ADD COLUMN region text') AS extension_table,
           pg_temp.try_ddl('ALTER TABLE evil.instances ADD COLUMN region text') AS other_table;

-- Back to the normal search_path: check --------------------------------------

SET LOCAL search_path TO DEFAULT;

SELECT results_eq(
    $$ SELECT now_is, a_eq_b, old_ge_new, minus_is, hashtext_is, octet_length_is,
              instances_schema::text LIKE 'pg_temp%', (SELECT n FROM h_armed_calls)
         FROM h_armed $$,
    $$ VALUES ('2001-01-01 00:00:30+00'::timestamptz, true, true,
               '1970-01-01 00:00:00+00'::timestamptz, 0, 1, true, 6::bigint) $$,
    'the traps are armed: under the hostile path now(), =, >=, -, hashtext, octet_length and instances resolve to the look-alikes'
);

SELECT results_eq(
    $$ SELECT clock_is, uuid_is, nextval_is, old_gt_new, new_lt_old, new_le_old, plus_is,
              leases_schema::text LIKE 'pg_temp%', (SELECT n FROM h_armed2_calls)
         FROM h_armed2 $$,
    $$ VALUES ('2001-01-01 00:00:40+00'::timestamptz, '00000000-0000-0000-0000-000000000000'::uuid,
               424242::bigint, true, true, true, '1970-01-01 00:00:00+00'::timestamptz, true,
               7::bigint) $$,
    'the 1.1 traps are armed: clock_timestamp, gen_random_uuid, nextval, >, <, <=, + and leases resolve to the look-alikes'
);

SELECT results_eq(
    $$ SELECT n, key::text, provider::text, provider_sandbox_id::text, latest_snapshot_id::text,
              thread_id::text, latest_run_id::text, updated_at FROM h_upsert WHERE n <= 3 ORDER BY n $$,
    $$ VALUES (1, 'a'::text, 'p1'::text, 'sb-a'::text, NULL::text, 't1'::text, NULL::text,
               '2001-01-01 00:00:00+00'::timestamptz),
              (2, 'b', 'p1', 'sb-b', NULL, 't2', NULL, now()),
              (3, 'c', 'p1', 'sb-c', 'snap-c', 't1', NULL, '2001-01-01 00:00:10+00') $$,
    'hostile path: upsert returns what was written; the updated_at default is the real now()'
);

SELECT results_eq(
    $$ SELECT key::text, provider_sandbox_id::text FROM h_get_a $$,
    $$ VALUES ('a'::text, 'sb-a'::text) $$,
    'hostile path: get(''a'') returns the record of a only (not b or c)'
);

SELECT results_eq(
    $$ SELECT n, key::text FROM h_list_t1 ORDER BY n $$,
    $$ VALUES (1::bigint, 'c'::text), (2, 'a') $$,
    'hostile path: list(''t1'') returns the records of thread t1 only, most recent first'
);

SELECT results_eq(
    $$ SELECT action, key, provider_sandbox_id, latest_run_id, updated_at
         FROM h_ensure WHERE n = 1 $$,
    $$ VALUES ('resume'::text, 'b'::text, 'sb-b'::text, 'run-b'::text, now()) $$,
    'hostile path: ensure resume stamps run_id and the real now()'
);

SELECT results_eq(
    $$ SELECT action, key, provider_sandbox_id, latest_run_id, updated_at
         FROM h_ensure WHERE n = 2 $$,
    $$ VALUES ('recreate'::text, 'a'::text, 'sb-a'::text, NULL::text,
               '2001-01-01 00:00:00+00'::timestamptz) $$,
    'hostile path: ensure with max_age judges age by the real clock (recreate, old record)'
);

SELECT results_eq(
    $$ SELECT action, key, provider, provider_sandbox_id, latest_snapshot_id
         FROM h_ensure WHERE n = 3 $$,
    $$ VALUES ('recreate'::text, 'c'::text, 'p1'::text, 'sb-c'::text, 'snap-c'::text) $$,
    'hostile path: ensure with another provider compares providers for real (recreate)'
);

SELECT results_eq(
    $$ SELECT action, key, provider_sandbox_id FROM h_ensure WHERE n = 4 $$,
    $$ VALUES ('create'::text, NULL::text, NULL::text) $$,
    'hostile path: ensure of a key without a record returns create'
);

SELECT results_eq(
    $$ SELECT deleted_a, deleted_nope FROM h_delete $$,
    $$ VALUES (true, false) $$,
    'hostile path: delete(''a'') returns true, delete of a missing key returns false'
);

SELECT results_eq(
    $$ SELECT key::text, provider::text, provider_sandbox_id::text, latest_snapshot_id::text,
              thread_id::text, latest_run_id::text, updated_at
         FROM sandbox_store.instances ORDER BY key $$,
    $$ VALUES ('b'::text, 'p1'::text, 'sb-b'::text, NULL::text, 't2'::text, 'run-b'::text, now()),
              ('c', 'p1', 'sb-c', 'snap-c', 't1', NULL, '2001-01-01 00:00:10+00'),
              ('d', 'p1', 'sb-d', NULL, 't3', NULL, '2001-01-01 00:00:20+00'),
              ('e', 'p1', 'sb-e', NULL, 't4', NULL, '2001-01-01 00:00:21+00') $$,
    'hostile path: the writes landed in sandbox_store.instances, each on its own key only'
);

SELECT results_eq(
    $$ SELECT (SELECT count(*) FROM evil.instances), (SELECT count(*) FROM pg_temp.instances) $$,
    $$ VALUES (0::bigint, 0::bigint) $$,
    'hostile path: nothing was written to the look-alike tables evil.instances and pg_temp.instances'
);

SELECT is(
    (SELECT id FROM h_lock_id), sandbox_store.sandbox_lock_id('a'),
    'hostile path: sandbox_lock_id(''a'') is the same as under the normal path'
);

SELECT ok(
    EXISTS (SELECT 1 FROM sandbox_store.key_locks
             WHERE pid = pg_catalog.pg_backend_pid() AND granted
               AND lock_id = sandbox_store.sandbox_lock_id('a')),
    'hostile path: ensure(''a'') holds the advisory lock whose id is sandbox_lock_id(''a'')'
);

SELECT results_eq(
    $$ SELECT action, key, fence <> 424242 AND fence > 0,
              owner_token <> '00000000-0000-0000-0000-000000000000',
              lease_expires_at > now() + interval '59 seconds'
                AND lease_expires_at <= clock_timestamp() + interval '1 minute'
         FROM h_ensure WHERE n = 5 $$,
    $$ VALUES ('create'::text, NULL::text, true, true, true) $$,
    'hostile path: a lease-mode ensure gets a real fence, a random token and an expiry by the real clock'
);

SELECT ok(
    (SELECT expires FROM h_renew) > (SELECT lease_expires_at FROM h_ensure WHERE n = 5)
      AND (SELECT expires FROM h_renew) <= clock_timestamp() + interval '2 minutes',
    'hostile path: sandbox_renew extends the claim by the real clock and +'
);

SELECT results_eq(
    $$ SELECT key::text, provider_sandbox_id::text, updated_at FROM h_upsert WHERE n = 4 $$,
    $$ VALUES ('d'::text, 'sb-d'::text, '2001-01-01 00:00:20+00'::timestamptz) $$,
    'hostile path: a fenced upsert with the claim''s fence is accepted'
);

SELECT is_empty(
    $$ SELECT key FROM h_reap $$,
    'hostile path: sandbox_reap judges idleness with the real < and - (c, 25 years idle, is not reaped for 100 years)'
);

SELECT is((SELECT released FROM h_release), true,
    'hostile path: sandbox_release of the claim returns true');

SELECT results_eq(
    $$ SELECT u.key::text, u.provider_sandbox_id::text, u.updated_at, l.owner_token IS NULL, l.fence = e.fence
         FROM h_upsert u, sandbox_store.leases l, h_ensure e
        WHERE u.n = 5 AND l.key = 'e' AND e.n = 6 $$,
    $$ VALUES ('e'::text, 'sb-e'::text, '2001-01-01 00:00:21+00'::timestamptz, true, true) $$,
    'hostile path: sandbox_upsert_release writes the record and ends the claim, keeping its fence'
);

SELECT results_eq(
    $$ SELECT key, fence, owner_token, lease_expires_at FROM sandbox_store.leases WHERE key = 'd' $$,
    $$ SELECT 'd'::text, fence, NULL::uuid, NULL::timestamptz FROM h_ensure WHERE n = 5 $$,
    'hostile path: the claim went to sandbox_store.leases and was released there'
);

SELECT results_eq(
    $$ SELECT (SELECT count(*) FROM evil.leases), (SELECT count(*) FROM pg_temp.leases) $$,
    $$ VALUES (0::bigint, 0::bigint) $$,
    'hostile path: nothing was written to the look-alike tables evil.leases and pg_temp.leases'
);

SELECT results_eq(
    $$ SELECT extension_table, other_table FROM h_guard $$,
    $$ VALUES ('0A000'::text, 'ok'::text) $$,
    'hostile path: the guard refuses a column on instances and passes DDL on another table'
);

SELECT is_empty(
    $$ SELECT fn FROM evil.calls $$,
    'no look-alike in schema evil was ever called by the extension'
);

SELECT * FROM finish();
ROLLBACK;

-- test/fuzz/fuzz.sql: a targeted fuzzer of sandbox_store, in PL/pgSQL.
--
-- Run by a superuser in a database where sandbox_store is installed:
--   psql -v ON_ERROR_STOP=1 -f test/fuzz/fuzz.sql
-- It creates the role sbfuzz_app with exactly the README's grants (USAGE on
-- the schema, EXECUTE on every function) and a scratch schema sbfuzz (the
-- harness; no privilege on the extension's objects).  Then, as sbfuzz_app:
--   CALL sbfuzz.run(worker, seed, calls, seconds, trace);
-- generates calls of every function with random, NULL, empty, huge,
-- odd-encoding and boundary arguments (from setseed(seed): the same seed
-- generates the same calls), runs each in its own subtransaction inside
-- randomly shaped transactions (autocommit-like, multi-call blocks that
-- commit or roll back, REPEATABLE READ, SERIALIZABLE, READ ONLY, cursors,
-- rolled-back subtransactions, varying lock_timeout), classifies every
-- SQLSTATE (sbfuzz.verdict) and checks what each call returned, and appends
-- one row per worker to sbfuzz.report: calls made, per function and SQLSTATE
-- counts, and every unexpected outcome with the SQL that caused it.
-- With trace, every call is printed (RAISE NOTICE) before it runs, so the
-- call that kills a backend is the last line the client got.
--
--   CALL sbfuzz.cancel_run(worker, seed, calls);
-- makes calls that wait without bound (lock_timeout 0) for keys another
-- session holds or has claimed, for a canceller (pg_cancel_backend) to
-- interrupt: 57014 is then the expected outcome, and afterwards no lock may
-- be left and lock_timeout must be what it was.
--
-- Fences: after every accepted fenced write (sandbox_upsert, fenced
-- sandbox_delete, sandbox_upsert_release) the key's leases row must hold
-- that very fence with its claim still set (sandbox_upsert_release: ended
-- by the call), so no record is ever written with a fence older than the
-- key's or after its claim ended, however the two workers' takeovers,
-- releases and reaps race with it (sbfuzz.fence_held).  A worker also
-- releases one of its claims and retries a write with its fence, which
-- must be refused with SB001 (sbfuzz.release_then_write).
--
-- Every generated call is a SELECT returning (verdict text, fence bigint,
-- token text): verdict 'ok' (or NULL: no row) or a description of a wrong
-- result.  Argument values are SQL expressions, so a reported call is an
-- exact reproducer (huge values are repeat(...) expressions, non-ASCII
-- random strings are convert_from('\x...'::bytea, 'UTF8')).

\set ON_ERROR_STOP on
SET client_min_messages = warning;

DROP SCHEMA IF EXISTS sbfuzz CASCADE;
CREATE SCHEMA sbfuzz;

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sbfuzz_app') THEN
        CREATE ROLE sbfuzz_app LOGIN;
    END IF;
END
$$;
-- The README's two lines, nothing more on the extension.
GRANT USAGE ON SCHEMA sandbox_store TO sbfuzz_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO sbfuzz_app;
-- The harness.
GRANT USAGE ON SCHEMA sbfuzz TO sbfuzz_app;

-- Values stored compressed inline (toast_tuple_target 128) or out of line,
-- so the functions get toasted arguments: their size checks must look at the
-- raw size.
CREATE TABLE sbfuzz.toasty (id int PRIMARY KEY, v text, note text)
    WITH (toast_tuple_target = 128);
INSERT INTO sbfuzz.toasty VALUES
    (1, repeat('a', 1024), 'compressed, 1024 bytes'),
    (2, repeat('a', 1025), 'compressed, 1025 bytes'),
    (3, repeat('é', 512), 'compressed, 1024 bytes, 512 characters'),
    (4, repeat('a', 1023) || 'é', 'compressed, 1025 bytes, 1024 characters'),
    (5, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 100000) g), 'external, 3.2 MB'),
    (6, 'k1', 'short, inline'),
    (7, repeat('b', 1000), 'compressed, 1000 bytes'),
    (8, repeat(chr(128512), 256), 'compressed, 1024 bytes of emoji');
GRANT SELECT ON sbfuzz.toasty TO sbfuzz_app;

-- One row per worker run.
CREATE TABLE sbfuzz.report (
    worker int,
    kind text,            -- 'run' or 'cancel'
    seed int,
    calls int,
    episodes int,
    seconds numeric,
    stats jsonb,          -- "function SQLSTATE" -> count
    bad jsonb             -- unexpected outcomes: [{seq, fn, mode, sqlstate, message, sql}]
);
GRANT INSERT, SELECT ON sbfuzz.report TO sbfuzz_app;

-- Random choice among the arguments.
-- The key locks this backend holds.  The app role has the README's two
-- grants only, not the operators' view: this reads it as the harness's owner.
CREATE FUNCTION sbfuzz.my_key_locks() RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT count(*) FROM sandbox_store.key_locks WHERE pid = pg_backend_pid() $$;

CREATE FUNCTION sbfuzz.pick(VARIADIC a text[]) RETURNS text
LANGUAGE sql VOLATILE AS $$ SELECT a[1 + floor(random() * array_length(a, 1))::int] $$;

-- The reference lock id: FNV-1a over the key's bytes, as README's Locks
-- section defines it (the contract: it never changes).
CREATE FUNCTION sbfuzz.fnv1a(k text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    b bytea := convert_to(k, 'UTF8');
    h numeric := 14695981039346656037;
    lo int;
BEGIN
    FOR i IN 0 .. length(b) - 1 LOOP
        lo := (h % 256)::int;
        h := h - lo + (lo # get_byte(b, i));
        h := (h * 1099511628211) % 18446744073709551616;
    END LOOP;
    IF h >= 9223372036854775808 THEN
        h := h - 18446744073709551616;
    END IF;
    RETURN h::bigint;
END
$$;

-- A random string of odd characters (all valid UTF-8), as a SQL expression.
CREATE FUNCTION sbfuzz.gen_odd_string() RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    n int := 1 + floor(random() * random() * 1100)::int;
    s text := '';
    c int;
BEGIN
    FOR j IN 1 .. n LOOP
        c := CASE floor(random() * 10)::int
            WHEN 0 THEN 32 + floor(random() * 95)             -- printable ASCII
            WHEN 1 THEN 1 + floor(random() * 31)              -- C0 controls (not NUL)
            WHEN 2 THEN 127 + floor(random() * 33)            -- DEL, C1 controls
            WHEN 3 THEN 160 + floor(random() * 96)            -- Latin-1
            WHEN 4 THEN 768 + floor(random() * 112)           -- combining marks
            WHEN 5 THEN 1424 + floor(random() * 112)          -- Hebrew (right to left)
            WHEN 6 THEN (ARRAY[8203, 8204, 8205, 8206, 8207, 8234, 8235, 8236, 8237, 8238,
                               8294, 8295, 8296, 8297])[1 + floor(random() * 14)::int]
                                                              -- zero width, bidi overrides
            WHEN 7 THEN 19968 + floor(random() * 20000)       -- CJK
            WHEN 8 THEN 127744 + floor(random() * 1800)       -- emoji
            ELSE (ARRAY[65279, 65533, 65535, 1114111, 57344, 983040, 119070, 769, 173, 160,
                        12288, 8232, 8233])[1 + floor(random() * 13)::int]
                                                              -- BOM, U+FFFD, noncharacter,
                                                              -- U+10FFFF, private use, ...
        END;
        s := s || chr(c);
    END LOOP;
    IF s ~ '^[ -~]*$' THEN
        RETURN quote_literal(s);
    END IF;
    RETURN format('convert_from(%L::bytea, ''UTF8'')', '\x' || encode(convert_to(s, 'UTF8'), 'hex'));
END
$$;

-- A text argument, as a SQL expression.  kind: key, provider, id, thread,
-- run, opt (an optional field).  valid: probability of a well-formed value.
CREATE FUNCTION sbfuzz.gen_text(kind text, valid float8, focus text[]) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r float8;
BEGIN
    IF random() < valid THEN
        CASE kind
        WHEN 'key' THEN
            IF focus IS NOT NULL AND random() < 0.6 THEN
                RETURN focus[1 + floor(random() * array_length(focus, 1))::int];
            END IF;
            RETURN sbfuzz.pick(
                '''k1''', '''k2''', '''k3''', '''k4''', '''k5''', '''k6''',
                quote_literal('k' || floor(random() * 40)),
                '''busy-1''', '''busy-2''', '''busy-3''', '''claimed-1''', '''claimed-2''',
                '''tenant-1/thread-é/😀/e2b''', 'E''ctl\x01\x1f\x7f''', ''' ''',
                'repeat(''x'', 1024)', 'repeat(''é'', 512)', '''%s%n%x''',
                '''k''''quote"dq\back''', '(SELECT v FROM sbfuzz.toasty WHERE id = 1)',
                '(SELECT v FROM sbfuzz.toasty WHERE id = 7)', '(SELECT v FROM sbfuzz.toasty WHERE id = 6)');
        WHEN 'provider' THEN
            RETURN sbfuzz.pick('''e2b''', '''modal''', '''daytona''', quote_literal('p' || floor(random() * 3)));
        WHEN 'id' THEN
            RETURN quote_literal('sbx-' || floor(random() * 1000));
        WHEN 'thread' THEN
            RETURN sbfuzz.pick('''t1''', '''t2''', '''t3''', quote_literal('thread-é-' || floor(random() * 3)));
        WHEN 'run' THEN
            RETURN quote_literal('run-' || floor(random() * 100000));
        ELSE
            RETURN sbfuzz.pick('NULL', quote_literal('snap-' || floor(random() * 1000)));
        END CASE;
    END IF;

    r := random();
    IF r < 0.12 THEN
        RETURN 'NULL';
    ELSIF r < 0.22 THEN
        RETURN '''''';
    ELSIF r < 0.40 THEN
        -- byte boundaries, with 1-, 2-, 3- and 4-byte characters
        RETURN sbfuzz.pick(
            'repeat(''x'', 1023)', 'repeat(''x'', 1024)', 'repeat(''x'', 1025)',
            'repeat(''é'', 511)', 'repeat(''é'', 512)', 'repeat(''é'', 513)',
            'repeat(''€'', 341)', 'repeat(''€'', 341) || ''x''', 'repeat(''€'', 342)',
            'repeat(chr(128512), 256)', 'repeat(chr(128512), 256) || ''x''', 'repeat(chr(128512), 257)',
            'repeat(''a'', 1023) || ''é''', 'repeat(''e'' || chr(769), 341)',
            'repeat('' '', 1024)', '''x''', 'chr(1)', 'chr(128512)');
    ELSIF r < 0.46 THEN
        -- huge: up to a few MB
        RETURN sbfuzz.pick(
            format('repeat(''x'', %s)', 1025 + floor(random() * 4000000)),
            'repeat(chr(128512), 1000000)', 'repeat(''é'', 1500000)', 'repeat(chr(1), 2000000)',
            format('repeat(md5(''%s''), 100000)', floor(random() * 1000)),
            '(SELECT v FROM sbfuzz.toasty WHERE id = 5)');
    ELSIF r < 0.54 THEN
        RETURN format('(SELECT v FROM sbfuzz.toasty WHERE id = %s)', 1 + floor(random() * 8));
    ELSIF r < 0.84 THEN
        RETURN sbfuzz.gen_odd_string();
    ELSE
        RETURN sbfuzz.pick(
            '''%s%s%s%s%n''', '''%999999999s''', '''%%''', '''\''', '''"''', '''''''''',
            quote_literal(''';DROP TABLE sbfuzz.toasty;--'), '''$1''', '''NULL''', '''null''',
            '''k'' || chr(769)', '''e'' || repeat(chr(769), 500)', '''NaN''', '''-0''',
            'E''line1\nline2''', 'E''tab\there''', 'chr(127)', 'chr(133)', 'chr(8238) || ''txet''',
            'chr(65279) || ''k1''', 'chr(1114111)', 'E''\\x00''');
    END IF;
END
$$;

-- An interval argument, as a SQL expression.  kind: wait, max_age, lease, idle.
CREATE FUNCTION sbfuzz.gen_interval(kind text, valid float8) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF random() < valid THEN
        CASE kind
        WHEN 'wait' THEN
            RETURN sbfuzz.pick('NULL', '''0''', '''1 microsecond''', '''1 ms''', '''5 ms''', '''20 ms''',
                               '''1 hour''');
        WHEN 'max_age' THEN
            RETURN sbfuzz.pick('NULL', '''0''', '''1 microsecond''', '''1 second''', '''1 day''',
                               '''1 mon''', '''100 years''');
        WHEN 'lease' THEN
            RETURN sbfuzz.pick('NULL', '''1 microsecond''', '''1 ms''', '''20 ms''', '''200 ms''',
                               '''1 minute''');
        ELSE
            RETURN sbfuzz.pick('''1 hour''', '''1 day''', '''0''', '''1 microsecond''', '''100 years''');
        END CASE;
    END IF;
    RETURN sbfuzz.pick(
        'NULL', '''0''', '''-0''', '''1 microsecond''', '''-1 microsecond''', '''0.5 microseconds''',
        '''-1 day''', '''1 mon -31 days''', '''1 mon -29 days''', '''-1 mon 31 days''',
        '''1 day -25 hours''', '''-1 day 25 hours''', '''1 day -24 hours''', '''-1 year +360 days 00:00:01''',
        '''1000000 years''', '''-1000000 years''', '''178000000 years''', '''-178000000 years''',
        '''2147483647 days''', '''-2147483648 days''', '''2147483647 mons''', '''-2147483648 mons''',
        '''2562047788:00:54.775807''', '''-2562047788:00:54.775808''',
        '''178000000 years 2147483647 days 2562047788:00:54.775807''',
        '''-178000000 years -2147483648 days -2562047788:00:54.775808''',
        '''1 week''', '''P1Y2M3DT4H5M6S''', '''@ 1 minute ago''', '''infinity''', '''abc''',
        '''1 fortnight''', '''1e400 seconds''', '''2000000000000 hours''',
        'make_interval(secs => random() * 0.01)', '''1 hour''::interval * 1e6');
END
$$;

CREATE FUNCTION sbfuzz.gen_timestamptz(valid float8) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF random() < valid THEN
        RETURN sbfuzz.pick('now()', 'now() - interval ''2 days''', '''2024-02-29 12:34:56.789+00''',
                           'clock_timestamp()', '''2025-06-01 00:00:00.123456+05:30''');
    END IF;
    RETURN sbfuzz.pick(
        'NULL', '''infinity''', '''-infinity''', '''epoch''', '''2000-01-01 00:00:00+00''',
        '''4713-01-01 00:00:00+00 BC''', '''294276-12-31 23:59:59.999999+00''',
        '''294277-01-01 00:00:00+00''', '''4714-11-23 23:59:59+00 BC''', '''garbage''',
        '''2024-02-30''', '''allballs''', '''now''', '''today''', '''1999-12-31 23:59:59.9999995+00''',
        '''2000-01-01 00:00:00.000001+00''', '''1970-01-01 00:00:00+15:59''', '''NaN''');
END
$$;

-- A fence, from the claims this worker got (same index as ckeys) or not.
CREATE FUNCTION sbfuzz.gen_fence(valid float8, cf bigint[], idx int) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF random() < valid THEN
        IF idx IS NOT NULL THEN
            RETURN cf[idx]::text;
        END IF;
        RETURN sbfuzz.pick('NULL', (1 + floor(random() * 50))::text);
    END IF;
    RETURN sbfuzz.pick('NULL', '0', '-1', '1', '9223372036854775807', '''-9223372036854775808''::bigint',
                       '''9223372036854775808''::bigint', '''1.5''::bigint', '''abc''::bigint',
                       (floor(random() * 9e18))::bigint::text);
END
$$;

CREATE FUNCTION sbfuzz.gen_uuid(valid float8, ctok text[], idx int) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF random() < valid AND idx IS NOT NULL THEN
        RETURN quote_literal(ctok[idx]) || '::uuid';
    END IF;
    RETURN sbfuzz.pick(
        'NULL', quote_literal(md5(random()::text)::uuid::text) || '::uuid',
        '''00000000-0000-0000-0000-000000000000''::uuid', '''ffffffff-ffff-ffff-ffff-ffffffffffff''::uuid',
        '''not-a-uuid''::uuid', '''{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}''::uuid');
END
$$;

-- After an accepted fenced write of key k with fence f, under the key's
-- lock: 'ok' if the key's newest fence is f and its claim is set (ended:
-- the call ended it), else what is wrong.  Reads the leases table, which
-- the app role may not, so it runs as its owner; at REPEATABLE READ and
-- SERIALIZABLE its snapshot may predate the claim (the fence check reads
-- the newest state), so it checks only at READ COMMITTED.
CREATE FUNCTION sbfuzz.fence_held(k text, f bigint, ended bool) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
DECLARE
    l record;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RETURN 'ok';
    END IF;
    SELECT fence, owner_token IS NOT NULL AS claimed INTO l
      FROM sandbox_store.leases WHERE key = k;
    IF NOT FOUND THEN
        RETURN format('a write fenced with %s was accepted for a key never claimed', f);
    ELSIF l.fence <> f THEN
        RETURN format('a write fenced with %s was accepted while the key has fence %s', f, l.fence);
    ELSIF l.claimed AND ended THEN
        RETURN format('sandbox_upsert_release with fence %s left the claim set', f);
    ELSIF NOT l.claimed AND NOT ended THEN
        RETURN format('a write fenced with %s was accepted after its claim had ended', f);
    END IF;
    RETURN 'ok';
END
$$;

-- A lost acknowledgement, retried: release one of this worker's claims
-- (key expression k, fence f, token tok), then write fenced with f.  The
-- claim has ended either way (released now, or ended before: the token no
-- longer holds it), so the write must be refused with SB001.  Runs as the
-- caller; other errors are the call's own.
CREATE FUNCTION sbfuzz.release_then_write(k text, f bigint, tok uuid) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM sandbox_store.sandbox_release(k, tok);
    BEGIN
        PERFORM sandbox_store.sandbox_upsert(k, 'e2b', 'sbx-retry', 't1', fence => f);
    EXCEPTION WHEN SQLSTATE 'SB001' THEN
        RETURN 'ok';
    END;
    RETURN format('a write fenced with %s was accepted after its claim was released', f);
END
$$;

-- One call: fn (for the report), sql (returns verdict, fence, token), post
-- (a check run after a successful call, returns a verdict), raw (the call as
-- SELECT * FROM f(...), for cursors).
CREATE FUNCTION sbfuzz.gen_call(focus text[], valid float8, ck text[], cf bigint[], ctok text[],
                                OUT fn text, OUT sql text, OUT post text, OUT raw text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r float8 := random();
    k text;
    a text[];
    args text;
    idx int;
    lease text;
    prov text;
    run text;
    nargs text[];
    ts_cmp bool;
BEGIN
    -- a claim of this worker's, to renew, release, or write fenced with
    IF array_length(ck, 1) > 0 AND random() < 0.7 THEN
        idx := 1 + floor(random() * array_length(ck, 1))::int;
    END IF;
    k := CASE WHEN idx IS NOT NULL AND random() < valid THEN ck[idx]
              ELSE sbfuzz.gen_text('key', valid, focus) END;

    IF r < 0.24 THEN
        fn := 'sandbox_ensure';
        run := sbfuzz.gen_text('run', valid, NULL);
        lease := sbfuzz.gen_interval('lease', valid);
        prov := CASE WHEN random() < 0.5 THEN 'NULL' ELSE sbfuzz.gen_text('provider', valid, NULL) END;
        nargs := ARRAY['key => ' || k, 'run_id => ' || run];
        IF random() < 0.5 THEN nargs := nargs || ('max_age => ' || sbfuzz.gen_interval('max_age', valid)); END IF;
        IF prov <> 'NULL' OR random() < 0.2 THEN nargs := nargs || ('provider => ' || prov); END IF;
        IF random() < 0.7 THEN nargs := nargs || ('wait => ' || sbfuzz.gen_interval('wait', valid)); END IF;
        IF lease <> 'NULL' OR random() < 0.2 THEN nargs := nargs || ('lease => ' || lease); END IF;
        args := array_to_string(nargs, ', ');
        raw := format('SELECT * FROM sandbox_store.sandbox_ensure(%s)', args);
        CASE floor(random() * 6)::int
        WHEN 0 THEN
            -- targetlist SRF, stopped after the first row
            sql := format('SELECT CASE WHEN (e).action IN (''create'', ''resume'', ''recreate'') THEN ''ok'''
                          ' ELSE ''bad action '' || coalesce((e).action, ''NULL'') END, (e).fence, (e).owner_token::text'
                          ' FROM (SELECT sandbox_store.sandbox_ensure(%s) AS e LIMIT 1) s', args);
        WHEN 1 THEN
            -- several keys in one statement
            sql := format('SELECT CASE WHEN count(*) = 3 THEN ''ok'' ELSE ''ensure over 3 keys returned '' || count(*) || '' rows'' END,'
                          ' NULL::bigint, NULL::text FROM (VALUES (%s), (%s), (%s)) v(k),'
                          ' LATERAL sandbox_store.sandbox_ensure(v.k, %s, wait => %s) e',
                          k, sbfuzz.gen_text('key', valid, focus), sbfuzz.gen_text('key', valid, focus),
                          run, sbfuzz.gen_interval('wait', valid));
        ELSE
            sql := format(
                'SELECT CASE WHEN count(*) <> 1 THEN ''ensure returned '' || count(*) || '' rows'''
                ' WHEN min(action) NOT IN (''create'', ''resume'', ''recreate'') THEN ''bad action '' || coalesce(min(action), ''NULL'')'
                ' WHEN (count(fence) = 1) <> ((%s)::interval IS NOT NULL) THEN ''claim columns do not match the mode'''
                ' WHEN (count(owner_token) = 1) <> (count(fence) = 1) OR (count(lease_expires_at) = 1) <> (count(fence) = 1) THEN ''claim columns incomplete'''
                ' WHEN min(action) = ''create'' AND count(key) > 0 THEN ''create with a record'''
                ' WHEN min(action) <> ''create'' AND count(key) = 0 THEN min(action) || '' without a record'''
                ' WHEN count(key) = 1 AND max(key) <> (%s) THEN ''record of another key: '' || left(max(key), 40)'
                ' WHEN min(action) = ''resume'' AND max(latest_run_id) IS DISTINCT FROM (%s) THEN ''resume not stamped with run_id'''
                ' WHEN min(action) = ''resume'' AND (%s)::text IS NOT NULL AND max(provider) <> (%s) THEN ''resume of another provider'''
                ' WHEN min(action) = ''resume'' AND max(updated_at) < now() THEN ''resume stamped before now()'''
                ' ELSE ''ok'' END, max(fence), max(owner_token::text)'
                ' FROM sandbox_store.sandbox_ensure(%s)', lease, k, run, prov, prov, args);
        END CASE;
    ELSIF r >= 0.36 AND r < 0.40 THEN
        -- 1.3: the claim holder's last write, which also ends the claim
        fn := 'sandbox_upsert_release';
        a := ARRAY[k, sbfuzz.gen_fence(valid, cf, idx), sbfuzz.gen_text('provider', valid, NULL),
                   sbfuzz.gen_text('id', valid, NULL), sbfuzz.gen_text('thread', valid, NULL),
                   sbfuzz.gen_text('opt', valid, NULL), sbfuzz.gen_text('opt', valid, NULL),
                   CASE WHEN random() < 0.5 THEN 'now()' ELSE sbfuzz.gen_timestamptz(valid) END];
        args := format('%s, %s, %s, %s, %s, %s, %s, %s', a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
        raw := format('SELECT * FROM sandbox_store.sandbox_upsert_release(%s)', args);
        sql := format('SELECT CASE WHEN u.key IS DISTINCT FROM (%s)::text THEN ''upsert_release returned another key'''
                      ' WHEN u.provider_sandbox_id IS DISTINCT FROM (%s)::text THEN ''upsert_release returned another record'''
                      ' ELSE ''ok'' END, NULL::bigint, NULL::text'
                      ' FROM sandbox_store.sandbox_upsert_release(%s) u', a[1], a[4], args);
        post := format('SELECT sbfuzz.fence_held((%s)::text, (%s)::bigint, true)', a[1], a[2]);
    ELSIF r < 0.40 THEN
        fn := 'sandbox_upsert';
        a := ARRAY[k, sbfuzz.gen_text('provider', valid, NULL), sbfuzz.gen_text('id', valid, NULL),
                   sbfuzz.gen_text('thread', valid, NULL), sbfuzz.gen_text('opt', valid, NULL),
                   sbfuzz.gen_text('opt', valid, NULL),
                   CASE WHEN random() < 0.5 THEN 'now()' ELSE sbfuzz.gen_timestamptz(valid) END,
                   CASE WHEN random() < 0.6 THEN 'NULL' ELSE sbfuzz.gen_fence(valid, cf, idx) END];
        raw := format('SELECT * FROM sandbox_store.sandbox_upsert(%s, %s, %s, %s, %s, %s, %s, %s)',
                      a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
        IF random() < 0.6 THEN
            -- round trip: the row returned, then sandbox_get, are what was written
            -- (clock_timestamp() would differ between two evaluations: not compared)
            ts_cmp := a[7] <> 'clock_timestamp()';
            sql := format(
                'SELECT CASE WHEN (u.key, u.provider, u.provider_sandbox_id, u.thread_id, u.latest_snapshot_id, u.latest_run_id%s)'
                ' IS NOT DISTINCT FROM (a.k, a.p, a.s, a.t, a.ls, a.lr%s) THEN ''ok'' ELSE ''upsert returned another record'' END,'
                ' NULL::bigint, NULL::text'
                ' FROM (SELECT (%s)::text AS k, (%s)::text AS p, (%s)::text AS s, (%s)::text AS t, (%s)::text AS ls, (%s)::text AS lr,'
                ' (%s)::timestamptz AS ts, (%s)::bigint AS f OFFSET 0) a,'
                ' LATERAL sandbox_store.sandbox_upsert(a.k, a.p, a.s, a.t, a.ls, a.lr, a.ts, a.f) u',
                CASE WHEN ts_cmp THEN ', u.updated_at' ELSE '' END, CASE WHEN ts_cmp THEN ', a.ts' ELSE '' END,
                a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
            post := format(
                'SELECT CASE WHEN count(*) = 1 AND bool_and((g.key, g.provider, g.provider_sandbox_id, g.thread_id, g.latest_snapshot_id, g.latest_run_id%s)'
                ' IS NOT DISTINCT FROM ((%s)::text, (%s)::text, (%s)::text, (%s)::text, (%s)::text, (%s)::text%s))'
                ' THEN ''ok'' ELSE ''sandbox_get after upsert returned '' || count(*) || '' rows, not what was written: '''
                ' || left(string_agg(format(''(%%s, %%s, %%s, %%s, %%s, %%s)'', left(g.key, 12), g.provider, g.provider_sandbox_id, g.thread_id, g.latest_run_id, g.updated_at), '' ''), 300) END'
                ' FROM sandbox_store.sandbox_get(%s) g',
                CASE WHEN ts_cmp THEN ', g.updated_at' ELSE '' END,
                a[1], a[2], a[3], a[4], a[5], a[6],
                CASE WHEN ts_cmp THEN ', (' || a[7] || ')::timestamptz' ELSE '' END, a[1]);
            IF a[8] <> 'NULL' THEN
                post := format('SELECT CASE WHEN r <> ''ok'' THEN r ELSE sbfuzz.fence_held((%s)::text, (%s)::bigint, false) END'
                               ' FROM (%s) p(r)', a[1], a[8], post);
            END IF;
        ELSE
            -- named arguments in a random order, optional ones omitted
            nargs := ARRAY['key => ' || a[1], 'provider => ' || a[2], 'provider_sandbox_id => ' || a[3],
                           'thread_id => ' || a[4]];
            IF random() < 0.5 THEN nargs := nargs || ('latest_snapshot_id => ' || a[5]); END IF;
            IF random() < 0.5 THEN nargs := nargs || ('latest_run_id => ' || a[6]); END IF;
            IF random() < 0.5 THEN nargs := nargs || ('updated_at => ' || a[7]); END IF;
            IF random() < 0.3 THEN
                nargs := nargs || ('fence => ' || a[8]);
                IF a[8] <> 'NULL' THEN
                    post := format('SELECT sbfuzz.fence_held((%s)::text, (%s)::bigint, false)', a[1], a[8]);
                END IF;
            END IF;
            SELECT array_agg(x ORDER BY random()) INTO nargs FROM unnest(nargs) x;
            sql := format('SELECT CASE WHEN key IS NOT NULL THEN ''ok'' ELSE ''upsert returned no key'' END, NULL::bigint, NULL::text'
                          ' FROM sandbox_store.sandbox_upsert(%s)', array_to_string(nargs, ', '));
        END IF;
    ELSIF r < 0.48 THEN
        fn := 'sandbox_get';
        raw := format('SELECT * FROM sandbox_store.sandbox_get(%s)', k);
        IF random() < 0.7 THEN
            sql := format('SELECT CASE WHEN count(*) > 1 THEN ''get returned '' || count(*) || '' rows'''
                          ' WHEN count(*) = 1 AND max(key) <> (%s) THEN ''get returned another key'' ELSE ''ok'' END,'
                          ' NULL::bigint, NULL::text FROM sandbox_store.sandbox_get(%s)', k, k);
        ELSE
            sql := format('SELECT CASE WHEN (g).key IS NOT NULL THEN ''ok'' ELSE ''get returned a row without key'' END,'
                          ' NULL::bigint, NULL::text FROM (SELECT sandbox_store.sandbox_get(%s) AS g LIMIT 1) s', k);
        END IF;
    ELSIF r < 0.53 THEN
        fn := 'sandbox_list';
        a := ARRAY[sbfuzz.gen_text('thread', valid, NULL)];
        raw := format('SELECT * FROM sandbox_store.sandbox_list(%s)', a[1]);
        sql := format('SELECT CASE WHEN count(*) = count(*) FILTER (WHERE thread_id = (%s)) THEN ''ok'''
                      ' ELSE ''list returned another thread'' END, NULL::bigint, NULL::text'
                      ' FROM sandbox_store.sandbox_list(%s)', a[1], a[1]);
    ELSIF r < 0.61 THEN
        fn := 'sandbox_delete';
        args := k;
        prov := 'NULL';   -- (the fence)
        IF random() < 0.4 THEN
            prov := sbfuzz.gen_fence(valid, cf, idx);
            args := args || ', fence => ' || prov;
        END IF;
        raw := format('SELECT * FROM sandbox_store.sandbox_delete(%s)', args);
        sql := format('SELECT CASE WHEN d IS NULL THEN ''delete returned NULL'' ELSE ''ok'' END, NULL::bigint, d::text'
                      ' FROM sandbox_store.sandbox_delete(%s) d', args);
        post := format('SELECT CASE WHEN count(*) <> 0 THEN ''the record is still there after delete'' ELSE %s END'
                       ' FROM sandbox_store.sandbox_get(%s)',
                       CASE WHEN prov = 'NULL' THEN '''ok'''
                            ELSE format('sbfuzz.fence_held((%s)::text, (%s)::bigint, false)', k, prov) END, k);
    ELSIF r < 0.68 THEN
        fn := 'sandbox_lock';
        args := k;
        IF random() < 0.7 THEN args := args || ', wait => ' || sbfuzz.gen_interval('wait', valid); END IF;
        raw := format('SELECT * FROM sandbox_store.sandbox_lock(%s)', args);
        sql := format('SELECT ''ok'', NULL::bigint, NULL::text FROM (SELECT sandbox_store.sandbox_lock(%s)) s', args);
        post := format('SELECT CASE WHEN sandbox_store.sandbox_lock_holder(%s) = pg_backend_pid() THEN ''ok'''
                       ' ELSE ''sandbox_lock returned but the key''''s lock is not held'' END', k);
    ELSIF r < 0.74 THEN
        fn := 'sandbox_try_lock';
        raw := format('SELECT * FROM sandbox_store.sandbox_try_lock(%s)', k);
        sql := format('SELECT CASE WHEN t IS NULL THEN ''try_lock returned NULL'' ELSE ''ok'' END, NULL::bigint, t::text'
                      ' FROM sandbox_store.sandbox_try_lock(%s) t', k);
        post := format('SELECT CASE WHEN sandbox_store.sandbox_lock_holder(%s) = pg_backend_pid() THEN ''ok'''
                       ' ELSE ''try_lock returned true but the key''''s lock is not held'' END', k);
    ELSIF r < 0.78 THEN
        fn := 'sandbox_lock_id';
        raw := format('SELECT * FROM sandbox_store.sandbox_lock_id(%s)', k);
        sql := format('SELECT CASE WHEN i = sbfuzz.fnv1a(%s) THEN ''ok'' ELSE ''lock id is not FNV-1a of the key'' END,'
                      ' NULL::bigint, NULL::text FROM sandbox_store.sandbox_lock_id(%s) i', k, k);
    ELSIF r < 0.82 THEN
        fn := 'sandbox_lock_holder';
        raw := format('SELECT * FROM sandbox_store.sandbox_lock_holder(%s)', k);
        sql := format('SELECT CASE WHEN h IS NULL OR h = pg_backend_pid()'
                      ' OR EXISTS (SELECT FROM pg_stat_activity WHERE pid = h) THEN ''ok'''
                      ' ELSE ''lock holder is no backend'' END, NULL::bigint, NULL::text'
                      ' FROM sandbox_store.sandbox_lock_holder(%s) h', k);
    ELSIF r < 0.87 THEN
        fn := 'sandbox_renew';
        args := format('%s, %s, %s', k, sbfuzz.gen_uuid(valid, ctok, idx), sbfuzz.gen_interval('lease', valid));
        raw := format('SELECT * FROM sandbox_store.sandbox_renew(%s)', args);
        sql := format('SELECT CASE WHEN e IS NULL THEN ''renew returned NULL'' ELSE ''ok'' END, NULL::bigint, NULL::text'
                      ' FROM sandbox_store.sandbox_renew(%s) e', args);
    ELSIF r < 0.93 THEN
        fn := 'sandbox_release';
        IF idx IS NOT NULL AND random() < 0.3 THEN
            -- then a write retried with the released claim's fence
            args := format('(%s)::text, %s, %L::uuid', ck[idx], cf[idx], ctok[idx]);
            raw := format('SELECT * FROM sbfuzz.release_then_write(%s)', args);
            sql := format('SELECT sbfuzz.release_then_write(%s), NULL::bigint, NULL::text', args);
        ELSE
            args := format('%s, %s', k, sbfuzz.gen_uuid(valid, ctok, idx));
            raw := format('SELECT * FROM sandbox_store.sandbox_release(%s)', args);
            sql := format('SELECT CASE WHEN x IS NULL THEN ''release returned NULL'' ELSE ''ok'' END, NULL::bigint, x::text'
                          ' FROM sandbox_store.sandbox_release(%s) x', args);
        END IF;
    ELSIF r < 0.97 THEN
        fn := 'sandbox_reap';
        a := ARRAY[sbfuzz.gen_interval('idle', valid),
                   CASE WHEN random() < valid THEN sbfuzz.pick('1', '2', '5', '100')
                        ELSE sbfuzz.pick('NULL', '0', '-1', '2147483647', '''-2147483648''::int', '''2147483648''::int') END];
        args := a[1];
        IF random() < 0.8 THEN args := args || ', max_rows => ' || a[2]; ELSE a[2] := '100'; END IF;
        raw := format('SELECT * FROM sandbox_store.sandbox_reap(%s)', args);
        sql := format('SELECT CASE WHEN count(*) > (%s) THEN ''reap returned more than max_rows'''
                      ' WHEN count(DISTINCT key) <> count(*) THEN ''reap returned a key twice'''
                      ' ELSE ''ok'' END, NULL::bigint, NULL::text FROM sandbox_store.sandbox_reap(%s)', a[2], args);
    ELSE
        -- direct access to the extension's objects: must be refused (42501)
        fn := 'denied';
        sql := sbfuzz.pick(
            'SELECT ''SELECT on instances was allowed'', count(*), NULL::text FROM sandbox_store.instances',
            'SELECT ''SELECT on leases was allowed'', count(*), NULL::text FROM sandbox_store.leases',
            'SELECT ''SELECT on claims was allowed'', count(*), NULL::text FROM sandbox_store.claims',
            'SELECT ''nextval on fence_seq was allowed'', nextval(''sandbox_store.fence_seq''), NULL::text',
            'WITH d AS (DELETE FROM sandbox_store.instances WHERE false RETURNING 1) SELECT ''DELETE on instances was allowed'', NULL::bigint, NULL::text',
            'WITH u AS (UPDATE sandbox_store.leases SET fence = 1 WHERE false RETURNING 1) SELECT ''UPDATE on leases was allowed'', NULL::bigint, NULL::text',
            'WITH i AS (INSERT INTO sandbox_store.instances VALUES (''x'', ''p'', ''s'', NULL, ''t'', NULL, now()) RETURNING 1) SELECT ''INSERT on instances was allowed'', NULL::bigint, NULL::text');
        raw := sql;
    END IF;
END
$$;

-- NULL when the outcome is allowed, otherwise why not.
CREATE FUNCTION sbfuzz.verdict(fn text, mode text, st text, msg text, ctx text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    -- raised inside one of the extension's own SQL statements
    internal bool := coalesce(ctx, '') ~ 'SQL statement "[^"]*OPERATOR\(pg_catalog\.';
BEGIN
    IF fn = 'denied' THEN
        -- 55P03: PostgreSQL locks the table before it checks privileges,
        -- and an admin's ALTER TABLE may hold it (008_fuzz's admin phase)
        RETURN CASE WHEN st = '42501' OR (st = '25006' AND mode = 'ro') OR st = '55P03' THEN NULL
                    ELSE 'direct access not refused with 42501' END;
    END IF;
    IF st IN ('22004', '22023', '22001') THEN
        -- the contract's argument errors: the message names the argument
        IF NOT internal AND msg !~ '^(key|provider|provider_sandbox_id|thread_id|latest_snapshot_id|latest_run_id|updated_at|run_id|max_age|wait|lease|fence|owner_token|idle_for|max_rows) ' THEN
            RETURN 'argument error whose message does not start with the argument''s name';
        END IF;
        RETURN CASE WHEN internal THEN 'argument error raised inside an internal statement' END;
    END IF;
    IF st IN ('55P03', 'SB001', '40001') THEN
        RETURN NULL;              -- lock not obtained, claim lost, serialization
    END IF;
    IF st = '40P01' THEN
        RETURN NULL;              -- deadlock between the two workers' multi-key transactions
    END IF;
    IF st IN ('22007', '22008', '22P02', '22003', '22015') AND NOT internal THEN
        RETURN NULL;              -- the server's own input functions reject an argument
    END IF;
    IF st = '25006' AND mode = 'ro' THEN
        RETURN NULL;              -- a write in a READ ONLY transaction
    END IF;
    IF st = '57014' AND mode = 'cancel' THEN
        RETURN NULL;              -- canceled by the test
    END IF;
    RETURN 'unexpected SQLSTATE';
END
$$;

CREATE PROCEDURE sbfuzz.run(p_worker int, p_seed int, p_calls int, p_seconds int, p_trace bool DEFAULT false)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    deadline timestamptz := clock_timestamp() + make_interval(secs => p_seconds);
    done int := 0;
    episodes int := 0;
    mode text;
    ncalls int;
    lt text;
    base_lt text := current_setting('lock_timeout');
    focus text[];
    valid float8;
    c record;
    v text;
    f bigint;
    tok text;
    pv text;
    st text;
    msg text;
    ctx text;
    why text;
    sub_rolled bool;
    cur refcursor;
    stats jsonb := '{}';
    bad jsonb := '[]';
    sk text;
    ck text[] := '{}';     -- this worker's claims: key expression, fence, token
    cf bigint[] := '{}';
    ctok text[] := '{}';
    nlocks int;
BEGIN
    PERFORM setseed(((p_seed::bigint * 7919 + p_worker * 104729) % 1999999) / 1000000.0 - 0.999999);
    WHILE done < p_calls AND clock_timestamp() < deadline LOOP
        episodes := episodes + 1;
        mode := sbfuzz.pick('auto', 'auto', 'auto', 'auto', 'block', 'block', 'block', 'block',
                            'rr', 'ser', 'ro', 'cursor', 'sub', 'sub');
        -- characteristics of the next transaction, which starts at COMMIT
        PERFORM set_config('default_transaction_isolation',
                           CASE mode WHEN 'rr' THEN 'repeatable read' WHEN 'ser' THEN 'serializable'
                                     ELSE 'read committed' END, false);
        PERFORM set_config('default_transaction_read_only', CASE WHEN mode = 'ro' THEN 'on' ELSE 'off' END, false);
        COMMIT;

        -- whatever the previous transaction did, it left no lock and no setting
        nlocks := sbfuzz.my_key_locks();
        IF nlocks > 0 THEN
            bad := bad || jsonb_build_object('seq', done, 'fn', 'transaction end', 'mode', mode,
                                             'sqlstate', 'LEAK', 'message', nlocks || ' extension lock(s) held after the transaction ended', 'sql', '');
        END IF;
        IF current_setting('lock_timeout') <> base_lt THEN
            bad := bad || jsonb_build_object('seq', done, 'fn', 'transaction end', 'mode', mode,
                                             'sqlstate', 'GUC', 'message', 'lock_timeout is ' || current_setting('lock_timeout') || ', not ' || base_lt, 'sql', '');
        END IF;

        lt := sbfuzz.pick('20ms', '20ms', '20ms', '20ms', '1ms', '5ms', '50ms');
        PERFORM set_config('lock_timeout', lt, true);
        -- settings that change timestamp arithmetic, parsing and messages
        IF random() < 0.3 THEN
            PERFORM set_config('TimeZone', sbfuzz.pick('UTC', 'America/New_York', 'Pacific/Chatham',
                               'Asia/Kathmandu', 'Australia/Lord_Howe', 'Etc/GMT+12', 'Antarctica/Troll'), true);
            PERFORM set_config('DateStyle', sbfuzz.pick('ISO, MDY', 'SQL, DMY', 'German', 'Postgres, YMD'), true);
            PERFORM set_config('IntervalStyle', sbfuzz.pick('postgres', 'sql_standard', 'iso_8601',
                               'postgres_verbose'), true);
            PERFORM set_config('search_path', sbfuzz.pick('', 'pg_catalog', 'sbfuzz, pg_catalog',
                               'pg_temp, public'), true);
        END IF;
        valid := (ARRAY[0.95, 0.8, 0.5, 0.2])[1 + floor(random() * 4)::int];
        focus := ARRAY[sbfuzz.gen_text('key', 0.9, NULL), sbfuzz.gen_text('key', 0.9, NULL)];
        ncalls := CASE WHEN mode IN ('auto', 'sub', 'cursor') THEN 1 ELSE 1 + floor(random() * 6)::int END;

        FOR j IN 1 .. ncalls LOOP
            c := sbfuzz.gen_call(focus, valid, ck, cf, ctok);
            done := done + 1;
            IF p_trace THEN
                RAISE NOTICE 'sbfuzz w% #% % %: %', p_worker, done, mode, c.fn,
                    CASE WHEN mode = 'cursor' THEN c.raw ELSE c.sql END;
            END IF;
            st := '00000'; msg := NULL; ctx := NULL; v := NULL; f := NULL; tok := NULL; pv := NULL;
            sub_rolled := false;
            BEGIN
                BEGIN
                    IF mode = 'cursor' THEN
                        OPEN cur NO SCROLL FOR EXECUTE c.raw;
                        IF random() < 0.7 OR c.fn = 'denied' THEN
                            MOVE FORWARD 1 IN cur;
                        END IF;
                        CLOSE cur;
                    ELSE
                        EXECUTE c.sql INTO v, f, tok;
                        IF v = 'ok' AND c.post IS NOT NULL AND (c.fn <> 'sandbox_delete' OR tok = 'true')
                           AND (c.fn <> 'sandbox_try_lock' OR tok = 'true') THEN
                            EXECUTE c.post INTO pv;
                        END IF;
                    END IF;
                    IF mode = 'sub' THEN
                        RAISE EXCEPTION USING ERRCODE = 'SBFZ1', MESSAGE = 'roll the subtransaction back';
                    END IF;
                EXCEPTION WHEN SQLSTATE 'SBFZ1' THEN
                    sub_rolled := true;
                END;
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, ctx = PG_EXCEPTION_CONTEXT;
            END;

            sk := c.fn || ' ' || st;
            stats := jsonb_set(stats, ARRAY[sk], to_jsonb(coalesce((stats ->> sk)::int, 0) + 1));

            why := NULL;
            IF st <> '00000' THEN
                why := sbfuzz.verdict(c.fn, mode, st, msg, ctx);
            ELSIF coalesce(v, 'ok') <> 'ok' THEN
                why := v;
            ELSIF coalesce(pv, 'ok') <> 'ok' THEN
                why := pv;
            END IF;
            IF why IS NULL AND current_setting('lock_timeout') <> lt THEN
                why := 'the call left lock_timeout at ' || current_setting('lock_timeout') || ', not ' || lt;
            END IF;
            IF why IS NULL AND sub_rolled THEN
                nlocks := sbfuzz.my_key_locks();
                IF nlocks > 0 THEN
                    why := 'lock kept after its subtransaction rolled back';
                END IF;
            END IF;
            IF why IS NOT NULL THEN
                bad := bad || jsonb_build_object('seq', done, 'fn', c.fn, 'mode', mode, 'sqlstate', st,
                                                 'message', coalesce(msg, '') || ' [' || why || ']',
                                                 'sql', left(CASE WHEN mode = 'cursor' THEN c.raw ELSE c.sql END, 4000));
            END IF;

            -- remember a claim this worker got, for renew, release and fenced writes
            IF st = '00000' AND f IS NOT NULL AND tok IS NOT NULL AND NOT sub_rolled
               AND c.fn = 'sandbox_ensure' THEN
                ck := ck || substring(c.sql FROM 'sandbox_ensure\(key => (.*?), run_id => ');
                cf := cf || f;
                ctok := ctok || tok;
                IF array_length(ck, 1) > 30 THEN
                    ck := ck[2:]; cf := cf[2:]; ctok := ctok[2:];
                END IF;
            END IF;
        END LOOP;

        IF mode = 'ser' OR random() < 0.25 THEN
            ROLLBACK;   -- (SERIALIZABLE: a COMMIT could fail outside any handler)
        END IF;
    END LOOP;

    PERFORM set_config('default_transaction_isolation', 'read committed', false);
    PERFORM set_config('default_transaction_read_only', 'off', false);
    COMMIT;
    -- the end of the run's last transaction released everything
    nlocks := sbfuzz.my_key_locks();
    IF nlocks > 0 THEN
        bad := bad || jsonb_build_object('seq', done, 'fn', 'transaction end', 'mode', '', 'sqlstate', 'LEAK',
                                         'message', nlocks || ' extension lock(s) held after the last transaction', 'sql', '');
    END IF;
    INSERT INTO sbfuzz.report
    VALUES (p_worker, 'run', p_seed, done, episodes,
            round(extract(epoch FROM clock_timestamp() - t0)::numeric, 1), stats, bad);
    COMMIT;
END
$$;

-- Calls that wait without bound, for a canceller to interrupt.  Another
-- session holds busy-1..3 (lock mode) and claims claimed-1..2 (lease mode).
CREATE PROCEDURE sbfuzz.cancel_run(p_worker int, p_seed int, p_calls int)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    base_lt text := current_setting('lock_timeout');
    sql text;
    own text;
    st text;
    msg text;
    ctx text;
    why text;
    sk text;
    nlocks int;
    stats jsonb := '{}';
    bad jsonb := '[]';
BEGIN
    PERFORM setseed(((p_seed::bigint * 7919 + p_worker * 104729) % 1999999) / 1000000.0 - 0.999999);
    FOR i IN 1 .. p_calls LOOP
        COMMIT;
        nlocks := sbfuzz.my_key_locks();
        IF nlocks > 0 THEN
            bad := bad || jsonb_build_object('seq', i, 'fn', 'transaction end', 'mode', 'cancel', 'sqlstate', 'LEAK',
                                             'message', nlocks || ' extension lock(s) held after the transaction ended', 'sql', '');
        END IF;
        IF current_setting('lock_timeout') <> base_lt THEN
            bad := bad || jsonb_build_object('seq', i, 'fn', 'transaction end', 'mode', 'cancel', 'sqlstate', 'GUC',
                                             'message', 'lock_timeout is ' || current_setting('lock_timeout'), 'sql', '');
        END IF;
        PERFORM set_config('lock_timeout', '0', true);
        -- sometimes hold a key of our own first: it must stay held until the end
        own := NULL;
        IF random() < 0.3 THEN
            own := 'own-' || p_worker || '-' || i;
            PERFORM sandbox_store.sandbox_lock(own);
        END IF;
        sql := sbfuzz.pick(
            'SELECT sandbox_store.sandbox_lock(''busy-1'')',
            'SELECT sandbox_store.sandbox_lock(''busy-2'', wait => ''10 minutes'')',
            'SELECT sandbox_store.sandbox_lock(''claimed-1'')',
            'SELECT sandbox_store.sandbox_lock(''claimed-2'', wait => ''1000000 years'')',
            'SELECT action FROM sandbox_store.sandbox_ensure(''busy-3'', ''r'')',
            'SELECT action FROM sandbox_store.sandbox_ensure(''busy-1'', ''r'', wait => ''1 hour'')',
            'SELECT action FROM sandbox_store.sandbox_ensure(''claimed-1'', ''r'', wait => ''1 hour'', lease => ''1 minute'')',
            'SELECT action FROM sandbox_store.sandbox_ensure(''claimed-2'', ''r'')',
            'SELECT sandbox_store.sandbox_delete(''busy-2'')',
            'SELECT sandbox_store.sandbox_delete(''claimed-1'')',
            'SELECT sandbox_store.sandbox_delete(''busy-3'', fence => 1)',
            'SELECT sandbox_store.sandbox_renew(''busy-1'', gen_random_uuid(), ''1 minute'')',
            'SELECT sandbox_store.sandbox_release(''busy-2'', gen_random_uuid())',
            'SELECT key FROM sandbox_store.sandbox_upsert(''busy-1'', ''p'', ''s'', ''t'', fence => 1)');
        RAISE NOTICE 'sbfuzz cancel w% #%: %', p_worker, i, sql;
        st := '00000'; msg := NULL; ctx := NULL;
        BEGIN
            EXECUTE sql;
        EXCEPTION WHEN OTHERS OR query_canceled THEN
            GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, ctx = PG_EXCEPTION_CONTEXT;
        END;
        sk := 'cancel ' || st;
        stats := jsonb_set(stats, ARRAY[sk], to_jsonb(coalesce((stats ->> sk)::int, 0) + 1));
        why := NULL;
        IF st = '00000' THEN
            why := 'a call on a busy key returned';
        ELSIF st NOT IN ('57014', '55P03') THEN
            why := sbfuzz.verdict('cancel', 'cancel', st, msg, ctx);
        END IF;
        IF why IS NULL AND current_setting('lock_timeout') <> '0' THEN
            why := 'the canceled call left lock_timeout at ' || current_setting('lock_timeout');
        END IF;
        IF why IS NULL AND own IS NOT NULL
           AND sandbox_store.sandbox_lock_holder(own) IS DISTINCT FROM pg_backend_pid() THEN
            why := 'a canceled call released a lock the transaction took before it';
        END IF;
        IF why IS NOT NULL THEN
            bad := bad || jsonb_build_object('seq', i, 'fn', 'cancel', 'mode', 'cancel', 'sqlstate', st,
                                             'message', coalesce(msg, '') || ' [' || why || ']', 'sql', sql);
        END IF;
        IF random() < 0.5 THEN
            ROLLBACK;
        END IF;
    END LOOP;
    COMMIT;
    nlocks := sbfuzz.my_key_locks();
    IF nlocks > 0 THEN
        bad := bad || jsonb_build_object('seq', p_calls, 'fn', 'transaction end', 'mode', 'cancel', 'sqlstate', 'LEAK',
                                         'message', nlocks || ' extension lock(s) held after the last transaction', 'sql', '');
    END IF;
    INSERT INTO sbfuzz.report
    VALUES (p_worker, 'cancel', p_seed, p_calls, p_calls,
            round(extract(epoch FROM clock_timestamp() - t0)::numeric, 1), stats, bad);
    COMMIT;
END
$$;

GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sbfuzz TO sbfuzz_app;
GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA sbfuzz TO sbfuzz_app;

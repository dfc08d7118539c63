#!/usr/bin/env python3
"""bench/sqlprof/variants.py NAMES SRC OUT: write SRC (src/sql/parts/
functions-sql.sql) to OUT with the comma-separated changes NAMES applied.

A one-off tool of the SQL edition's profile (BENCHMARKS.md, "SQL edition"):
each change is measured alone and together with bench/profile.sh
(PROFILE_EDITION=sql PROFILE_SQL_SCRIPT=..., a plain script built from OUT by
bench/sqlprof/build.sh).  The text it replaces is that of functions-sql.sql
as of version 1.4; it fails (an assertion) when that text has changed.

Changes that keep the behaviour (bench/sqlprof/fast.patch has them all):
  iso_inline      _snapshot_isolation inlinable: no SET clause, every name
                  qualified (a SQL function with a SET clause is never
                  inlined, and fmgr_sql parses and plans it in every
                  transaction)
  helpers_noset   no SET search_path on the internal helpers (the interface
                  functions that call them have it); includes iso_inline's
                  gain when combined, and lockid_noset
  lockid_noset    no SET search_path on _lock_id alone
  lockid_2stmt    the FNV-1a loop in 2 statements a byte
  lockid_3stmt    the FNV-1a loop in 3 statements and 11 operators a byte
  lockid_unroll   two bytes a turn (slower: bigger expressions)
  parts_plpgsql   _interval_parts in PL/pgSQL (a SQL function returning a
                  record is never inlined)
  take_fast       _take: lock mode without a wait at READ COMMITTED first,
                  without the general loop's set-up
  take_lazy       _take: lock_timeout read only when it can matter
  ensure_row      sandbox_ensure: the result row in one statement
  checks_one_if   sandbox_ensure, sandbox_upsert(_release): one condition for
                  all arguments on the good path; the helper only when it fails
  perform_expr    PERFORM f(...) (a whole SELECT through SPI) as a condition
                  IF f(...) IS NULL THEN END IF (a simple expression), on the
                  calls that return
  noseqscan       SET enable_seqscan = off on the interface functions that
                  look a key up (plans made while leases is empty)
Measurements only (they change behaviour or break the edition):
  lockid_fake     a C hash instead of FNV-1a (wrong lock ids)
  no_rowsec       no SET row_security on the interface functions
  no_outer_set    no SET search_path on the interface functions
  no_subxact      lock mode without the subtransaction (cannot give a lock
                  back to a live claim)
  empty_ensure    sandbox_ensure that returns an empty row: the floor
"""
import re, sys

names = [n for n in sys.argv[1].split(',') if n and n != 'stock']
s = open(sys.argv[2]).read()

def rep(a, b, cnt=1):
    global s
    n = s.count(a)
    assert n == cnt, (a[:80], n)
    s = s.replace(a, b)

def func_span(name):
    i = s.index('CREATE FUNCTION sandbox_store.%s(' % name)
    j = s.index('\n$$;\n', s.index('AS $$', i)) + 5
    return i, j

def sub_in(name, a, b, cnt=1):
    global s
    i, j = func_span(name)
    body = s[i:j]
    assert body.count(a) == cnt, (name, a[:80], body.count(a))
    s = s[:i] + body.replace(a, b) + s[j:]

SP = 'SET search_path = pg_catalog, pg_temp\n'
M = '4294967295'

for n in names:
    if n == 'iso_inline':
        sub_in('_snapshot_isolation', SP, '')
        sub_in('_snapshot_isolation',
               "SELECT current_setting('transaction_isolation') IN ('repeatable read', 'serializable')",
               "SELECT pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.=) ANY ('{repeatable read,serializable}'::pg_catalog.text[])")
    elif n == 'helpers_noset':
        rep("""-- Every function runs with search_path pg_catalog, pg_temp and names every
-- object of the extension in full.""", """-- Every interface function runs with search_path pg_catalog, pg_temp (its
-- SET clause), and so do the helpers it calls: they have no SET clause of
-- their own (one costs a save and restore of the setting per call, and
-- keeps a SQL function from being inlined), and nobody else may call them.
-- Every object of the extension is named in full.""")
        for m in re.findall(r'CREATE FUNCTION sandbox_store\.(_[a-z_]+)\(', s):
            i, j = func_span(m)
            if SP in s[i:j]:
                sub_in(m, SP, '')
    elif n == 'lockid_noset':
        sub_in('_lock_id', SP, '')
    elif n == 'lockid_2stmt':
        sub_in('_lock_id', """        lo := lo # pg_catalog.get_byte(b, i);
        t := lo * 435;
        hi := (hi * 435 + (t >> 32) + ((lo & 16777215) << 8)) & 4294967295;
        lo := t & 4294967295;
""", """        hi := (hi * 435 + (((lo # pg_catalog.get_byte(b, i)) * 435) >> 32)
               + (((lo # pg_catalog.get_byte(b, i)) & 16777215) << 8)) & 4294967295;
        lo := ((lo # pg_catalog.get_byte(b, i)) * 435) & 4294967295;
""")
    elif n == 'lockid_unroll':
        sub_in('_lock_id', """    FOR i IN 0 .. pg_catalog.length(b) - 1 LOOP
        lo := lo # pg_catalog.get_byte(b, i);
        t := lo * 435;
        hi := (hi * 435 + (t >> 32) + ((lo & 16777215) << 8)) & 4294967295;
        lo := t & 4294967295;
    END LOOP;
""", """    -- Two bytes a turn: t is lo after the first byte, xor the second.
    FOR i IN 0 .. n - 2 BY 2 LOOP
        t := (((lo # pg_catalog.get_byte(b, i)) * 435) & 4294967295) # pg_catalog.get_byte(b, i + 1);
        hi := (((hi * 435 + (((lo # pg_catalog.get_byte(b, i)) * 435) >> 32)
                 + (((lo # pg_catalog.get_byte(b, i)) & 16777215) << 8)) & 4294967295) * 435
               + ((t * 435) >> 32) + ((t & 16777215) << 8)) & 4294967295;
        lo := (t * 435) & 4294967295;
    END LOOP;
    IF n % 2 = 1 THEN
        hi := (hi * 435 + (((lo # pg_catalog.get_byte(b, n - 1)) * 435) >> 32)
               + (((lo # pg_catalog.get_byte(b, n - 1)) & 16777215) << 8)) & 4294967295;
        lo := ((lo # pg_catalog.get_byte(b, n - 1)) * 435) & 4294967295;
    END IF;
""")
        sub_in('_lock_id', "    t pg_catalog.int8;\n", "    t pg_catalog.int8;\n    n pg_catalog.int4 := pg_catalog.length(b);\n")
    elif n == 'no_rowsec':          # measurement only
        rep('SET row_security = off\n', '', s.count('SET row_security = off\n'))
    elif n == 'no_outer_set':       # measurement only: interface functions without SET search_path
        for m in re.findall(r'CREATE FUNCTION sandbox_store\.(sandbox_[a-z_]+)\(', s):
            i, j = func_span(m)
            if SP in s[i:j]:
                sub_in(m, SP, '')
    elif n == 'no_subxact':         # measurement only: lock mode without the subtransaction (unsafe)
        sub_in('_take', """        BEGIN
            IF wait IS NULL OR deadline IS NULL THEN""", """        IF true THEN
            IF wait IS NULL OR deadline IS NULL THEN""")
        sub_in('_take', """            IF c_live THEN
                -- Give the lock back (the subtransaction's rollback does).
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            blocked := true;
        END;""", """            IF c_live THEN
                blocked := true;
            END IF;
        END IF;""")
    elif n == 'lockid_fake':        # measurement only: a C hash instead of FNV-1a (wrong ids)
        i, j = func_span('_lock_id')
        body = s[i:j]
        a = body.index('BEGIN\n'); b = body.index('END\n$$;')
        s = s[:i] + body[:a] + 'BEGIN\n    RETURN pg_catalog.hashtextextended(k, 0);\n' + body[b:] + s[j:]
    elif n == 'perform_expr':
        # PERFORM f(...) runs a whole SELECT through SPI (executor start, run,
        # end); as a condition, f(...) is a simple expression.
        pat = re.compile(r'^(\s*)PERFORM ((?:sandbox_store\._(?:check_interval|check_record_args|check_fence|lock|lock_within|keep_fence)|pg_advisory_xact_lock|pg_advisory_xact_lock_shared|set_config|pg_logical_emit_message)\(.*\));$', re.M)
        s = pat.sub(lambda m: '%sIF (%s) IS NULL THEN END IF;' % (m.group(1), m.group(2)), s)
    elif n == 'take_lazy':
        sub_in('_take', """    lock_timeout_ms := (extract(epoch FROM current_setting('lock_timeout')::pg_catalog.interval) * 1000)::pg_catalog.int8;
    IF lock_timeout_ms > 0 THEN
        IF deadline IS NULL OR started + make_interval(secs => lock_timeout_ms / 1000.0) < deadline THEN
            deadline := started + make_interval(secs => lock_timeout_ms / 1000.0);
            by_lock_timeout := true;
        END IF;
    END IF;
""", """    -- Without a wait, lock_timeout matters only once a claim is in the way.
    IF wait IS NOT NULL THEN
        lock_timeout_ms := (extract(epoch FROM current_setting('lock_timeout')::pg_catalog.interval) * 1000)::pg_catalog.int8;
        IF lock_timeout_ms > 0 THEN
            IF deadline IS NULL OR started + make_interval(secs => lock_timeout_ms / 1000.0) < deadline THEN
                deadline := started + make_interval(secs => lock_timeout_ms / 1000.0);
                by_lock_timeout := true;
            END IF;
        END IF;
    END IF;
""")
        sub_in('_take', """        -- A live claim holds the key: wait for it, backing off.
""", """        -- A live claim holds the key: wait for it, backing off.
        IF wait IS NULL AND lock_timeout_ms IS NULL THEN
            lock_timeout_ms := (extract(epoch FROM current_setting('lock_timeout')::pg_catalog.interval) * 1000)::pg_catalog.int8;
            IF lock_timeout_ms > 0 THEN
                deadline := started + make_interval(secs => lock_timeout_ms / 1000.0);
                by_lock_timeout := true;
            END IF;
        END IF;
""")
    elif n == 'ensure_row':
        sub_in('sandbox_ensure', """    res.key := r.key;
    res.provider := r.provider;
    res.provider_sandbox_id := r.provider_sandbox_id;
    res.latest_snapshot_id := r.latest_snapshot_id;
    res.thread_id := r.thread_id;
    res.latest_run_id := r.latest_run_id;
    res.updated_at := r.updated_at;
    res.fence := c.fence;
    res.owner_token := c.owner_token;
    res.lease_expires_at := c.lease_expires_at;
    RETURN NEXT res;
""", """    RETURN NEXT ROW(res.action, r.key, r.provider, r.provider_sandbox_id, r.latest_snapshot_id, r.thread_id,
                    r.latest_run_id, r.updated_at, c.fence, c.owner_token, c.lease_expires_at)::sandbox_store.ensure_result;
""")
    elif n == 'empty_ensure':       # measurement only: the floor of a PL/pgSQL sandbox_ensure
        i, j = func_span('sandbox_ensure')
        body = s[i:j]
        a = body.index('BEGIN\n'); b = body.index('END\n$$;')
        s = s[:i] + body[:a] + 'BEGIN\n    RETURN NEXT res;\n' + body[b:] + s[j:]
    elif n == 'lockid_3stmt':
        # x << 8 needs no mask: its bits above 32 fall off with hi's.
        sub_in('_lock_id', """        lo := lo # pg_catalog.get_byte(b, i);
        t := lo * 435;
        hi := (hi * 435 + (t >> 32) + ((lo & 16777215) << 8)) & 4294967295;
        lo := t & 4294967295;
""", """        t := lo # pg_catalog.get_byte(b, i);
        hi := (hi * 435 + ((t * 435) >> 32) + (t << 8)) & 4294967295;
        lo := (t * 435) & 4294967295;
""")
    elif n == 'checks_one_if':
        # The happy path evaluates one condition; the detailed checks run only when it fails.
        # (sandbox_ensure: the text arguments; the intervals keep their own
        # checks, which a NULL skips.)
        sub_in('sandbox_ensure', """BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store._bad_text($1, 'key');
    END IF;
    IF $2 IS NULL OR octet_length($2) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store._bad_text($2, 'run_id');
    END IF;
""", """BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR $2 IS NULL OR octet_length($2) NOT BETWEEN 1 AND 1024
       OR octet_length($4) NOT BETWEEN 1 AND 1024 THEN
        IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 THEN
            PERFORM sandbox_store._bad_text($1, 'key');
        END IF;
        IF $2 IS NULL OR octet_length($2) NOT BETWEEN 1 AND 1024 THEN
            PERFORM sandbox_store._bad_text($2, 'run_id');
        END IF;
        IF $3 IS NOT NULL THEN    -- checked before provider, as always
            PERFORM sandbox_store._check_interval($3, 'max_age', false);
        END IF;
        PERFORM sandbox_store._bad_text($4, 'provider');
    END IF;
""")
        sub_in('sandbox_ensure', """    IF octet_length($4) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store._bad_text($4, 'provider');
    END IF;
""", "")
        for f in ('sandbox_upsert', 'sandbox_upsert_release'):
            a = {'sandbox_upsert': '$2, $3, $4, $5, $6, $7', 'sandbox_upsert_release': '$3, $4, $5, $6, $7, $8'}[f]
            p1, p2, p3, p4, p5, p6 = a.split(', ')
            sub_in(f, "    PERFORM sandbox_store._check_record_args(%s);\n" % a,
                   ("    IF %s IS NULL OR octet_length(%s) NOT BETWEEN 1 AND 1024 OR %s IS NULL OR octet_length(%s) NOT BETWEEN 1 AND 1024\n"
                    "       OR %s IS NULL OR octet_length(%s) NOT BETWEEN 1 AND 1024 OR octet_length(%s) NOT BETWEEN 1 AND 1024\n"
                    "       OR octet_length(%s) NOT BETWEEN 1 AND 1024 OR %s IS NULL OR NOT isfinite(%s) THEN\n"
                    "        PERFORM sandbox_store._check_record_args(%s);\n    END IF;\n") % (p1, p1, p2, p2, p3, p3, p4, p5, p6, p6, a))
    elif n == 'take_fast':
        sub_in('_take', """    by_lock_timeout boolean := false;""", """    by_lock_timeout boolean;""")
        sub_in('_take', """    delay_ms pg_catalog.int4 := 1;""", """    delay_ms pg_catalog.int4;""")
        sub_in('_take', """    -- How long the caller may wait: wait (more than 36,500 days is no""", """    -- Lock mode without a wait at READ COMMITTED, the common call: the
    -- lock, and no live claim in the way.
    IF wait IS NULL AND lease IS NULL AND NOT rr THEN
        BEGIN
            PERFORM pg_advisory_xact_lock(lock_id);
            SELECT l.fence, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL;
            IF c_live THEN
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            c_live := true;
        END;
        IF c_fence IS NULL OR (NOT c_live AND sandbox_store._retire(k)) THEN
            RETURN;
        END IF;
    END IF;
    by_lock_timeout := false;
    delay_ms := 1;
    -- How long the caller may wait: wait (more than 36,500 days is no""")
    elif n == 'parts_plpgsql':
        # A SQL function returning a record is never inlined, and fmgr_sql
        # parses and plans its body again in every transaction.
        sub_in('_interval_parts', """LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE""", """LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE""")
        sub_in('_interval_parts', """AS $$
SELECT extract(year FROM v) * 12 + extract(month FROM v),
       extract(day FROM v),
       (extract(hour FROM v) * 3600 + extract(minute FROM v) * 60 + extract(second FROM v)) * 1000000
$$;""", """AS $$
BEGIN
    months := extract(year FROM v) * 12 + extract(month FROM v);
    days := extract(day FROM v);
    usecs := (extract(hour FROM v) * 3600 + extract(minute FROM v) * 60 + extract(second FROM v)) * 1000000;
END
$$;""")
    elif n == 'noseqscan':
        # Plans made while leases is empty (after a VACUUM) scan it
        # sequentially, and a backend keeps them: enable_seqscan off on the
        # functions that look keys up (not sandbox_reap and sandbox_list).
        for m in re.findall(r'CREATE FUNCTION sandbox_store\.(sandbox_[a-z_]+)\(', s):
            if m in ('sandbox_reap', 'sandbox_list', 'sandbox_get', 'sandbox_lock_id', 'sandbox_lock_holder'):
                continue
            i, j = func_span(m)
            if 'SET row_security = off\n' in s[i:j]:
                sub_in(m, 'SET row_security = off\n', 'SET row_security = off\nSET enable_seqscan = off\n')
    else:
        sys.exit('unknown variant ' + n)

open(sys.argv[3], 'w').write(s)

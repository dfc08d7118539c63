-- sandbox_store, SQL edition: from 1.4 to 1.4.1 (the pg_tle update path, and
-- with src/sql/build.sh plain-update, the plain script's update).

-- 1.4.1: the internal helper functions (names starting with an underscore)
-- move from schema sandbox_store to sandbox_store_internal, which no role
-- but the owner may use: GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA
-- sandbox_store gave them to the app role too.  1.4's helpers are dropped
-- (with any grant an admin gave on them), made again in the new schema, and
-- every function is made again with 1.4.1's body (CREATE OR REPLACE keeps
-- each interface function's grants).

DROP FUNCTION
    sandbox_store._bad_text(pg_catalog.text, pg_catalog.text),
    sandbox_store._changed(pg_catalog.text, pg_catalog.text),
    sandbox_store._check_fence(pg_catalog.text, pg_catalog.int8),
    sandbox_store._check_fence_arg(pg_catalog.int8),
    sandbox_store._check_interval(pg_catalog.interval, pg_catalog.text, pg_catalog.bool),
    sandbox_store._check_record_args(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz),
    sandbox_store._check_writer(pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store._checkpoint_blob_keys(pg_catalog.jsonb),
    sandbox_store._checkpoint_error(pg_catalog.text, pg_catalog.text, pg_catalog.text),
    sandbox_store._checkpoint_id(pg_catalog.text, pg_catalog.text, pg_catalog.int4),
    sandbox_store._checkpoint_refs(pg_catalog.jsonb, pg_catalog.int4),
    sandbox_store._checkpoint_valid(pg_catalog.jsonb),
    sandbox_store._claim_lost(pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.int8),
    sandbox_store._current_record(pg_catalog.text),
    sandbox_store._cutoff(pg_catalog.interval),
    sandbox_store._draw_claim_fence(pg_catalog.int8),
    sandbox_store._draw_fence(pg_catalog.int8),
    sandbox_store._interval_parts(pg_catalog.interval),
    sandbox_store._invalid_entry(pg_catalog.text),
    sandbox_store._keep_fence(),
    sandbox_store._lock(pg_catalog.text, pg_catalog.int8),
    sandbox_store._lock_id(pg_catalog.text),
    sandbox_store._lock_within(pg_catalog.int8, pg_catalog.int8),
    sandbox_store._not_obtained(pg_catalog.text, pg_catalog.interval, pg_catalog.bool, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store._null_arg(pg_catalog.text),
    sandbox_store._probe_hidden(pg_catalog.text, pg_catalog.text),
    sandbox_store._reap_candidates(pg_catalog.timestamptz),
    sandbox_store._refuse_on_standby(pg_catalog.text),
    sandbox_store._retire(pg_catalog.text),
    sandbox_store._snapshot_isolation(),
    sandbox_store._take(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.interval),
    sandbox_store._try_take(pg_catalog.text, pg_catalog.int8),
    sandbox_store._upsert(pg_catalog.text, pg_catalog.int8, pg_catalog.bool, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz),
    sandbox_store._writer_key(pg_catalog.text);

-- The schema of the internal helper functions (the names that start with an
-- underscore).  No role but its owner, the role that installed
-- sandbox_store, has USAGE on it, and nobody is granted its functions: the
-- interface functions call them as their owner.  An app role that was
-- granted every function of schema sandbox_store (GRANT EXECUTE ON ALL
-- FUNCTIONS IN SCHEMA sandbox_store) can call the documented interface and
-- nothing else.  The install script makes it (CREATE SCHEMA fails if a
-- schema of that name exists: nobody can lay one out beforehand), and
-- DROP EXTENSION drops it with the extension.
CREATE SCHEMA sandbox_store_internal;
COMMENT ON SCHEMA sandbox_store_internal IS
'Internal helper functions of sandbox_store: no role but the owner may use them.';

-- The SQL edition's functions: the same interface as the C edition's, in
-- PL/pgSQL, for servers that cannot load the library (pg_tle, or the plain
-- script).  docs/reference.md, "Editions", lists where they differ and why.
--
-- Every function runs with search_path pg_catalog, pg_temp and names every
-- object of the extension in full.  The interface functions are SECURITY
-- DEFINER: they run as the role that installed the extension, which owns the
-- tables (the C edition switches to the tables' owner for its statements).
-- row_security is off in them, so row-level security an owner forces on the
-- tables makes a call fail instead of hiding rows.  The helpers whose names
-- start with an underscore are the edition's internals: nobody is granted
-- them, and the interface functions call them as their owner.
--
-- A key's lock is PostgreSQL's transaction-scoped advisory lock on the key's
-- lock id (pg_advisory_xact_lock(bigint): pg_locks shows objsubid 1).  A lock
-- that a call must give back before its transaction ends (to wait for a live
-- claim, or when try_lock finds one) is taken in a subtransaction, which is
-- rolled back to give it back.

-- The key's lock id: FNV-1a over the key's bytes in the database encoding,
-- as the C edition computes it, on two 32-bit halves (bigint arithmetic
-- must not overflow).  The prime is 2^40 + 435.
CREATE OR REPLACE FUNCTION sandbox_store_internal._lock_id(k pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    b pg_catalog.bytea := pg_catalog.convert_to(k, pg_catalog.getdatabaseencoding());
    hi pg_catalog.int8 := 3421674724;
    lo pg_catalog.int8 := 2216829733;
    t pg_catalog.int8;
BEGIN
    FOR i IN 0 .. pg_catalog.length(b) - 1 LOOP
        lo := lo # pg_catalog.get_byte(b, i);
        t := lo * 435;
        hi := (hi * 435 + (t >> 32) + ((lo & 16777215) << 8)) & 4294967295;
        lo := t & 4294967295;
    END LOOP;
    RETURN (hi << 32) | lo;
END
$$;

-- A text argument that is NULL (when required), empty or over 1024 bytes; a
-- key that is reserved (starts with E'\x01': the extension's own claims, such
-- as a thread's checkpoint writer on E'\x01checkpoint-writer\x01' || thread).
CREATE OR REPLACE FUNCTION sandbox_store_internal._bad_text(v pg_catalog.text, arg pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF v IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = format('%s must not be null', arg);
    END IF;
    IF octet_length(v) = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must not be empty', arg);
    END IF;
    IF arg = 'key' AND octet_length(v) <= 1024 AND starts_with(v, E'\x01') THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'key is reserved',
            DETAIL = 'Keys that start with E''\x01'' are reserved for the extension''s own claims, such as the checkpoint writers''.',
            HINT = 'Use a key that does not start with the byte 0x01.';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'string_data_right_truncation',
        MESSAGE = format('%s is too long', arg),
        DETAIL = format('The value has %s bytes; at most 1024 are allowed.', octet_length(v));
END
$$;

-- A required argument given as NULL.
CREATE OR REPLACE FUNCTION sandbox_store_internal._null_arg(arg pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
        MESSAGE = format('%s must not be null', arg);
END
$$;

-- An interval's months, days and microseconds, each with its sign.
CREATE OR REPLACE FUNCTION sandbox_store_internal._interval_parts(v pg_catalog.interval,
    OUT months pg_catalog.numeric, OUT days pg_catalog.numeric, OUT usecs pg_catalog.numeric)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT extract(year FROM v) * 12 + extract(month FROM v),
       extract(day FROM v),
       (extract(hour FROM v) * 3600 + extract(minute FROM v) * 60 + extract(second FROM v)) * 1000000
$$;

-- An interval argument: parts of one sign; not negative; positive (and
-- now() + it still a timestamp) where the argument must be positive.
CREATE OR REPLACE FUNCTION sandbox_store_internal._check_interval(v pg_catalog.interval, arg pg_catalog.text,
                                              must_be_positive pg_catalog.bool)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p record := sandbox_store_internal._interval_parts(v);
    some_negative boolean := p.months < 0 OR p.days < 0 OR p.usecs < 0;
    some_positive boolean := p.months > 0 OR p.days > 0 OR p.usecs > 0;
BEGIN
    IF some_negative AND some_positive THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must not mix negative and positive parts', arg),
            DETAIL = format('The value given is %s.  Its months, days and time last differently on different dates, so its sign depends on the date.', v),
            HINT = 'Write it with parts of one sign, such as ''36 hours'' instead of ''2 days -12 hours''.';
    END IF;
    IF (some_negative AND must_be_positive) OR (must_be_positive AND NOT some_positive) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must be positive', arg),
            DETAIL = format('The value given is %s.', v);
    END IF;
    IF some_negative THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must not be negative', arg),
            DETAIL = format('The value given is %s.', v);
    END IF;
    -- now() + v must stay a timestamp (a month counted as 31 days, as the C
    -- edition counts it).
    IF must_be_positive
       AND (p.months * 31 * 86400000000 + p.days * 86400000000 + p.usecs)
           >= (extract(epoch FROM timestamptz '294276-12-31 23:59:59.999999+00')
               - extract(epoch FROM clock_timestamp())) * 1000000 + 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s is too long', arg),
            DETAIL = format('now() + %s would be past the latest timestamp PostgreSQL has.', arg);
    END IF;
END
$$;

-- now() - age, in UTC; -infinity when that reaches before the earliest
-- timestamp (nothing is that old).
CREATE OR REPLACE FUNCTION sandbox_store_internal._cutoff(age pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p record := sandbox_store_internal._interval_parts(age);
BEGIN
    IF p.months * 31 * 86400000000 + p.days * 86400000000 + p.usecs
       >= (extract(epoch FROM now()) - extract(epoch FROM timestamptz '4714-11-24 00:00:00+00 BC')) * 1000000 THEN
        RETURN '-infinity';
    END IF;
    RETURN (now() AT TIME ZONE 'UTC' - age) AT TIME ZONE 'UTC';
END
$$;

-- 25006 on a hot standby: a standby's advisory lock excludes nothing on the
-- primary.
CREATE OR REPLACE FUNCTION sandbox_store_internal._refuse_on_standby(k pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'read_only_sql_transaction',
        MESSAGE = format('cannot lock sandbox key "%s" on a standby', k),
        DETAIL = 'A standby''s locks exclude nothing on the primary, where the key is held.',
        HINT = 'Connect to the primary.';
END
$$;

-- 55P03: the key could not be taken within the wait.  blocked_fence NULL:
-- another transaction's lock was in the way; else a live claim.
CREATE OR REPLACE FUNCTION sandbox_store_internal._not_obtained(k pg_catalog.text, wait pg_catalog.interval,
                                            by_lock_timeout pg_catalog.bool,
                                            blocked_fence pg_catalog.int8,
                                            blocked_until pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    limit_text pg_catalog.text;
    hint_text pg_catalog.text;
BEGIN
    IF by_lock_timeout OR wait IS NULL THEN
        limit_text := format('lock_timeout (%s)', current_setting('lock_timeout'));
        hint_text := 'Retry later, or raise lock_timeout.';
    ELSE
        limit_text := format('the wait (%s)', wait);
        hint_text := 'Retry later, or pass a longer wait.';
    END IF;
    IF blocked_fence IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
            MESSAGE = format('could not lock sandbox key "%s"', k),
            DETAIL = format('The key is claimed (fence %s) until %s, past %s.', blocked_fence, blocked_until, limit_text),
            HINT = hint_text;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
        MESSAGE = format('could not lock sandbox key "%s"', k),
        DETAIL = format('Another transaction holds the key''s lock, and %s is over.', limit_text),
        HINT = hint_text;
END
$$;

-- 40001 in our words, at REPEATABLE READ or SERIALIZABLE.
CREATE OR REPLACE FUNCTION sandbox_store_internal._changed(k pg_catalog.text, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'serialization_failure',
        MESSAGE = format('could not serialize access to sandbox key "%s"', k),
        DETAIL = format('The key''s %s was changed by a transaction that committed after this transaction''s snapshot was taken.', what),
        HINT = 'Retry the transaction, or run it at READ COMMITTED.';
END
$$;

-- SB001, the ways a claim is lost.
CREATE OR REPLACE FUNCTION sandbox_store_internal._claim_lost(k pg_catalog.text, how pg_catalog.text,
                                          f pg_catalog.int8, newest pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF how = 'token' THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = 'The owner token does not hold the key''s claim: it was released, or its lease expired and the key was taken over.  Nothing was changed.',
            HINT = 'Take a new claim with sandbox_claim or sandbox_ensure.';
    ELSIF how = 'old' THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The write is fenced with %s, but the key has fence %s since it was claimed or taken over again.  Nothing was changed.', f, newest),
            HINT = 'Stop writing for this key.';
    ELSIF how = 'foreign' AND newest = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The write is fenced with %s, but the key was never claimed.  Nothing was changed.', f),
            HINT = 'Fence a write with the fence of a claim on the same key.';
    ELSIF how = 'foreign' THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The write is fenced with %s, which was never given for this key (its fence is %s).  Nothing was changed.', f, newest),
            HINT = 'Fence a write with the fence of a claim on the same key.';
    ELSE
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The claim that was given fence %s has ended: it was released.  Nothing was changed.', f),
            HINT = 'If this retries a write whose acknowledgement was lost, read the record with sandbox_get to see whether the first attempt landed.  Otherwise take a new claim.';
    END IF;
END
$$;

-- Whether the transaction reads with one snapshot (REPEATABLE READ or
-- SERIALIZABLE).
CREATE OR REPLACE FUNCTION sandbox_store_internal._snapshot_isolation()
RETURNS pg_catalog.bool
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT current_setting('transaction_isolation') IN ('repeatable read', 'serializable')
$$;

-- REPEATABLE READ / SERIALIZABLE: a statement reads with the transaction's
-- snapshot, which may hide a row committed after it.  An INSERT ... ON
-- CONFLICT DO NOTHING that conflicts with a row the snapshot cannot see
-- raises PostgreSQL's 40001; the probe's own row, if it inserts one, is
-- rolled back with the block.  what: 'claim' (leases) or 'record'
-- (instances).
CREATE OR REPLACE FUNCTION sandbox_store_internal._probe_hidden(k pg_catalog.text, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    BEGIN
        IF what = 'claim' THEN
            INSERT INTO sandbox_store.leases (key, fence) VALUES (k, 0)
                ON CONFLICT ON CONSTRAINT leases_pkey DO NOTHING;
        ELSE
            INSERT INTO sandbox_store.instances (key, provider, provider_sandbox_id, thread_id, updated_at)
                VALUES (k, '-', '-', '-', now())
                ON CONFLICT ON CONSTRAINT instances_pkey DO NOTHING;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'SBP01';
    EXCEPTION
        WHEN SQLSTATE 'SBP01' THEN
            NULL;
        WHEN serialization_failure THEN
            PERFORM sandbox_store_internal._changed(k, what);
    END;
END
$$;

-- The key's record, row-locked, at REPEATABLE READ or SERIALIZABLE: the one
-- the snapshot shows must be the newest (40001 otherwise).  NULL key when
-- there is none.
CREATE OR REPLACE FUNCTION sandbox_store_internal._current_record(k pg_catalog.text)
RETURNS sandbox_store.instances
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r sandbox_store.instances;
BEGIN
    BEGIN
        SELECT i.* INTO r FROM ONLY sandbox_store.instances i
         WHERE i.key OPERATOR(pg_catalog.=) k FOR UPDATE;
    EXCEPTION WHEN serialization_failure THEN
        PERFORM sandbox_store_internal._changed(k, 'record');
    END;
    IF r.key IS NULL THEN
        PERFORM sandbox_store_internal._probe_hidden(k, 'record');
    END IF;
    RETURN r;
END
$$;

-- A new fence above `above`, drawn from fence_seq.  A draw holds the fence
-- draw lock (advisory (0, 21315)) shared; moving the sequence up to the key
-- holds it exclusive, draws again and calls setval only if still needed, so
-- the sequence never moves back under another draw.  In this edition the
-- draw lock lasts until the transaction ends.
CREATE OR REPLACE FUNCTION sandbox_store_internal._draw_fence(above pg_catalog.int8)
RETURNS pg_catalog.int8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f pg_catalog.int8;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(0, 21315);
    f := nextval('sandbox_store.fence_seq');
    IF f > above THEN
        RETURN f;
    END IF;
    PERFORM pg_advisory_xact_lock(0, 21315);
    f := nextval('sandbox_store.fence_seq');
    IF f <= above THEN
        PERFORM setval('sandbox_store.fence_seq', above);
        f := nextval('sandbox_store.fence_seq');
    END IF;
    IF f <= above THEN
        RAISE EXCEPTION 'sequence sandbox_store.fence_seq gave % after being set to %', f, above
            USING ERRCODE = 'internal_error';
    END IF;
    RETURN f;
END
$$;

-- The fence just drawn must survive a crash before the client sees it.  On
-- PostgreSQL 17 and later the WAL that covers it is flushed now (a claim
-- made in a transaction block, or by a statement that streams its rows, is
-- seen before its commit).  Earlier versions have no SQL function that
-- flushes WAL: there the commit flushes it (synchronous_commit is raised for
-- the transaction if it is off), which covers a claim made by a statement
-- in autocommit (docs/reference.md, "Editions").
CREATE OR REPLACE FUNCTION sandbox_store_internal._keep_fence()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'local', true);
    END IF;
    IF current_setting('server_version_num')::pg_catalog.int4 >= 170000 THEN
        PERFORM pg_logical_emit_message(false, 'sandbox_store', ''::pg_catalog.text, true);
    END IF;
END
$$;

-- A fence for a claim that SQL code takes itself (the checkpoint writers):
-- drawn and kept as for sandbox_claim.
CREATE OR REPLACE FUNCTION sandbox_store_internal._draw_claim_fence(above pg_catalog.int8)
RETURNS pg_catalog.int8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f pg_catalog.int8 := sandbox_store_internal._draw_fence(above);
BEGIN
    PERFORM sandbox_store_internal._keep_fence();
    RETURN f;
END
$$;

-- The lock of a thread's first checkpoint writer: the writer key's lock, as
-- this edition takes a key's lock (pg_advisory_xact_lock on its lock id,
-- which an application's own advisory lock on that number shares), at once
-- or not at all, until the transaction ends.
CREATE OR REPLACE FUNCTION sandbox_store_internal._try_writer_lock(k pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE sql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
SELECT pg_catalog.pg_try_advisory_xact_lock(sandbox_store_internal._lock_id(k))
$$;

-- sandbox_store.max_checkpoint_bytes in bytes (0: not set, or no limit).
-- Without a library it is a placeholder: a text that any role may set,
-- read here as a size with or without a unit (kB, MB, GB).
CREATE OR REPLACE FUNCTION sandbox_store_internal._max_checkpoint_bytes()
RETURNS pg_catalog.int8
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting pg_catalog.text := btrim(current_setting('sandbox_store.max_checkpoint_bytes', true));
BEGIN
    IF setting IS NULL OR setting OPERATOR(pg_catalog.=) '' THEN
        RETURN 0;
    END IF;
    -- (a block with an exception handler only when there is a value to read)
    BEGIN
        RETURN pg_size_bytes(regexp_replace(setting, '^([0-9]+) *B$', '\1 bytes'));
    EXCEPTION WHEN invalid_parameter_value OR numeric_value_out_of_range THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('invalid value for sandbox_store.max_checkpoint_bytes: %s', to_jsonb(setting)),
            DETAIL = 'It is a size in bytes, with or without a unit (kB, MB, GB), such as 104857600 or 100MB; 0 means no limit.',
            HINT = 'Set it to a valid size, or RESET it.';
    END;
END
$$;

-- Take the key's lock with lock_timeout set to ms for this wait only (the
-- SET clause restores the caller's value on the way out, also on error).
-- ms must fit lock_timeout: 1 to 2147483647 (about 24.8 days).
CREATE OR REPLACE FUNCTION sandbox_store_internal._lock_within(lock_id pg_catalog.int8, ms pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = 0
AS $$
BEGIN
    PERFORM set_config('lock_timeout', ms::pg_catalog.text, true);
    PERFORM pg_advisory_xact_lock(lock_id);
END
$$;

-- Retire the key's expired claim (a lock-mode caller took the key over): a
-- new fence, no token.  False if the claim was renewed or released since it
-- was seen.
CREATE OR REPLACE FUNCTION sandbox_store_internal._retire(k pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    newest pg_catalog.int8;
    is_claimed boolean;
BEGIN
    BEGIN
        SELECT l.fence, l.owner_token IS NOT NULL INTO newest, is_claimed
          FROM ONLY sandbox_store.leases l
         WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
    EXCEPTION WHEN serialization_failure THEN
        PERFORM sandbox_store_internal._changed(k, 'claim');
    END;
    IF is_claimed THEN
        UPDATE ONLY sandbox_store.leases l
           SET fence = GREATEST(l.fence + 1, sandbox_store_internal._draw_fence(newest)),
               owner_token = NULL, lease_expires_at = NULL
         WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL
           AND l.lease_expires_at OPERATOR(pg_catalog.<=) clock_timestamp();
        IF FOUND THEN
            RETURN true;
        END IF;
    END IF;
    IF sandbox_store_internal._snapshot_isolation() THEN
        PERFORM sandbox_store_internal._changed(k, 'claim');
    END IF;
    RETURN false;
END
$$;

-- Take the key: its lock (waiting as wait allows; 55P03 when the wait is
-- over), once no live claim holds it.  Lock mode (lease NULL): an expired
-- claim is retired, and the result is all NULL.  Lease mode: a new claim,
-- replacing an expired one, and the result is the claim.  The lock is held
-- until the transaction ends.
CREATE OR REPLACE FUNCTION sandbox_store_internal._take(k pg_catalog.text, lock_id pg_catalog.int8,
                                    wait pg_catalog.interval, lease pg_catalog.interval,
                                    OUT fence pg_catalog.int8, OUT owner_token pg_catalog.uuid,
                                    OUT lease_expires_at pg_catalog.timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    started pg_catalog.timestamptz := clock_timestamp();
    deadline pg_catalog.timestamptz;    -- NULL: no bound
    by_lock_timeout boolean := false;
    lock_timeout_ms pg_catalog.int8;
    p record;
    ms_left pg_catalog.int8;
    delay_ms pg_catalog.int4 := 1;
    nap_ms pg_catalog.numeric;
    c_fence pg_catalog.int8;
    c_until pg_catalog.timestamptz;
    c_live boolean;
    blocked boolean;
    rr boolean := sandbox_store_internal._snapshot_isolation();
    newest pg_catalog.int8;
    now_clock pg_catalog.timestamptz;
BEGIN
    IF pg_is_in_recovery() THEN
        PERFORM sandbox_store_internal._refuse_on_standby(k);
    END IF;
    -- How long the caller may wait: wait (more than 36,500 days is no
    -- bound), or lock_timeout if that is sooner.
    IF wait IS NOT NULL THEN
        p := sandbox_store_internal._interval_parts(wait);
        IF p.usecs + p.days * 86400000000 + p.months * 30 * 86400000000 <= 36500 * 86400000000::pg_catalog.numeric THEN
            deadline := started + make_interval(secs => (p.usecs + p.days * 86400000000 + p.months * 30 * 86400000000) / 1000000);
        END IF;
    END IF;
    lock_timeout_ms := (extract(epoch FROM current_setting('lock_timeout')::pg_catalog.interval) * 1000)::pg_catalog.int8;
    IF lock_timeout_ms > 0 THEN
        IF deadline IS NULL OR started + make_interval(secs => lock_timeout_ms / 1000.0) < deadline THEN
            deadline := started + make_interval(secs => lock_timeout_ms / 1000.0);
            by_lock_timeout := true;
        END IF;
    END IF;

    LOOP
        blocked := false;
        c_fence := NULL;
        BEGIN
            IF wait IS NULL OR deadline IS NULL THEN
                -- PostgreSQL's own wait (lock_timeout, if set, ends it).
                PERFORM pg_advisory_xact_lock(lock_id);
            ELSE
                -- lock_timeout holds at most 2147483647 ms (about 24.8
                -- days): a longer wait waits in pieces of that length.
                LOOP
                    ms_left := ceil(extract(epoch FROM deadline - clock_timestamp()) * 1000);
                    IF ms_left <= 0 THEN
                        IF NOT pg_try_advisory_xact_lock(lock_id) THEN
                            PERFORM sandbox_store_internal._not_obtained(k, wait, by_lock_timeout, NULL, NULL);
                        END IF;
                        EXIT;
                    END IF;
                    BEGIN
                        PERFORM sandbox_store_internal._lock_within(lock_id, LEAST(ms_left, 2147483647));
                        EXIT;
                    EXCEPTION WHEN lock_not_available THEN
                        IF ms_left <= 2147483647 THEN
                            PERFORM sandbox_store_internal._not_obtained(k, wait, by_lock_timeout, NULL, NULL);
                        END IF;
                    END;
                END LOOP;
            END IF;
            IF rr THEN
                PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
            END IF;
            SELECT l.fence, l.lease_expires_at, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_until, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL;
            IF c_live THEN
                -- Give the lock back (the subtransaction's rollback does).
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            blocked := true;
        END;

        IF NOT blocked THEN
            IF lease IS NULL THEN
                IF c_fence IS NULL OR sandbox_store_internal._retire(k) THEN
                    RETURN;
                END IF;
            ELSE
                BEGIN
                    SELECT l.fence INTO newest FROM ONLY sandbox_store.leases l
                     WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
                EXCEPTION WHEN serialization_failure THEN
                    PERFORM sandbox_store_internal._changed(k, 'claim');
                END;
                now_clock := clock_timestamp();
                INSERT INTO sandbox_store.leases AS l (key, fence, owner_token, lease_expires_at)
                VALUES (k, sandbox_store_internal._draw_fence(COALESCE(newest, 0)), gen_random_uuid(),
                        (now_clock AT TIME ZONE 'UTC' + lease) AT TIME ZONE 'UTC')
                ON CONFLICT ON CONSTRAINT leases_pkey DO UPDATE
                   SET fence = GREATEST(l.fence + 1, EXCLUDED.fence),
                       owner_token = EXCLUDED.owner_token,
                       lease_expires_at = EXCLUDED.lease_expires_at
                 WHERE l.owner_token IS NULL OR l.lease_expires_at OPERATOR(pg_catalog.<=) now_clock
                RETURNING l.fence, l.owner_token, l.lease_expires_at
                     INTO fence, owner_token, lease_expires_at;
                IF FOUND THEN
                    PERFORM sandbox_store_internal._keep_fence();
                    RETURN;
                END IF;
            END IF;
            CONTINUE;    -- the claim changed under us: look again
        END IF;

        -- A live claim holds the key: wait for it, backing off.
        IF deadline IS NOT NULL AND clock_timestamp() >= deadline THEN
            PERFORM sandbox_store_internal._not_obtained(k, wait, by_lock_timeout, c_fence, c_until);
        END IF;
        nap_ms := delay_ms;
        IF c_until > clock_timestamp() THEN
            nap_ms := LEAST(nap_ms, floor(extract(epoch FROM c_until - clock_timestamp()) * 1000) + 1);
        END IF;
        IF deadline IS NOT NULL THEN
            nap_ms := LEAST(nap_ms, GREATEST(ceil(extract(epoch FROM deadline - clock_timestamp()) * 1000), 0));
        END IF;
        IF nap_ms > 0 THEN
            PERFORM pg_sleep(nap_ms / 1000.0);
        END IF;
        delay_ms := LEAST(delay_ms * 2, 50);
    END LOOP;
END
$$;

-- Take the key's lock if it is free now (no other transaction's lock, no
-- live claim; an expired claim is retired).  False leaves nothing held.
CREATE OR REPLACE FUNCTION sandbox_store_internal._try_take(k pg_catalog.text, lock_id pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_fence pg_catalog.int8;
    c_live boolean;
BEGIN
    IF pg_is_in_recovery() THEN
        PERFORM sandbox_store_internal._refuse_on_standby(k);
    END IF;
    LOOP
        c_fence := NULL;
        BEGIN
            IF NOT pg_try_advisory_xact_lock(lock_id) THEN
                RETURN false;
            END IF;
            IF sandbox_store_internal._snapshot_isolation() THEN
                PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
            END IF;
            SELECT l.fence, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL;
            IF c_live THEN
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            RETURN false;
        END;
        IF c_fence IS NULL OR sandbox_store_internal._retire(k) THEN
            RETURN true;
        END IF;
    END LOOP;
END
$$;

-- The key's lock, taken for a write that does not wait for claims (fenced
-- writes, renew, release, REPEATABLE READ upserts).
CREATE OR REPLACE FUNCTION sandbox_store_internal._lock(k pg_catalog.text, lock_id pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF pg_is_in_recovery() THEN
        PERFORM sandbox_store_internal._refuse_on_standby(k);
    END IF;
    PERFORM pg_advisory_xact_lock(lock_id);
END
$$;

-- A fenced write goes through only with the fence of the key's current
-- claim: the key's newest fence, its claim still set.  SB001 otherwise.
CREATE OR REPLACE FUNCTION sandbox_store_internal._check_fence(k pg_catalog.text, f pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    newest pg_catalog.int8;
    is_claimed boolean;
BEGIN
    SELECT l.fence, l.owner_token IS NOT NULL INTO newest, is_claimed
      FROM ONLY sandbox_store.leases l
     WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
    IF NOT FOUND THEN
        -- (REPEATABLE READ: a claim committed after the snapshot is 40001.)
        IF sandbox_store_internal._snapshot_isolation() THEN
            PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
        END IF;
        newest := 0;
        is_claimed := false;
    END IF;
    IF newest > f THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'old', f, newest);
    ELSIF newest OPERATOR(pg_catalog.<>) f THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'foreign', f, newest);
    ELSIF NOT is_claimed THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'ended', f, newest);
    END IF;
END
$$;

-- Insert or fully replace a record (sandbox_upsert, sandbox_upsert_release),
-- arguments already checked.
CREATE OR REPLACE FUNCTION sandbox_store_internal._upsert(k pg_catalog.text, f pg_catalog.int8, release pg_catalog.bool,
                                      p_provider pg_catalog.text, p_provider_sandbox_id pg_catalog.text,
                                      p_thread_id pg_catalog.text, p_latest_snapshot_id pg_catalog.text,
                                      p_latest_run_id pg_catalog.text, p_updated_at pg_catalog.timestamptz)
RETURNS sandbox_store.instances
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rr boolean := sandbox_store_internal._snapshot_isolation();
    r sandbox_store.instances;
BEGIN
    IF f IS NOT NULL OR rr THEN
        PERFORM sandbox_store_internal._lock(k, sandbox_store_internal._lock_id(k));
        IF f IS NOT NULL THEN
            PERFORM sandbox_store_internal._check_fence(k, f);
        END IF;
        IF release THEN
            BEGIN
                UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
                 WHERE l.key OPERATOR(pg_catalog.=) k AND l.fence OPERATOR(pg_catalog.=) f
                   AND l.owner_token IS NOT NULL;
            EXCEPTION WHEN serialization_failure THEN
                PERFORM sandbox_store_internal._changed(k, 'claim');
            END;
            IF NOT FOUND THEN
                IF rr THEN
                    PERFORM sandbox_store_internal._changed(k, 'claim');
                END IF;
                RAISE EXCEPTION 'the checked claim of fence % on sandbox key "%" was not found', f, k
                    USING ERRCODE = 'internal_error';
            END IF;
        END IF;
    END IF;
    IF rr THEN
        PERFORM sandbox_store_internal._current_record(k);
    END IF;
    INSERT INTO sandbox_store.instances AS i
           (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at)
    VALUES (k, p_provider, p_provider_sandbox_id, p_latest_snapshot_id, p_thread_id, p_latest_run_id, p_updated_at)
    ON CONFLICT ON CONSTRAINT instances_pkey DO UPDATE SET
           provider = EXCLUDED.provider,
           provider_sandbox_id = EXCLUDED.provider_sandbox_id,
           latest_snapshot_id = EXCLUDED.latest_snapshot_id,
           thread_id = EXCLUDED.thread_id,
           latest_run_id = EXCLUDED.latest_run_id,
           updated_at = EXCLUDED.updated_at
    RETURNING i.* INTO r;
    RETURN r;
END
$$;

-- Arguments of the record writers, in declaration order.
CREATE OR REPLACE FUNCTION sandbox_store_internal._check_record_args(p_provider pg_catalog.text, p_provider_sandbox_id pg_catalog.text,
                                                 p_thread_id pg_catalog.text, p_latest_snapshot_id pg_catalog.text,
                                                 p_latest_run_id pg_catalog.text, p_updated_at pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_provider IS NULL OR octet_length(p_provider) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(p_provider, 'provider');
    END IF;
    IF p_provider_sandbox_id IS NULL OR octet_length(p_provider_sandbox_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(p_provider_sandbox_id, 'provider_sandbox_id');
    END IF;
    IF p_thread_id IS NULL OR octet_length(p_thread_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(p_thread_id, 'thread_id');
    END IF;
    IF octet_length(p_latest_snapshot_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(p_latest_snapshot_id, 'latest_snapshot_id');
    END IF;
    IF octet_length(p_latest_run_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(p_latest_run_id, 'latest_run_id');
    END IF;
    IF p_updated_at IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = 'updated_at must not be null',
            HINT = 'Omit updated_at to use the current time.';
    END IF;
    IF NOT isfinite(p_updated_at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'updated_at must be a finite timestamp',
            DETAIL = 'Records are swept by age, which an infinite timestamp does not have.';
    END IF;
END
$$;

-- A fence argument must be positive.
CREATE OR REPLACE FUNCTION sandbox_store_internal._check_fence_arg(f pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF f <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'fence must be positive',
            DETAIL = format('The value given is %s; fences start at 1.', f);
    END IF;
END
$$;

-- The interface.

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_upsert(
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now(),
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS sandbox_store.instances
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    PERFORM sandbox_store_internal._check_record_args($2, $3, $4, $5, $6, $7);
    IF $8 <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg($8);
    END IF;
    RETURN sandbox_store_internal._upsert($1, $8, false, $2, $3, $4, $5, $6, $7);
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_upsert_release(
    key pg_catalog.text,
    fence pg_catalog.int8,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now())
RETURNS sandbox_store.instances
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('fence');
    END IF;
    IF $2 <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg($2);
    END IF;
    PERFORM sandbox_store_internal._check_record_args($3, $4, $5, $6, $7, $8);
    RETURN sandbox_store_internal._upsert($1, $2, true, $3, $4, $5, $6, $7, $8);
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_get(key pg_catalog.text)
RETURNS SETOF sandbox_store.instances
LANGUAGE plpgsql STABLE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    RETURN QUERY SELECT i.* FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) $1;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_delete(
    key pg_catalog.text,
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    deleted boolean;
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg($2);
    END IF;
    IF $2 IS NOT NULL THEN
        PERFORM sandbox_store_internal._lock($1, sandbox_store_internal._lock_id($1));
        PERFORM sandbox_store_internal._check_fence($1, $2);
    ELSE
        PERFORM sandbox_store_internal._take($1, sandbox_store_internal._lock_id($1), NULL, NULL);
    END IF;
    DELETE FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) $1;
    deleted := FOUND;
    IF NOT deleted AND sandbox_store_internal._snapshot_isolation() THEN
        PERFORM sandbox_store_internal._current_record($1);
    END IF;
    RETURN deleted;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_list(thread_id pg_catalog.text)
RETURNS SETOF sandbox_store.instances
LANGUAGE plpgsql STABLE ROWS 4 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text($1, 'thread_id');
    END IF;
    RETURN QUERY SELECT i.* FROM ONLY sandbox_store.instances i
                  WHERE i.thread_id OPERATOR(pg_catalog.=) $1
                  ORDER BY i.updated_at DESC, i.key;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_ensure(
    key pg_catalog.text,
    run_id pg_catalog.text,
    max_age pg_catalog.interval DEFAULT NULL,
    provider pg_catalog.text DEFAULT NULL,
    wait pg_catalog.interval DEFAULT NULL,
    lease pg_catalog.interval DEFAULT NULL)
RETURNS SETOF sandbox_store.ensure_result
LANGUAGE plpgsql VOLATILE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    c record;
    r sandbox_store.instances;
    res sandbox_store.ensure_result;
    cutoff pg_catalog.timestamptz;
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 IS NULL OR octet_length($2) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text($2, 'run_id');
    END IF;
    IF $3 IS NOT NULL THEN
        PERFORM sandbox_store_internal._check_interval($3, 'max_age', false);
        cutoff := sandbox_store_internal._cutoff($3);
    END IF;
    IF octet_length($4) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text($4, 'provider');
    END IF;
    IF $5 IS NOT NULL THEN
        PERFORM sandbox_store_internal._check_interval($5, 'wait', false);
    END IF;
    IF $6 IS NOT NULL THEN
        PERFORM sandbox_store_internal._check_interval($6, 'lease', true);
    END IF;

    c := sandbox_store_internal._take($1, sandbox_store_internal._lock_id($1), $5, $6);

    UPDATE ONLY sandbox_store.instances i
       SET latest_run_id = $2, updated_at = GREATEST(i.updated_at, now())
     WHERE i.key OPERATOR(pg_catalog.=) $1
       AND (cutoff IS NULL OR i.updated_at OPERATOR(pg_catalog.>=) cutoff)
       AND ($4 IS NULL OR i.provider OPERATOR(pg_catalog.=) $4)
    RETURNING i.* INTO r;
    IF FOUND THEN
        res.action := 'resume';
    ELSE
        IF sandbox_store_internal._snapshot_isolation() THEN
            r := sandbox_store_internal._current_record($1);
        ELSE
            SELECT i.* INTO r FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) $1;
        END IF;
        res.action := CASE WHEN r.key IS NULL THEN 'create' ELSE 'recreate' END;
        -- Lock mode in autocommit: the lock ends with the statement.  (A
        -- procedure or DO block holds it until its own COMMIT.)
        IF $6 IS NULL AND transaction_timestamp() OPERATOR(pg_catalog.=) statement_timestamp()
           AND current_query() !~* '^\s*(call|do)\M' THEN
            RAISE WARNING USING
                MESSAGE = format('sandbox_ensure returned "%s" outside a transaction block', res.action),
                DETAIL = 'The lock on the key ends with the statement, so another session may also be told to create a sandbox for it.',
                HINT = 'Call sandbox_ensure after BEGIN (or in a procedure) and upsert the new record before COMMIT, or pass a lease.';
        END IF;
    END IF;
    res.key := r.key;
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
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_lock(
    key pg_catalog.text,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 IS NOT NULL THEN
        PERFORM sandbox_store_internal._check_interval($2, 'wait', false);
    END IF;
    PERFORM sandbox_store_internal._take($1, sandbox_store_internal._lock_id($1), $2, NULL);
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_try_lock(key pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    RETURN sandbox_store_internal._try_take($1, sandbox_store_internal._lock_id($1));
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_lock_id(key pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    RETURN sandbox_store_internal._lock_id($1);
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_claim(
    key pg_catalog.text,
    lease pg_catalog.interval,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS TABLE (
    fence pg_catalog.int8,
    owner_token pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz)
LANGUAGE plpgsql VOLATILE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('lease');
    END IF;
    PERFORM sandbox_store_internal._check_interval($2, 'lease', true);
    IF $3 IS NOT NULL THEN
        PERFORM sandbox_store_internal._check_interval($3, 'wait', false);
    END IF;
    RETURN QUERY SELECT t.fence, t.owner_token, t.lease_expires_at
                   FROM sandbox_store_internal._take($1, sandbox_store_internal._lock_id($1), $3, $2) t;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_renew(
    key pg_catalog.text,
    owner_token pg_catalog.uuid,
    lease pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    expires pg_catalog.timestamptz;
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('owner_token');
    END IF;
    IF $3 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('lease');
    END IF;
    PERFORM sandbox_store_internal._check_interval($3, 'lease', true);
    PERFORM sandbox_store_internal._lock($1, sandbox_store_internal._lock_id($1));
    UPDATE ONLY sandbox_store.leases l
       SET lease_expires_at = (clock_timestamp() AT TIME ZONE 'UTC' + $3) AT TIME ZONE 'UTC'
     WHERE l.key OPERATOR(pg_catalog.=) $1 AND l.owner_token OPERATOR(pg_catalog.=) $2
    RETURNING l.lease_expires_at INTO expires;
    IF NOT FOUND THEN
        PERFORM sandbox_store_internal._claim_lost($1, 'token', 0, 0);
    END IF;
    RETURN expires;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_release(
    key pg_catalog.text,
    owner_token pg_catalog.uuid)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('owner_token');
    END IF;
    PERFORM sandbox_store_internal._lock($1, sandbox_store_internal._lock_id($1));
    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
     WHERE l.key OPERATOR(pg_catalog.=) $1 AND l.owner_token OPERATOR(pg_catalog.=) $2;
    RETURN FOUND;
END
$$;

-- The reaper's candidates, oldest first: a sequential read (there is no
-- index on updated_at), whatever the caller's enable_seqscan.
CREATE OR REPLACE FUNCTION sandbox_store_internal._reap_candidates(cutoff pg_catalog.timestamptz)
RETURNS SETOF pg_catalog.text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = on
AS $$
SELECT i.key FROM ONLY sandbox_store.instances i
 WHERE i.updated_at OPERATOR(pg_catalog.<) cutoff
 ORDER BY i.updated_at, i.key
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_reap(
    idle_for pg_catalog.interval,
    max_rows pg_catalog.int4 DEFAULT 100)
RETURNS SETOF sandbox_store.instances
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    cutoff pg_catalog.timestamptz;
    reaped pg_catalog.int4 := 0;
    candidate pg_catalog.text;
    r sandbox_store.instances;
BEGIN
    IF $1 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('idle_for');
    END IF;
    PERFORM sandbox_store_internal._check_interval($1, 'idle_for', false);
    cutoff := sandbox_store_internal._cutoff($1);
    IF $2 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('max_rows');
    END IF;
    IF $2 <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'max_rows must be positive',
            DETAIL = format('The value given is %s.', $2);
    END IF;
    FOR candidate IN SELECT sandbox_store_internal._reap_candidates(cutoff) LOOP
        EXIT WHEN reaped >= $2;
        CONTINUE WHEN NOT sandbox_store_internal._try_take(candidate, sandbox_store_internal._lock_id(candidate));
        PERFORM FROM ONLY sandbox_store.instances i
          WHERE i.key OPERATOR(pg_catalog.=) candidate AND i.updated_at OPERATOR(pg_catalog.<) cutoff
          FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM ONLY sandbox_store.instances i
         WHERE i.key OPERATOR(pg_catalog.=) candidate AND i.updated_at OPERATOR(pg_catalog.<) cutoff
        RETURNING i.* INTO r;
        IF FOUND THEN
            RETURN NEXT r;
            reaped := reaped + 1;
        END IF;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_lock_holder(key pg_catalog.text)
RETURNS pg_catalog.int4
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    holder pg_catalog.int4;
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION USING ERRCODE = 'read_only_sql_transaction',
            MESSAGE = format('cannot report the holder of sandbox key "%s" on a standby', $1),
            DETAIL = 'The key''s lock is held on the primary, whose locks a standby cannot see.',
            HINT = 'Connect to the primary.';
    END IF;
    SELECT COALESCE(k.pid, 0) INTO holder FROM sandbox_store.key_locks k
     WHERE k.lock_id OPERATOR(pg_catalog.=) sandbox_store_internal._lock_id($1) AND k.granted
     LIMIT 1;
    RETURN holder;
END
$$;

-- The checkpoint store's functions (checkpoint-tables.sql has its tables and
-- how the store works).  The same PL/pgSQL in both editions.

-- The reserved claim key of a thread's checkpoint writer.
CREATE OR REPLACE FUNCTION sandbox_store_internal._writer_key(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT E'\x01checkpoint-writer\x01' OPERATOR(pg_catalog.||) thread_id $$;

-- A checkpoint error (SQLSTATE SBCnn or SB001), message and detail given.
CREATE OR REPLACE FUNCTION sandbox_store_internal._checkpoint_error(state pg_catalog.text, message pg_catalog.text,
                                                detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message, DETAIL = detail;
END
$$;

-- An id argument (checkpoint or thread): a string of 1..max_bytes bytes.
-- (Text in the database is always well-formed Unicode: a JSON string with a
-- lone surrogate escape is refused where the jsonb is read, 22P05, and the
-- client refuses such strings before sending them.)
CREATE OR REPLACE FUNCTION sandbox_store_internal._checkpoint_id(v pg_catalog.text, what pg_catalog.text,
                                             max_bytes pg_catalog.int4)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF v IS NULL OR octet_length(v) NOT BETWEEN 1 AND max_bytes THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC07', format('invalid %s', what),
            format('A %s is a string of 1 to %s bytes; the value given is %s.', what, max_bytes,
                   CASE WHEN v IS NULL THEN 'missing' ELSE octet_length(v) || ' bytes long' END));
    END IF;
END
$$;

-- An entry of a checkpoint that is not as the contract says: SBC08.
CREATE OR REPLACE FUNCTION sandbox_store_internal._invalid_entry(detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'SBC08', MESSAGE = 'invalid checkpoint entry', DETAIL = detail;
END
$$;

-- A checkpoint larger than the setting sandbox_store.max_checkpoint_bytes
-- (0: no limit) is refused with SBC08 before anything else reads it:
-- working on a checkpoint takes many times its size in memory.  size is its
-- jsonb value's size as pg_column_size gives it.  Each edition reads the
-- setting in _max_checkpoint_bytes() (the C edition's library defines it,
-- for superusers; the SQL edition parses the text anyone may set).
CREATE OR REPLACE FUNCTION sandbox_store_internal._checkpoint_size(size pg_catalog.int8, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    max_bytes pg_catalog.int8 := sandbox_store_internal._max_checkpoint_bytes();
BEGIN
    IF max_bytes OPERATOR(pg_catalog.>) 0 AND size OPERATOR(pg_catalog.>) max_bytes THEN
        PERFORM sandbox_store_internal._invalid_entry(
            format('%s is %s bytes; sandbox_store.max_checkpoint_bytes allows at most %s.', what, size, max_bytes));
    END IF;
END
$$;

-- Check a checkpoint before it is stored: its ids (SBC07), then its fields
-- and entries (SBC08).
CREATE OR REPLACE FUNCTION sandbox_store_internal._checkpoint_valid(c pg_catalog.jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    e pg_catalog.jsonb;
    bad pg_catalog.text;
BEGIN
    IF jsonb_typeof(c) IS DISTINCT FROM 'object' THEN
        PERFORM sandbox_store_internal._invalid_entry('A checkpoint is a JSON object.');
    END IF;
    IF jsonb_typeof(c -> 'id') IS DISTINCT FROM 'string' THEN
        PERFORM sandbox_store_internal._checkpoint_id(NULL, 'checkpoint id', 1024);
    END IF;
    PERFORM sandbox_store_internal._checkpoint_id(c ->> 'id', 'checkpoint id', 1024);
    IF jsonb_typeof(c -> 'threadId') IS DISTINCT FROM 'string' THEN
        PERFORM sandbox_store_internal._checkpoint_id(NULL, 'thread id', 1000);
    END IF;
    PERFORM sandbox_store_internal._checkpoint_id(c ->> 'threadId', 'thread id', 1000);
    IF jsonb_typeof(c -> 'parentCheckpointId') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._checkpoint_id(NULL, 'parent checkpoint id', 1024);
    END IF;
    IF jsonb_typeof(c -> 'parentCheckpointId') = 'string' THEN
        PERFORM sandbox_store_internal._checkpoint_id(c ->> 'parentCheckpointId', 'parent checkpoint id', 1024);
    END IF;

    IF (CASE WHEN jsonb_typeof(c -> 'createdAt') IS DISTINCT FROM 'number' THEN true
             -- (written as a whole number: 1.0 is a number with a fraction)
             WHEN c ->> 'createdAt' !~ '^-?[0-9]{1,16}$' THEN true
             ELSE (c ->> 'createdAt')::pg_catalog.int8 NOT BETWEEN -8640000000000000 AND 8640000000000000 END) THEN
        PERFORM sandbox_store_internal._invalid_entry('createdAt is a whole number of milliseconds since 1970-01-01 UTC.');
    END IF;
    IF jsonb_typeof(c -> 'reason') IS DISTINCT FROM 'string'
       OR c ->> 'reason' NOT IN ('automatic', 'named', 'fork-root') THEN
        PERFORM sandbox_store_internal._invalid_entry('reason is "automatic", "named" or "fork-root".');
    END IF;
    IF jsonb_typeof(c -> 'label') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._invalid_entry('label is a string when present.');
    END IF;
    IF jsonb_typeof(c -> 'sourceRunId') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._invalid_entry('sourceRunId is a string when present.');
    END IF;
    IF NOT (c ? 'conversation') THEN
        PERFORM sandbox_store_internal._invalid_entry('conversation is required (the model messages).');
    END IF;

    -- files: {path, kind: 'file', blobKey, size} or {path, kind: 'dir'}.
    -- (Set-based: one pass over the entries, the first bad one reported;
    -- then duplicates and entries beneath a file, by hashing, not pairs.)
    IF jsonb_typeof(c -> 'files') IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._invalid_entry('files is an array.');
    END IF;
    SELECT r INTO bad FROM (
        SELECT i, CASE
            WHEN jsonb_typeof(ent) IS DISTINCT FROM 'object' OR jsonb_typeof(ent -> 'path') IS DISTINCT FROM 'string'
                THEN 'Each file entry is an object with a path.'
            WHEN ent ->> 'path' !~ '^[^/\\]+(/[^/\\]+)*$' OR ent ->> 'path' ~ '(^|/)\.\.?(/|$)'
                 OR ent ->> 'path' ~ '^[A-Za-z]:'
                THEN format('Path %s is not a normalized relative path.', ent -> 'path')
            WHEN ent ->> 'kind' = 'dir' AND (ent ? 'blobKey' OR ent ? 'size')
                THEN format('Directory %s has a blob key or a size; only files have them.', ent -> 'path')
            WHEN ent ->> 'kind' = 'file' AND (jsonb_typeof(ent -> 'blobKey') IS DISTINCT FROM 'string'
                                         OR ent ->> 'blobKey' !~ '^sandbox-files/sha256/[0-9a-f]{64}$')
                THEN format('The blob key of file %s is not sandbox-files/sha256/ and 64 lowercase hex digits.', ent -> 'path')
            WHEN ent ->> 'kind' = 'file'
                 AND (jsonb_typeof(ent -> 'size') IS DISTINCT FROM 'number'
                      OR CASE WHEN ent ->> 'size' ~ '^[0-9]{1,16}$'
                              THEN (ent ->> 'size')::pg_catalog.int8 > 9007199254740991 ELSE true END)
                THEN format('The size of file %s is not a whole number of bytes.', ent -> 'path')
            WHEN ent ->> 'kind' IS DISTINCT FROM 'file' AND ent ->> 'kind' IS DISTINCT FROM 'dir'
                THEN format('Entry %s has kind %s; a kind is "file" or "dir".', ent -> 'path', COALESCE(ent -> 'kind', 'null'))
            END AS r
          FROM jsonb_array_elements(c -> 'files') WITH ORDINALITY x(ent, i)) s
     WHERE r IS NOT NULL ORDER BY i LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._invalid_entry(bad);
    END IF;
    SELECT f ->> 'path' INTO bad FROM jsonb_array_elements(c -> 'files') f
     GROUP BY f ->> 'path' HAVING count(*) > 1 LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._invalid_entry(format('Path %s is listed more than once.', to_jsonb(bad)));
    END IF;
    -- An entry beneath a file: ordered by path || '/' as bytes, everything
    -- beneath an entry comes right after it, so a file is followed by an
    -- entry beneath it exactly when any entry is beneath it.
    SELECT s.next_path INTO bad FROM (
        SELECT ent ->> 'kind' AS kind, (ent ->> 'path') || '/' AS prefix,
               lead(ent ->> 'path') OVER (ORDER BY ((ent ->> 'path') || '/') COLLATE "C") AS next_path
          FROM jsonb_array_elements(c -> 'files') ent) s
     WHERE s.kind = 'file' AND starts_with(s.next_path, s.prefix) LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._invalid_entry(format('Path %s is beneath a file.', to_jsonb(bad)));
    END IF;

    -- artifacts: {artifactId, name, mimeType, size, blobKey, createdAt}.
    IF jsonb_typeof(c -> 'artifacts') IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._invalid_entry('artifacts is an array.');
    END IF;
    FOR e IN SELECT * FROM jsonb_array_elements(c -> 'artifacts') LOOP
        IF jsonb_typeof(e) IS DISTINCT FROM 'object'
           OR jsonb_typeof(e -> 'artifactId') IS DISTINCT FROM 'string' OR e ->> 'artifactId' = ''
           OR jsonb_typeof(e -> 'name') IS DISTINCT FROM 'string' OR e ->> 'name' = ''
           OR jsonb_typeof(e -> 'mimeType') IS DISTINCT FROM 'string' OR e ->> 'mimeType' = ''
           OR e ->> 'size' !~ '^[0-9]{1,16}$'
           OR jsonb_typeof(e -> 'size') IS DISTINCT FROM 'number'
           OR jsonb_typeof(e -> 'createdAt') IS DISTINCT FROM 'number' THEN
            PERFORM sandbox_store_internal._invalid_entry('Each artifact has artifactId, name, mimeType, size, blobKey and createdAt.');
        END IF;
        IF jsonb_typeof(e -> 'blobKey') IS DISTINCT FROM 'string'
           OR e ->> 'blobKey' !~ '^sandbox-artifacts/.' THEN
            PERFORM sandbox_store_internal._invalid_entry(format('The blob key of artifact %s is not under sandbox-artifacts/.', e -> 'artifactId'));
        END IF;
        -- (a key of checkpoint_blobs: short enough for its index)
        IF octet_length(e ->> 'blobKey') > 1024 THEN
            PERFORM sandbox_store_internal._invalid_entry(format('The blob key of artifact %s has %s bytes; at most 1024 are allowed.',
                                                        e -> 'artifactId', octet_length(e ->> 'blobKey')));
        END IF;
    END LOOP;
END
$$;

-- The blob keys a checkpoint points to, each once.
CREATE OR REPLACE FUNCTION sandbox_store_internal._checkpoint_blob_keys(c pg_catalog.jsonb)
RETURNS SETOF pg_catalog.text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT DISTINCT k FROM (
    SELECT f ->> 'blobKey' FROM jsonb_array_elements(c -> 'files') f WHERE f ->> 'kind' = 'file'
    UNION ALL
    SELECT a ->> 'blobKey' FROM jsonb_array_elements(c -> 'artifacts') a
) s(k)
$$;

-- The blobs of a checkpoint that is stored (+1) or deleted (-1).
CREATE OR REPLACE FUNCTION sandbox_store_internal._checkpoint_refs(c pg_catalog.jsonb, delta pg_catalog.int4)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF delta > 0 THEN
        INSERT INTO sandbox_store.checkpoint_blobs AS b (key, refcount)
        SELECT k, 1 FROM sandbox_store_internal._checkpoint_blob_keys(c) k ORDER BY k COLLATE "C"
        ON CONFLICT ON CONSTRAINT checkpoint_blobs_pkey DO UPDATE SET refcount = b.refcount + 1;
    ELSE
        -- (rows locked in key order, as the insert above takes them)
        PERFORM FROM sandbox_store.checkpoint_blobs b
          WHERE b.key IN (SELECT sandbox_store_internal._checkpoint_blob_keys(c))
          ORDER BY b.key COLLATE "C" FOR UPDATE;
        DELETE FROM sandbox_store.checkpoint_blobs b
         WHERE b.key IN (SELECT sandbox_store_internal._checkpoint_blob_keys(c)) AND b.refcount = 1;
        UPDATE sandbox_store.checkpoint_blobs b SET refcount = b.refcount - 1
         WHERE b.key IN (SELECT sandbox_store_internal._checkpoint_blob_keys(c));
    END IF;
END
$$;

-- The writer check of every write: writer_thread_id's lease row, locked,
-- must hold owner_token and fence, unexpired at now, and be the writer of
-- thread_id.  SB001 otherwise.
CREATE OR REPLACE FUNCTION sandbox_store_internal._check_writer(thread_id pg_catalog.text, writer_thread_id pg_catalog.text,
                                            owner_token pg_catalog.uuid, fence pg_catalog.int8,
                                            now pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record;
BEGIN
    IF writer_thread_id IS DISTINCT FROM thread_id THEN
        PERFORM sandbox_store_internal._checkpoint_error('SB001', format('the checkpoint writer of thread %s was lost', to_jsonb(thread_id)),
            format('The writer given holds thread %s, not this one.  Nothing was changed.', to_jsonb(writer_thread_id)));
    END IF;
    SELECT s.owner_token, s.fence, s.lease_expires_at INTO l
      FROM ONLY sandbox_store.leases s
     WHERE s.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key(thread_id)
       FOR UPDATE;
    IF l.owner_token IS NULL OR l.owner_token IS DISTINCT FROM $3
       OR l.fence IS DISTINCT FROM $4 OR l.lease_expires_at OPERATOR(pg_catalog.<=) now THEN
        PERFORM sandbox_store_internal._checkpoint_error('SB001', format('the checkpoint writer of thread %s was lost', to_jsonb(thread_id)),
            CASE WHEN l.owner_token IS NULL THEN 'The thread has no writer: it was released or never taken.  Nothing was changed.'
                 WHEN l.owner_token IS DISTINCT FROM $3 OR l.fence IS DISTINCT FROM $4
                 THEN format('The thread''s writer has fence %s now: the lease was taken over.  Nothing was changed.', l.fence)
                 ELSE format('The writer''s lease expired at %s.  Nothing was changed.', l.lease_expires_at) END);
    END IF;
END
$$;

-- The interface.

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_acquire_writer(
    thread_id pg_catalog.text,
    lease_ms pg_catalog.int8 DEFAULT 120000,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS TABLE (fence pg_catalog.int8, owner_token pg_catalog.uuid, expires_at pg_catalog.timestamptz)
LANGUAGE plpgsql VOLATILE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    k pg_catalog.text;
    now pg_catalog.timestamptz := COALESCE($3, clock_timestamp());
    cur record;
BEGIN
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    IF $2 IS NULL OR $2 <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms must be positive', DETAIL = format('The value given is %s.', $2);
    END IF;
    IF $3 IS NOT NULL AND NOT isfinite($3) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', $3);
    END IF;
    IF $2 / 1000.0 >= 9223372036854 OR extract(epoch FROM now) + $2 / 1000.0 >= 9224318015999 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms is too long',
            DETAIL = 'now + lease_ms would be past the latest timestamp PostgreSQL has.';
    END IF;
    k := sandbox_store_internal._writer_key($1);
    -- Never wait: the writer's lease row is locked at once, or another
    -- transaction is acquiring, renewing, releasing or writing with it and
    -- has not ended (SBC05, whatever it does next).  A thread without a
    -- lease row yet: its first acquirers also take the writer key's lock
    -- (_try_writer_lock, until the transaction ends), at once or not at
    -- all, so that none waits for another's insert of the row.
    BEGIN
        SELECT l.fence, l.owner_token, l.lease_expires_at INTO cur
          FROM ONLY sandbox_store.leases l WHERE l.key OPERATOR(pg_catalog.=) k FOR UPDATE NOWAIT;
        IF NOT FOUND THEN
            IF NOT sandbox_store_internal._try_writer_lock(k) THEN
                RAISE EXCEPTION USING ERRCODE = 'lock_not_available';
            END IF;
            -- (a row committed since the first look)
            SELECT l.fence, l.owner_token, l.lease_expires_at INTO cur
              FROM ONLY sandbox_store.leases l WHERE l.key OPERATOR(pg_catalog.=) k FOR UPDATE NOWAIT;
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC05', format('thread %s has a checkpoint writer', to_jsonb($1)),
            'Another transaction is acquiring, renewing, releasing or writing with the thread''s writer and has not ended.');
    END;
    IF cur.owner_token IS NOT NULL AND cur.lease_expires_at > now THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC05', format('thread %s has a checkpoint writer', to_jsonb($1)),
            format('Its lease (fence %s) runs until %s.', cur.fence, cur.lease_expires_at));
    END IF;
    INSERT INTO sandbox_store.leases AS l (key, fence, owner_token, lease_expires_at)
    VALUES (k, sandbox_store_internal._draw_claim_fence(COALESCE(cur.fence, 0)), gen_random_uuid(),
            now + make_interval(secs => $2 / 1000.0))
    ON CONFLICT ON CONSTRAINT leases_pkey DO UPDATE
       -- (a row another transaction inserted meanwhile may already have a
       -- fence above the one drawn: then one above it, never a lower one)
       SET fence = CASE WHEN EXCLUDED.fence OPERATOR(pg_catalog.>) l.fence THEN EXCLUDED.fence
                        ELSE sandbox_store_internal._draw_claim_fence(l.fence) END,
           owner_token = EXCLUDED.owner_token,
           lease_expires_at = EXCLUDED.lease_expires_at
     WHERE l.owner_token IS NULL OR l.lease_expires_at OPERATOR(pg_catalog.<=) now
    RETURNING l.fence, l.owner_token, l.lease_expires_at INTO fence, owner_token, expires_at;
    IF NOT FOUND THEN
        -- Another writer took the thread's first lease meanwhile.
        PERFORM sandbox_store_internal._checkpoint_error('SBC05', format('thread %s has a checkpoint writer', to_jsonb($1)),
            'Another writer took the lease at the same time.');
    END IF;
    RETURN NEXT;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_renew_writer(
    thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    lease_ms pg_catalog.int8 DEFAULT 120000,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    now pg_catalog.timestamptz := COALESCE($5, clock_timestamp());
    expires pg_catalog.timestamptz;
BEGIN
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    IF $4 IS NULL OR $4 <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms must be positive', DETAIL = format('The value given is %s.', $4);
    END IF;
    IF $5 IS NOT NULL AND NOT isfinite($5) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', $5);
    END IF;
    IF $4 / 1000.0 >= 9223372036854 OR extract(epoch FROM now) + $4 / 1000.0 >= 9224318015999 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms is too long',
            DETAIL = 'now + lease_ms would be past the latest timestamp PostgreSQL has.';
    END IF;
    PERFORM sandbox_store_internal._check_writer($1, $1, $2, $3, now);
    UPDATE ONLY sandbox_store.leases l SET lease_expires_at = now + make_interval(secs => $4 / 1000.0)
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key($1)
    RETURNING l.lease_expires_at INTO expires;
    RETURN expires;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_release_writer(
    thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key($1)
       AND l.owner_token OPERATOR(pg_catalog.=) $2 AND l.fence OPERATOR(pg_catalog.=) $3;
    RETURN FOUND;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_append(
    checkpoint pg_catalog.jsonb,
    expected_head_id pg_catalog.text,
    writer_thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_id pg_catalog.text := $1 ->> 'id';
    v_thread pg_catalog.text := $1 ->> 'threadId';
    v_parent pg_catalog.text := $1 ->> 'parentCheckpointId';
    v_head pg_catalog.text;
BEGIN
    IF $6 IS NOT NULL AND NOT isfinite($6) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', $6);
    END IF;
    PERFORM sandbox_store_internal._checkpoint_size(pg_column_size($1), 'The checkpoint');
    PERFORM sandbox_store_internal._checkpoint_valid($1);
    PERFORM sandbox_store_internal._check_writer(v_thread, $3, $4, $5, COALESCE($6, clock_timestamp()));
    IF EXISTS (SELECT FROM sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) v_id) THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC03', format('checkpoint %s already exists', to_jsonb(v_id)),
            'Checkpoints are immutable: an id is appended once.');
    END IF;
    SELECT h.head_id INTO v_head FROM sandbox_store.checkpoint_heads h
     WHERE h.thread_id OPERATOR(pg_catalog.=) v_thread FOR UPDATE;
    IF v_head IS DISTINCT FROM $2 THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC01', format('the head of thread %s is not the expected one', to_jsonb(v_thread)),
            format('The head is %s; the append expected %s.', COALESCE(to_jsonb(v_head), 'null'), COALESCE(to_jsonb($2), 'null')));
    END IF;
    IF v_parent IS DISTINCT FROM $2 THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC02', format('the parent of checkpoint %s is not the head', to_jsonb(v_id)),
            format('Its parent is %s; the head is %s.', COALESCE(to_jsonb(v_parent), 'null'), COALESCE(to_jsonb($2), 'null')));
    END IF;
    BEGIN
        INSERT INTO sandbox_store.checkpoints (id, thread_id, parent_id, created_at, checkpoint)
        VALUES (v_id, v_thread, v_parent, ($1 ->> 'createdAt')::pg_catalog.int8, $1);
    EXCEPTION WHEN unique_violation THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC03', format('checkpoint %s already exists', to_jsonb(v_id)),
            'Checkpoints are immutable: an id is appended once.');
    END;
    INSERT INTO sandbox_store.checkpoint_heads AS h (thread_id, head_id) VALUES (v_thread, v_id)
    ON CONFLICT ON CONSTRAINT checkpoint_heads_pkey DO UPDATE SET head_id = EXCLUDED.head_id;
    PERFORM sandbox_store_internal._checkpoint_refs($1, 1);
    RETURN v_id;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_delete_head(
    thread_id pg_catalog.text,
    checkpoint_id pg_catalog.text,
    writer_thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    head pg_catalog.text;
    gone record;
BEGIN
    IF $6 IS NOT NULL AND NOT isfinite($6) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', $6);
    END IF;
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    PERFORM sandbox_store_internal._checkpoint_id($2, 'checkpoint id', 1024);
    PERFORM sandbox_store_internal._check_writer($1, $3, $4, $5, COALESCE($6, clock_timestamp()));
    SELECT h.head_id INTO head FROM sandbox_store.checkpoint_heads h
     WHERE h.thread_id OPERATOR(pg_catalog.=) $1 FOR UPDATE;
    IF head IS DISTINCT FROM $2 THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC04', format('checkpoint %s is not the head of thread %s', to_jsonb($2), to_jsonb($1)),
            format('The head is %s.', COALESCE(to_jsonb(head), 'null')));
    END IF;
    DELETE FROM sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) $2
    RETURNING c.parent_id, c.checkpoint INTO gone;
    IF gone.parent_id IS NULL THEN
        DELETE FROM sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) $1;
    ELSE
        UPDATE sandbox_store.checkpoint_heads h SET head_id = gone.parent_id
         WHERE h.thread_id OPERATOR(pg_catalog.=) $1;
    END IF;
    PERFORM sandbox_store_internal._checkpoint_refs(gone.checkpoint, -1);
    RETURN gone.parent_id;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_fork(
    source_thread_id pg_catalog.text,
    source_checkpoint_id pg_catalog.text,
    destination_thread_id pg_catalog.text,
    destination_checkpoint_id pg_catalog.text,
    created_at pg_catalog.int8,
    writer_thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_source pg_catalog.jsonb;
    v_copy pg_catalog.jsonb;
BEGIN
    IF $9 IS NOT NULL AND NOT isfinite($9) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', $9);
    END IF;
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    PERFORM sandbox_store_internal._checkpoint_id($2, 'checkpoint id', 1024);
    PERFORM sandbox_store_internal._checkpoint_id($3, 'thread id', 1000);
    PERFORM sandbox_store_internal._checkpoint_id($4, 'checkpoint id', 1024);
    IF $5 IS NULL OR $5 NOT BETWEEN -8640000000000000 AND 8640000000000000 THEN
        PERFORM sandbox_store_internal._invalid_entry('createdAt is a whole number of milliseconds since 1970-01-01 UTC.');
    END IF;
    PERFORM sandbox_store_internal._check_writer($3, $6, $7, $8, COALESCE($9, clock_timestamp()));
    IF $1 OPERATOR(pg_catalog.=) $3 THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC11', format('a fork of thread %s cannot go to the same thread', to_jsonb($1)),
            'A fork makes the first checkpoint of another thread.');
    END IF;
    -- (its stored size, read before the checkpoint itself)
    PERFORM sandbox_store_internal._checkpoint_size(pg_column_size(c.checkpoint), 'The source checkpoint')
       FROM sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) $2;
    SELECT c.checkpoint INTO v_source FROM sandbox_store.checkpoints c
     WHERE c.id OPERATOR(pg_catalog.=) $2;
    IF v_source IS NULL THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC09', format('checkpoint %s does not exist', to_jsonb($2)),
            'A fork copies a stored checkpoint.');
    END IF;
    IF v_source ->> 'threadId' IS DISTINCT FROM $1 THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC11', format('checkpoint %s is not a checkpoint of thread %s', to_jsonb($2), to_jsonb($1)),
            format('It belongs to thread %s.', v_source -> 'threadId'));
    END IF;
    IF EXISTS (SELECT FROM sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) $3)
       OR EXISTS (SELECT FROM sandbox_store.checkpoints c WHERE c.thread_id OPERATOR(pg_catalog.=) $3) THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC10', format('thread %s already has checkpoints', to_jsonb($3)),
            'A fork makes the first checkpoint of an empty thread.');
    END IF;
    -- The fork root: the source's files, conversation and artifacts, and
    -- nothing of its save (label, sourceRunId).
    v_copy := jsonb_build_object('id', $4, 'threadId', $3, 'parentCheckpointId', NULL,
                                 'createdAt', $5, 'reason', 'fork-root',
                                 'files', v_source -> 'files', 'conversation', v_source -> 'conversation',
                                 'artifacts', v_source -> 'artifacts');
    BEGIN
        INSERT INTO sandbox_store.checkpoints (id, thread_id, parent_id, created_at, checkpoint)
        VALUES ($4, $3, NULL, $5, v_copy);
    EXCEPTION WHEN unique_violation THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC03', format('checkpoint %s already exists', to_jsonb($4)),
            'Checkpoints are immutable: an id is appended once.');
    END;
    INSERT INTO sandbox_store.checkpoint_heads (thread_id, head_id) VALUES ($3, $4);
    PERFORM sandbox_store_internal._checkpoint_refs(v_copy, 1);
    RETURN v_copy;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_get(id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._checkpoint_id($1, 'checkpoint id', 1024);
    RETURN (SELECT c.checkpoint FROM sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) $1);
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_list(thread_id pg_catalog.text)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    RETURN QUERY SELECT c.checkpoint FROM sandbox_store.checkpoints c
                  WHERE c.thread_id OPERATOR(pg_catalog.=) $1
                  ORDER BY c.created_at, c.id COLLATE "C";
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_head(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    RETURN (SELECT h.head_id FROM sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) $1);
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_blob_references()
RETURNS TABLE (key pg_catalog.text, refs pg_catalog.int8)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
SELECT b.key, b.refcount FROM sandbox_store.checkpoint_blobs b ORDER BY b.key COLLATE "C"
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_acquire_writer(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz) IS
'Take the single checkpoint writer of a thread for lease_ms, without waiting: a claim (fence, owner_token, expires_at) on the thread''s reserved key, its fence above every fence the thread had. SBC05 if another unexpired writer holds it, or another transaction holds the writer at the moment.';
COMMENT ON FUNCTION sandbox_store.checkpoint_renew_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.int8, pg_catalog.timestamptz) IS
'Extend the thread''s writer to now + lease_ms while it is still the current, unexpired writer; SB001 otherwise.';
COMMENT ON FUNCTION sandbox_store.checkpoint_release_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8) IS
'End the thread''s writer if owner_token and fence still hold it: true if they did (a stale writer never ends its successor).';
COMMENT ON FUNCTION sandbox_store.checkpoint_append(pg_catalog.jsonb, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Append a checkpoint as the thread''s new head, in one call that checks the writer and the head together: SBC07/SBC08 invalid, SB001 writer lost, SBC03 duplicate id, SBC01 stale head, SBC02 parent mismatch. Returns the new head id.';
COMMENT ON FUNCTION sandbox_store.checkpoint_delete_head(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Delete the thread''s head checkpoint (SBC04 if checkpoint_id is not the head); the head moves to its parent and its blob references drop. Returns the new head id or NULL.';
COMMENT ON FUNCTION sandbox_store.checkpoint_fork(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Copy a stored checkpoint as the fork-root (no parent) of an empty thread, atomically, under the destination''s writer, and return the copy; SBC09 if the source does not exist, SBC11 if it is not of the source thread (or the threads are the same), SBC10 if the destination has checkpoints.';
COMMENT ON FUNCTION sandbox_store.checkpoint_get(pg_catalog.text) IS
'The checkpoint with this id, as appended, or NULL.';
COMMENT ON FUNCTION sandbox_store.checkpoint_list(pg_catalog.text) IS
'The checkpoints of a thread, by createdAt, then id as UTF-8 bytes.';
COMMENT ON FUNCTION sandbox_store.checkpoint_head(pg_catalog.text) IS
'The head checkpoint id of a thread, or NULL.';
COMMENT ON FUNCTION sandbox_store.checkpoint_blob_references() IS
'Every blob key a stored checkpoint points to, with the number of checkpoints that point to it, by key as UTF-8 bytes.';

-- Which edition of sandbox_store this database has, and its version: c (the
-- C edition, CREATE EXTENSION with the library), pg_tle (the SQL edition
-- registered with pg_tle, then CREATE EXTENSION) or plain (the SQL edition's
-- plain script, run with psql).
CREATE OR REPLACE FUNCTION sandbox_store.edition(OUT edition pg_catalog.text, OUT version pg_catalog.text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE WHEN l.lanname OPERATOR(pg_catalog.=) 'c' THEN 'c'
            WHEN e.oid IS NOT NULL THEN 'pg_tle'
            ELSE 'plain' END,
       COALESCE(e.extversion, '1.4.1')
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
  LEFT JOIN pg_catalog.pg_extension e ON e.extname OPERATOR(pg_catalog.=) 'sandbox_store'
 WHERE p.oid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure('sandbox_store.sandbox_get(pg_catalog.text)')
$$;

COMMENT ON FUNCTION sandbox_store.edition() IS
'Which edition of sandbox_store this database has (c, pg_tle or plain) and its version.';

-- On citus: distribute both tables by key, colocated, and send every
-- single-key function to the node that holds the key's shard.  Run once, on
-- the coordinator, as a superuser; running it again changes nothing.
CREATE OR REPLACE FUNCTION sandbox_store.distribute()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn pg_catalog.regprocedure;
    failed pg_catalog.text;
    key_to_text constant pg_catalog.text :=
        'ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE pg_catalog.text,'
        ' ADD CONSTRAINT instances_key_length'
        ' CHECK (pg_catalog.octet_length(key) OPERATOR(pg_catalog.>=) 1'
        ' AND pg_catalog.octet_length(key) OPERATOR(pg_catalog.<=) 1024)';
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'feature_not_supported',
            MESSAGE = 'citus is not installed in this database',
            DETAIL = 'sandbox_store.distribute() distributes the tables of sandbox_store with citus.',
            HINT = 'Put citus in shared_preload_libraries on every node, run CREATE EXTENSION citus and add the workers, then call it again.';
    END IF;
    IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) CURRENT_USER) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = 'permission denied to distribute the tables of sandbox_store',
            DETAIL = 'Only a superuser may distribute them.',
            HINT = 'Run sandbox_store.distribute() as a superuser, on the coordinator.';
    END IF;
    -- citus cannot prune shards by a domain-typed key (it coerces the key
    -- to the column's type as a constant, which a domain's check is not), so
    -- instances.key goes back from bounded_text to text with the same
    -- 1..1024-byte check, on every node (each has the extension's tables).
    -- No rewrite: the types are binary-compatible.  citus's functions are
    -- called by name at run time: this extension does not depend on citus.
    IF (SELECT atttypid FROM pg_catalog.pg_attribute
         WHERE attrelid OPERATOR(pg_catalog.=) 'sandbox_store.instances'::pg_catalog.regclass
           AND attname OPERATOR(pg_catalog.=) 'key') OPERATOR(pg_catalog.<>) 'pg_catalog.text'::pg_catalog.regtype THEN
        EXECUTE key_to_text;
        SELECT pg_catalog.string_agg(r.nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) r.nodeport
                                     OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) r.result, '; ')
          INTO failed
          FROM pg_catalog.run_command_on_workers(key_to_text) r WHERE NOT r.success;
        IF failed IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = 'could not change sandbox_store.instances.key to text on every worker',
                DETAIL = failed,
                HINT = 'Install sandbox_store on every worker (CREATE EXTENSION on the coordinator after adding them does that), then call it again.';
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid OPERATOR(pg_catalog.=) 'sandbox_store.instances'::pg_catalog.regclass) THEN
        PERFORM pg_catalog.create_distributed_table('sandbox_store.instances', 'key');
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid OPERATOR(pg_catalog.=) 'sandbox_store.leases'::pg_catalog.regclass) THEN
        PERFORM pg_catalog.create_distributed_table('sandbox_store.leases', 'key',
                                                    colocate_with => 'sandbox_store.instances');
    END IF;
    FOREACH fn IN ARRAY ARRAY[
        'sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8)',
        'sandbox_store.sandbox_upsert_release(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz)',
        'sandbox_store.sandbox_get(pg_catalog.text)',
        'sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8)',
        'sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval)',
        'sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval)',
        'sandbox_store.sandbox_try_lock(pg_catalog.text)',
        'sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval)',
        'sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval)',
        'sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid)',
        'sandbox_store.sandbox_lock_holder(pg_catalog.text)']::pg_catalog.regprocedure[]
    LOOP
        PERFORM pg_catalog.create_distributed_function(fn, 'key', colocate_with => 'sandbox_store.instances',
                                                       force_delegation => true);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sandbox_store.distribute() IS
'On citus: distribute instances and leases by key, colocated, and run every single-key function on the node holding the key''s shard. Once, on the coordinator, as a superuser; idempotent.';

-- The guard (1.4).  pg_dump writes only the data and grants of the
-- extension's tables; a restore makes the tables with CREATE EXTENSION, as
-- this script does.  A column an admin added, dropped, renamed or retyped,
-- or a relation renamed or moved, would make the restore's COPY fail and
-- lose every record (a plain psql restore even exits 0).  So such changes
-- are refused: the event trigger sandbox_store_guard checks the relations
-- after every ALTER that touched one of them (or a parent it inherits
-- from), and rolls the change back.  Commands run by the extension's own
-- scripts pass (in_extension), and so does distribute()'s retype of
-- instances.key to text, which the check allows.

-- What differs in the extension's relations from what its scripts made:
-- one line per difference, none when they are as made.  Members are found
-- through pg_depend, never by name alone.  Constraints, indexes, defaults,
-- statistics targets, storage parameters and comments are not compared.
CREATE OR REPLACE FUNCTION sandbox_store.unsupported_changes()
RETURNS SETOF pg_catalog.text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
WITH ext AS (
    SELECT e.oid, e.extnamespace
      FROM pg_catalog.pg_extension e
     WHERE e.extname OPERATOR(pg_catalog.=) 'sandbox_store'
), members AS (
    SELECT c.oid, c.relname, c.relkind, c.relnamespace OPERATOR(pg_catalog.=) ext.extnamespace AS in_schema
      FROM ext
      JOIN pg_catalog.pg_depend d
        ON d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
       AND d.refobjid OPERATOR(pg_catalog.=) ext.oid
       AND d.deptype OPERATOR(pg_catalog.=) 'e'
       AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
     WHERE c.relkind OPERATOR(pg_catalog.<>) 'c'
    UNION ALL
    -- The plain script's relations are no extension's members: those of
    -- its schema are.
    SELECT c.oid, c.relname, c.relkind, true
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE NOT EXISTS (SELECT FROM ext)
       AND n.nspname OPERATOR(pg_catalog.=) 'sandbox_store'
       AND c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p', 'v', 'm', 'S', 'f']::pg_catalog."char"[])
), relations (relname, relkind) AS (
    VALUES ('instances'::pg_catalog.name, 'r'::pg_catalog."char"),
           ('leases', 'r'),
           ('fence_seq', 'S'),
           ('claims', 'v'),
           ('key_locks', 'v'),
           ('checkpoints', 'r'),
           ('checkpoint_heads', 'r'),
           ('checkpoint_blobs', 'r')
), columns (relname, attname, types, not_null, collated) AS (
    VALUES
    ('instances'::pg_catalog.name, 'key'::pg_catalog.name,
     -- distribute() makes it text for citus
     ARRAY['sandbox_store.bounded_text', 'pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('instances', 'provider', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], true, true),
    ('instances', 'provider_sandbox_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], true, true),
    ('instances', 'latest_snapshot_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], false, true),
    ('instances', 'thread_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], true, true),
    ('instances', 'latest_run_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], false, true),
    ('instances', 'updated_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], true, false),
    ('leases', 'key', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('leases', 'fence', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('leases', 'owner_token', ARRAY['pg_catalog.uuid']::pg_catalog.regtype[], false, false),
    ('leases', 'lease_expires_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('claims', 'key', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, true),
    ('claims', 'fence', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], false, false),
    ('claims', 'owner_token', ARRAY['pg_catalog.uuid']::pg_catalog.regtype[], false, false),
    ('claims', 'lease_expires_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('key_locks', 'pid', ARRAY['pg_catalog.int4']::pg_catalog.regtype[], false, false),
    ('key_locks', 'granted', ARRAY['pg_catalog.bool']::pg_catalog.regtype[], false, false),
    ('key_locks', 'lock_id', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], false, false),
    ('key_locks', 'mode', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, false),
    ('key_locks', 'virtualtransaction', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, false),
    ('key_locks', 'waitstart', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('checkpoints', 'id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoints', 'thread_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoints', 'parent_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, true),
    ('checkpoints', 'created_at', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('checkpoints', 'checkpoint', ARRAY['pg_catalog.jsonb']::pg_catalog.regtype[], true, false),
    ('checkpoint_heads', 'thread_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoint_heads', 'head_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoint_blobs', 'key', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoint_blobs', 'refcount', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false)
), found AS (
    SELECT r.relname, r.relkind, m.oid
      FROM relations r
      JOIN members m ON m.relname OPERATOR(pg_catalog.=) r.relname
                    AND m.relkind OPERATOR(pg_catalog.=) r.relkind
                    AND m.in_schema
), actual AS (
    SELECT f.relname, a.attname, a.atttypid, a.attnotnull, a.attcollation
      FROM found f
      JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) f.oid
     WHERE a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
       AND f.relkind OPERATOR(pg_catalog.<>) 'S'
)
SELECT pg_catalog.format('relation sandbox_store.%s is missing (renamed, moved to another schema, or taken out of the extension)',
                         r.relname)
  FROM relations r
 WHERE NOT EXISTS (SELECT FROM found f WHERE f.relname OPERATOR(pg_catalog.=) r.relname)
UNION ALL
SELECT pg_catalog.format('relation %s of the extension has a name or schema the extension did not give it',
                         m.oid::pg_catalog.regclass)
  FROM members m
 WHERE NOT EXISTS (SELECT FROM found f WHERE f.oid OPERATOR(pg_catalog.=) m.oid)
UNION ALL
SELECT pg_catalog.format('sandbox_store.%s inherits from %s', f.relname, i.inhparent::pg_catalog.regclass)
  FROM found f
  JOIN pg_catalog.pg_inherits i ON i.inhrelid OPERATOR(pg_catalog.=) f.oid
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s was added or renamed', a.attname, a.relname)
  FROM actual a
 WHERE NOT EXISTS (SELECT FROM columns c
                    WHERE c.relname OPERATOR(pg_catalog.=) a.relname
                      AND c.attname OPERATOR(pg_catalog.=) a.attname)
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s was dropped or renamed', c.attname, c.relname)
  FROM columns c
 WHERE EXISTS (SELECT FROM found f WHERE f.relname OPERATOR(pg_catalog.=) c.relname)
   AND NOT EXISTS (SELECT FROM actual a
                    WHERE a.relname OPERATOR(pg_catalog.=) c.relname
                      AND a.attname OPERATOR(pg_catalog.=) c.attname)
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s has type %s instead of %s',
                         c.attname, c.relname, a.atttypid::pg_catalog.regtype, c.types[1])
  FROM columns c
  JOIN actual a ON a.relname OPERATOR(pg_catalog.=) c.relname AND a.attname OPERATOR(pg_catalog.=) c.attname
 WHERE NOT a.atttypid::pg_catalog.regtype OPERATOR(pg_catalog.=) ANY (c.types)
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s has collation %s instead of the default',
                         c.attname, c.relname, a.attcollation::pg_catalog.regcollation)
  FROM columns c
  JOIN actual a ON a.relname OPERATOR(pg_catalog.=) c.relname AND a.attname OPERATOR(pg_catalog.=) c.attname
 WHERE c.collated
   AND a.atttypid::pg_catalog.regtype OPERATOR(pg_catalog.=) ANY (c.types)
   AND a.attcollation OPERATOR(pg_catalog.<>) 'pg_catalog.default'::pg_catalog.regcollation
UNION ALL
SELECT pg_catalog.format(CASE WHEN c.not_null THEN 'column %I of sandbox_store.%s is no longer NOT NULL'
                              ELSE 'column %I of sandbox_store.%s was made NOT NULL' END,
                         c.attname, c.relname)
  FROM columns c
  JOIN actual a ON a.relname OPERATOR(pg_catalog.=) c.relname AND a.attname OPERATOR(pg_catalog.=) c.attname
 WHERE c.relname OPERATOR(pg_catalog.<>) ALL (ARRAY['claims', 'key_locks']::pg_catalog.name[])
   AND a.attnotnull OPERATOR(pg_catalog.<>) c.not_null
$$;

COMMENT ON FUNCTION sandbox_store.unsupported_changes() IS
'What differs in the relations of sandbox_store from what the extension made (columns, their types, collations and NOT NULL, relation names, schema, inheritance), one line per difference; none when they are as made. pg_dump cannot carry such changes.';

-- Comments of the interface functions (both editions).

COMMENT ON FUNCTION sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8) IS
'Insert or fully replace the record of key; optional fields passed as NULL (or omitted) clear what was stored. With fence: refused (SB001, nothing changed) if the key has been claimed with a newer fence. Returns the stored record.';

COMMENT ON FUNCTION sandbox_store.sandbox_upsert_release(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz) IS
'The claim holder''s last write: sandbox_upsert with fence, which also ends the claim the fence was given with, in the same transaction. Refused (SB001, nothing changed) if the key has been claimed with a newer fence. Returns the stored record.';

COMMENT ON FUNCTION sandbox_store.sandbox_get(pg_catalog.text) IS
'The record of key: one row, or none when there is no record.';

COMMENT ON FUNCTION sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8) IS
'Delete the record of key under the key''s lock (waits for an ensure or a claim in flight). With fence: the claim holder''s delete, refused (SB001) if the key has been claimed with a newer fence. True if a record was removed, false if there was none.';

COMMENT ON FUNCTION sandbox_store.sandbox_list(pg_catalog.text) IS
'The records of a thread, most recently updated first.';

COMMENT ON FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take the key (wait: NULL = as lock_timeout allows, 0 = no wait, else at most that long; 55P03 if not obtained), then return one row: create (no record), resume (fresh record, stamped with run_id and now()) or recreate (the old record: older than max_age or of another provider). Lock mode (lease NULL): the key''s lock is held until the transaction ends. Lease mode: the row also carries a claim (fence, owner_token, lease_expires_at) that holds the key until released or expired.';

COMMENT ON FUNCTION sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval) IS
'Take the key''s lock until the transaction ends (the lock sandbox_ensure takes). wait as for sandbox_ensure; 55P03 if not obtained.';

COMMENT ON FUNCTION sandbox_store.sandbox_try_lock(pg_catalog.text) IS
'Take the key''s lock until the transaction ends if it is free now: true if taken (or already held), false if another transaction holds it.';

COMMENT ON FUNCTION sandbox_store.sandbox_lock_id(pg_catalog.text) IS
'The 64-bit id of the key''s lock (FNV-1a of its bytes; stable forever): lock_id of the view key_locks, which lists who holds and who waits for each key''s lock. pg_locks shows it as classid (high 32 bits) and objid (low 32 bits) of an advisory lock.';

COMMENT ON FUNCTION sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take a claim on key for lease, and nothing else (lease mode''s lock for any critical section): waits for the key like sandbox_ensure (wait; 55P03 if not obtained) and returns fence, owner_token and lease_expires_at.';

COMMENT ON FUNCTION sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval) IS
'Extend the claim of owner_token on key to now + lease (server clock) and return the new expiry; SB001 if the claim was released or taken over.';

COMMENT ON FUNCTION sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid) IS
'End the claim of owner_token on key: true if it held the key''s claim, false for a stale token (which never ends its successor''s claim).';

COMMENT ON FUNCTION sandbox_store.sandbox_reap(pg_catalog.interval, pg_catalog.int4) IS
'Delete and return, oldest first, at most max_rows records idle longer than idle_for whose key is neither locked nor claimed (busy keys are skipped, never waited for; concurrent reapers never return the same record). The app destroys the returned sandboxes.';

COMMENT ON FUNCTION sandbox_store.sandbox_lock_holder(pg_catalog.text) IS
'The pid of the backend whose transaction holds the key''s lock, or NULL. Claims have no backend: see the view sandbox_store.claims.';

-- The internal helpers: nobody but the owner (an update script runs this
-- too, for the helpers it makes).
REVOKE ALL ON SCHEMA sandbox_store_internal FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store_internal FROM PUBLIC;

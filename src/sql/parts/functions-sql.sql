-- The SQL edition's functions: the same interface as the C edition's, in
-- PL/pgSQL, for servers that cannot load the library (pg_tle, or the plain
-- script).  docs/reference.md, "Editions", lists where they differ and why.
--
-- Every interface function runs with search_path pg_catalog, pg_temp (its
-- SET clause), and so do the helpers it calls.  Most helpers have no SET
-- clause of their own (one costs a save and restore of the setting per
-- call, and keeps a SQL function from being inlined): they run only under a
-- caller's pinned search_path, since nobody else may call them (schema
-- sandbox_store_internal, no USAGE for other roles).  The helpers that SQL
-- of other parts calls (checkpoints, runs) keep theirs.  Every object of the
-- extension is named in full.  The interface functions are SECURITY
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
CREATE FUNCTION sandbox_store_internal._lock_id(k pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    b pg_catalog.bytea := pg_catalog.convert_to(k, pg_catalog.getdatabaseencoding());
    -- the hash, its halves hi and lo in one bigint: hi << 32 | lo (<< wraps
    -- into the sign bit; >> keeps the sign, hence the mask)
    h pg_catalog.int8 := (3421674724::pg_catalog.int8 << 32) | 2216829733;
    t pg_catalog.int8;    -- lo xor the byte; (t << 8) is t * 2^40 in hi (mod 2^32)
BEGIN
    FOR i IN 0 .. pg_catalog.length(b) - 1 LOOP
        t := (h & 4294967295) # pg_catalog.get_byte(b, i);
        h := ((((h >> 32) & 4294967295) * 435 + ((t * 435) >> 32) + (t << 8)) << 32) | ((t * 435) & 4294967295);
    END LOOP;
    RETURN h;
END
$$;

-- A text argument that is NULL (when required), empty or over 1024 bytes; a
-- key that is reserved (starts with E'\x01': the extension's own claims, such
-- as a thread's checkpoint writer on E'\x01checkpoint-writer\x01' || thread).
CREATE FUNCTION sandbox_store_internal._bad_text(v pg_catalog.text, arg pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
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
CREATE FUNCTION sandbox_store_internal._null_arg(arg pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
        MESSAGE = format('%s must not be null', arg);
END
$$;

-- An interval's months, days and microseconds, each with its sign (in
-- PL/pgSQL: a SQL function that returns a record is never inlined).
CREATE FUNCTION sandbox_store_internal._interval_parts(v pg_catalog.interval,
    OUT months pg_catalog.numeric, OUT days pg_catalog.numeric, OUT usecs pg_catalog.numeric)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
    months := extract(year FROM v) * 12 + extract(month FROM v);
    days := extract(day FROM v);
    usecs := (extract(hour FROM v) * 3600 + extract(minute FROM v) * 60 + extract(second FROM v)) * 1000000;
END
$$;

-- An interval argument: parts of one sign; not negative; positive (and
-- now() + it still a timestamp) where the argument must be positive.
CREATE FUNCTION sandbox_store_internal._check_interval(v pg_catalog.interval, arg pg_catalog.text,
                                              must_be_positive pg_catalog.bool)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    -- v's parts, as _interval_parts gives them (computed here: one call fewer)
    months pg_catalog.numeric := extract(year FROM v) * 12 + extract(month FROM v);
    days pg_catalog.numeric := extract(day FROM v);
    usecs pg_catalog.numeric := (extract(hour FROM v) * 3600 + extract(minute FROM v) * 60 + extract(second FROM v)) * 1000000;
    some_negative boolean := months < 0 OR days < 0 OR usecs < 0;
    some_positive boolean := months > 0 OR days > 0 OR usecs > 0;
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
       AND (months * 31 * 86400000000 + days * 86400000000 + usecs)
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
CREATE FUNCTION sandbox_store_internal._cutoff(age pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql STABLE
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
CREATE FUNCTION sandbox_store_internal._refuse_on_standby(k pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
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
CREATE FUNCTION sandbox_store_internal._not_obtained(k pg_catalog.text, wait pg_catalog.interval,
                                            by_lock_timeout pg_catalog.bool,
                                            blocked_fence pg_catalog.int8,
                                            blocked_until pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
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
CREATE FUNCTION sandbox_store_internal._changed(k pg_catalog.text, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'serialization_failure',
        MESSAGE = format('could not serialize access to sandbox key "%s"', k),
        DETAIL = format('The key''s %s was changed by a transaction that committed after this transaction''s snapshot was taken.', what),
        HINT = 'Retry the transaction, or run it at READ COMMITTED.';
END
$$;

-- SB001, the ways a claim is lost.
CREATE FUNCTION sandbox_store_internal._claim_lost(k pg_catalog.text, how pg_catalog.text,
                                          f pg_catalog.int8, newest pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
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
CREATE FUNCTION sandbox_store_internal._snapshot_isolation()
RETURNS pg_catalog.bool
LANGUAGE sql STABLE
AS $$
SELECT pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.=) ANY ('{repeatable read,serializable}'::pg_catalog.text[])
$$;

-- REPEATABLE READ / SERIALIZABLE: a statement reads with the transaction's
-- snapshot, which may hide a row committed after it.  An INSERT ... ON
-- CONFLICT DO NOTHING that conflicts with a row the snapshot cannot see
-- raises PostgreSQL's 40001; the probe's own row, if it inserts one, is
-- rolled back with the block.  what: 'claim' (leases) or 'record'
-- (instances).
CREATE FUNCTION sandbox_store_internal._probe_hidden(k pg_catalog.text, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
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
CREATE FUNCTION sandbox_store_internal._current_record(k pg_catalog.text)
RETURNS sandbox_store.instances
LANGUAGE plpgsql
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
CREATE FUNCTION sandbox_store_internal._draw_fence(above pg_catalog.int8)
RETURNS pg_catalog.int8
LANGUAGE plpgsql
AS $$
DECLARE
    f pg_catalog.int8;
BEGIN
    IF (pg_advisory_xact_lock_shared(0, 21315)) IS NULL THEN END IF;
    f := nextval('sandbox_store.fence_seq');
    IF f > above THEN
        RETURN f;
    END IF;
    IF (pg_advisory_xact_lock(0, 21315)) IS NULL THEN END IF;
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
CREATE FUNCTION sandbox_store_internal._keep_fence()
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        IF (set_config('synchronous_commit', 'local', true)) IS NULL THEN END IF;
    END IF;
    IF current_setting('server_version_num')::pg_catalog.int4 >= 170000 THEN
        IF (pg_logical_emit_message(false, 'sandbox_store', ''::pg_catalog.text, true)) IS NULL THEN END IF;
    END IF;
END
$$;

-- A fence for a claim that SQL code takes itself (the checkpoint writers):
-- drawn and kept as for sandbox_claim.
CREATE FUNCTION sandbox_store_internal._draw_claim_fence(above pg_catalog.int8)
RETURNS pg_catalog.int8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f pg_catalog.int8 := sandbox_store_internal._draw_fence(above);
BEGIN
    IF (sandbox_store_internal._keep_fence()) IS NULL THEN END IF;
    RETURN f;
END
$$;

-- The lock of a thread's first checkpoint writer: the writer key's lock, as
-- this edition takes a key's lock (pg_advisory_xact_lock on its lock id,
-- which an application's own advisory lock on that number shares), at once
-- or not at all, until the transaction ends.
CREATE FUNCTION sandbox_store_internal._try_writer_lock(k pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE sql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
SELECT pg_catalog.pg_try_advisory_xact_lock(sandbox_store_internal._lock_id(k))
$$;

-- sandbox_store.max_checkpoint_bytes in bytes (0: not set, or no limit).
-- Without a library it is a placeholder: a text that any role may set,
-- read here as a size with or without a unit (kB, MB, GB).
CREATE FUNCTION sandbox_store_internal._max_checkpoint_bytes()
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
CREATE FUNCTION sandbox_store_internal._lock_within(lock_id pg_catalog.int8, ms pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET lock_timeout = 0
AS $$
BEGIN
    IF (set_config('lock_timeout', ms::pg_catalog.text, true)) IS NULL THEN END IF;
    IF (pg_advisory_xact_lock(lock_id)) IS NULL THEN END IF;
END
$$;

-- Retire the key's expired claim (a lock-mode caller took the key over): a
-- new fence, no token.  False if the claim was renewed or released since it
-- was seen.
CREATE FUNCTION sandbox_store_internal._retire(k pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE plpgsql
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
CREATE FUNCTION sandbox_store_internal._take(k pg_catalog.text, lock_id pg_catalog.int8,
                                    wait pg_catalog.interval, lease pg_catalog.interval,
                                    OUT fence pg_catalog.int8, OUT owner_token pg_catalog.uuid,
                                    OUT lease_expires_at pg_catalog.timestamptz)
LANGUAGE plpgsql
AS $$
DECLARE
    started pg_catalog.timestamptz := clock_timestamp();
    deadline pg_catalog.timestamptz;    -- NULL: no bound
    by_lock_timeout boolean;
    lock_timeout_ms pg_catalog.int8;
    p record;
    ms_left pg_catalog.int8;
    delay_ms pg_catalog.int4;
    nap_ms pg_catalog.numeric;
    c_fence pg_catalog.int8;
    c_until pg_catalog.timestamptz;
    c_live boolean;
    blocked boolean;
    rr boolean := sandbox_store_internal._snapshot_isolation();
    newest pg_catalog.int8;
    new_fence pg_catalog.int8;
    now_clock pg_catalog.timestamptz;
BEGIN
    IF pg_is_in_recovery() THEN
        PERFORM sandbox_store_internal._refuse_on_standby(k);
    END IF;
    -- Lock mode without a wait at READ COMMITTED, the common call: the
    -- lock, and no live claim in the way (else the general loop below).
    IF wait IS NULL AND lease IS NULL AND NOT rr THEN
        BEGIN
            IF (pg_advisory_xact_lock(lock_id)) IS NULL THEN END IF;
            SELECT l.fence, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL;
            IF c_live THEN
                -- Give the lock back (the subtransaction's rollback does).
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            c_live := true;
        END;
        IF c_fence IS NULL OR (NOT c_live AND sandbox_store_internal._retire(k)) THEN
            RETURN;
        END IF;
    END IF;
    by_lock_timeout := false;
    delay_ms := 1;
    -- How long the caller may wait: wait (more than 36,500 days is no
    -- bound), or lock_timeout if that is sooner.
    IF wait IS NOT NULL THEN
        p := sandbox_store_internal._interval_parts(wait);
        IF p.usecs + p.days * 86400000000 + p.months * 30 * 86400000000 <= 36500 * 86400000000::pg_catalog.numeric THEN
            deadline := started + make_interval(secs => (p.usecs + p.days * 86400000000 + p.months * 30 * 86400000000) / 1000000);
        END IF;
    END IF;
    -- Without a wait, lock_timeout matters only once a claim is in the way
    -- (PostgreSQL's own wait for the lock ends with it): read it there.
    IF wait IS NOT NULL THEN
        lock_timeout_ms := (extract(epoch FROM current_setting('lock_timeout')::pg_catalog.interval) * 1000)::pg_catalog.int8;
        IF lock_timeout_ms > 0 THEN
            IF deadline IS NULL OR started + make_interval(secs => lock_timeout_ms / 1000.0) < deadline THEN
                deadline := started + make_interval(secs => lock_timeout_ms / 1000.0);
                by_lock_timeout := true;
            END IF;
        END IF;
    END IF;

    LOOP
        blocked := false;
        c_fence := NULL;
        BEGIN
            IF wait IS NULL OR deadline IS NULL THEN
                -- PostgreSQL's own wait (lock_timeout, if set, ends it).
                IF (pg_advisory_xact_lock(lock_id)) IS NULL THEN END IF;
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
                        IF (sandbox_store_internal._lock_within(lock_id, LEAST(ms_left, 2147483647))) IS NULL THEN END IF;
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
                -- (40001 is raised only at REPEATABLE READ and above: the
                -- subtransaction that turns it into ours only there)
                IF rr THEN
                    BEGIN
                        SELECT l.fence INTO newest FROM ONLY sandbox_store.leases l
                         WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
                    EXCEPTION WHEN serialization_failure THEN
                        PERFORM sandbox_store_internal._changed(k, 'claim');
                    END;
                ELSE
                    SELECT l.fence INTO newest FROM ONLY sandbox_store.leases l
                     WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
                END IF;
                now_clock := clock_timestamp();
                -- The fence: _draw_fence(COALESCE(newest, 0)), its common
                -- case here (a draw above newest under the shared draw lock).
                IF (pg_advisory_xact_lock_shared(0, 21315)) IS NULL THEN END IF;
                new_fence := nextval('sandbox_store.fence_seq');
                IF new_fence <= COALESCE(newest, 0) THEN
                    new_fence := sandbox_store_internal._draw_fence(COALESCE(newest, 0));
                END IF;
                INSERT INTO sandbox_store.leases AS l (key, fence, owner_token, lease_expires_at)
                VALUES (k, new_fence, gen_random_uuid(),
                        (now_clock AT TIME ZONE 'UTC' + lease) AT TIME ZONE 'UTC')
                ON CONFLICT ON CONSTRAINT leases_pkey DO UPDATE
                   SET fence = GREATEST(l.fence + 1, EXCLUDED.fence),
                       owner_token = EXCLUDED.owner_token,
                       lease_expires_at = EXCLUDED.lease_expires_at
                 WHERE l.owner_token IS NULL OR l.lease_expires_at OPERATOR(pg_catalog.<=) now_clock
                RETURNING l.fence, l.owner_token, l.lease_expires_at
                     INTO fence, owner_token, lease_expires_at;
                IF FOUND THEN
                    -- _keep_fence: its first step here, the call only where
                    -- it flushes (PostgreSQL 17 and later)
                    IF current_setting('synchronous_commit') = 'off' THEN
                        IF (set_config('synchronous_commit', 'local', true)) IS NULL THEN END IF;
                    END IF;
                    IF current_setting('server_version_num')::pg_catalog.int4 >= 170000 THEN
                        IF (sandbox_store_internal._keep_fence()) IS NULL THEN END IF;
                    END IF;
                    RETURN;
                END IF;
            END IF;
            CONTINUE;    -- the claim changed under us: look again
        END IF;

        -- A live claim holds the key: wait for it, backing off.
        IF wait IS NULL AND lock_timeout_ms IS NULL THEN
            lock_timeout_ms := (extract(epoch FROM current_setting('lock_timeout')::pg_catalog.interval) * 1000)::pg_catalog.int8;
            IF lock_timeout_ms > 0 THEN
                deadline := started + make_interval(secs => lock_timeout_ms / 1000.0);
                by_lock_timeout := true;
            END IF;
        END IF;
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
CREATE FUNCTION sandbox_store_internal._try_take(k pg_catalog.text, lock_id pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql
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
CREATE FUNCTION sandbox_store_internal._lock(k pg_catalog.text, lock_id pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF pg_is_in_recovery() THEN
        PERFORM sandbox_store_internal._refuse_on_standby(k);
    END IF;
    IF (pg_advisory_xact_lock(lock_id)) IS NULL THEN END IF;
END
$$;

-- A fenced write goes through only with the fence of the key's current
-- claim: the key's newest fence, its claim still set.  SB001 otherwise.
CREATE FUNCTION sandbox_store_internal._check_fence(k pg_catalog.text, f pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
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
CREATE FUNCTION sandbox_store_internal._upsert(k pg_catalog.text, f pg_catalog.int8, release pg_catalog.bool,
                                      p_provider pg_catalog.text, p_provider_sandbox_id pg_catalog.text,
                                      p_thread_id pg_catalog.text, p_latest_snapshot_id pg_catalog.text,
                                      p_latest_run_id pg_catalog.text, p_updated_at pg_catalog.timestamptz)
RETURNS sandbox_store.instances
LANGUAGE plpgsql
AS $$
DECLARE
    rr boolean := sandbox_store_internal._snapshot_isolation();
    r sandbox_store.instances;
    newest pg_catalog.int8;
    is_claimed boolean;
BEGIN
    IF f IS NOT NULL OR rr THEN
        -- _lock and _check_fence, here (two calls fewer)
        IF pg_is_in_recovery() THEN
            PERFORM sandbox_store_internal._refuse_on_standby(k);
        END IF;
        IF (pg_advisory_xact_lock(sandbox_store_internal._lock_id(k))) IS NULL THEN END IF;
        IF f IS NOT NULL THEN
            SELECT l.fence, l.owner_token IS NOT NULL INTO newest, is_claimed
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
            IF NOT FOUND THEN
                IF rr THEN
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
        END IF;
        IF release THEN
            IF rr THEN
                BEGIN
                    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
                     WHERE l.key OPERATOR(pg_catalog.=) k AND l.fence OPERATOR(pg_catalog.=) f
                       AND l.owner_token IS NOT NULL;
                EXCEPTION WHEN serialization_failure THEN
                    PERFORM sandbox_store_internal._changed(k, 'claim');
                END;
            ELSE    -- (no 40001 at READ COMMITTED: no subtransaction)
                UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
                 WHERE l.key OPERATOR(pg_catalog.=) k AND l.fence OPERATOR(pg_catalog.=) f
                   AND l.owner_token IS NOT NULL;
            END IF;
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
CREATE FUNCTION sandbox_store_internal._check_record_args(p_provider pg_catalog.text, p_provider_sandbox_id pg_catalog.text,
                                                 p_thread_id pg_catalog.text, p_latest_snapshot_id pg_catalog.text,
                                                 p_latest_run_id pg_catalog.text, p_updated_at pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
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
CREATE FUNCTION sandbox_store_internal._check_fence_arg(f pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
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

CREATE FUNCTION sandbox_store.sandbox_upsert(
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
DECLARE
    r sandbox_store.instances;
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 IS NULL OR octet_length($2) NOT BETWEEN 1 AND 1024 OR $3 IS NULL OR octet_length($3) NOT BETWEEN 1 AND 1024
       OR $4 IS NULL OR octet_length($4) NOT BETWEEN 1 AND 1024 OR octet_length($5) NOT BETWEEN 1 AND 1024
       OR octet_length($6) NOT BETWEEN 1 AND 1024 OR $7 IS NULL OR NOT isfinite($7) THEN
        PERFORM sandbox_store_internal._check_record_args($2, $3, $4, $5, $6, $7);
    END IF;
    IF $8 <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg($8);
    END IF;
    IF $8 IS NULL AND NOT sandbox_store_internal._snapshot_isolation() THEN
        -- _upsert without a fence at READ COMMITTED (no lock): here, one
        -- call fewer.
        INSERT INTO sandbox_store.instances AS i
               (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at)
        VALUES ($1, $2, $3, $5, $4, $6, $7)
        ON CONFLICT ON CONSTRAINT instances_pkey DO UPDATE SET
               provider = EXCLUDED.provider,
               provider_sandbox_id = EXCLUDED.provider_sandbox_id,
               latest_snapshot_id = EXCLUDED.latest_snapshot_id,
               thread_id = EXCLUDED.thread_id,
               latest_run_id = EXCLUDED.latest_run_id,
               updated_at = EXCLUDED.updated_at
        RETURNING i.* INTO r;
        RETURN r;
    END IF;
    RETURN sandbox_store_internal._upsert($1, $8, false, $2, $3, $4, $5, $6, $7);
END
$$;

CREATE FUNCTION sandbox_store.sandbox_upsert_release(
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
    IF $3 IS NULL OR octet_length($3) NOT BETWEEN 1 AND 1024 OR $4 IS NULL OR octet_length($4) NOT BETWEEN 1 AND 1024
       OR $5 IS NULL OR octet_length($5) NOT BETWEEN 1 AND 1024 OR octet_length($6) NOT BETWEEN 1 AND 1024
       OR octet_length($7) NOT BETWEEN 1 AND 1024 OR $8 IS NULL OR NOT isfinite($8) THEN
        PERFORM sandbox_store_internal._check_record_args($3, $4, $5, $6, $7, $8);
    END IF;
    RETURN sandbox_store_internal._upsert($1, $2, true, $3, $4, $5, $6, $7, $8);
END
$$;

CREATE FUNCTION sandbox_store.sandbox_get(key pg_catalog.text)
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

CREATE FUNCTION sandbox_store.sandbox_delete(
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
        IF (sandbox_store_internal._lock($1, sandbox_store_internal._lock_id($1))) IS NULL THEN END IF;
        IF (sandbox_store_internal._check_fence($1, $2)) IS NULL THEN END IF;
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

CREATE FUNCTION sandbox_store.sandbox_list(thread_id pg_catalog.text)
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

CREATE FUNCTION sandbox_store.sandbox_ensure(
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
    c_fence pg_catalog.int8;
    c_live boolean;
BEGIN
    -- One condition for the text arguments; when it holds, the checks in
    -- their order (key, run_id, max_age, provider) say which one is bad.
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01')
       OR $2 IS NULL OR octet_length($2) NOT BETWEEN 1 AND 1024 OR octet_length($4) NOT BETWEEN 1 AND 1024 THEN
        IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
            PERFORM sandbox_store_internal._bad_text($1, 'key');
        END IF;
        IF $2 IS NULL OR octet_length($2) NOT BETWEEN 1 AND 1024 THEN
            PERFORM sandbox_store_internal._bad_text($2, 'run_id');
        END IF;
        IF $3 IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval($3, 'max_age', false)) IS NULL THEN END IF;
        END IF;
        PERFORM sandbox_store_internal._bad_text($4, 'provider');
    END IF;
    IF $3 IS NOT NULL THEN
        IF (sandbox_store_internal._check_interval($3, 'max_age', false)) IS NULL THEN END IF;
        cutoff := sandbox_store_internal._cutoff($3);
    END IF;

    IF $5 IS NULL AND $6 IS NULL AND NOT sandbox_store_internal._snapshot_isolation() AND NOT pg_is_in_recovery() THEN
        -- Lock mode without a wait at READ COMMITTED: _take's first step
        -- here (one call fewer), _take itself only when a claim is found.
        BEGIN
            IF (pg_advisory_xact_lock(sandbox_store_internal._lock_id($1))) IS NULL THEN END IF;
            SELECT l.fence, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) $1 AND l.owner_token IS NOT NULL;
            IF c_live THEN
                -- Give the lock back (the subtransaction's rollback does).
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            c_live := true;
        END;
        IF c_fence IS NOT NULL AND (c_live OR NOT sandbox_store_internal._retire($1)) THEN
            c := sandbox_store_internal._take($1, sandbox_store_internal._lock_id($1), NULL, NULL);
        END IF;
    ELSE
        IF $5 IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval($5, 'wait', false)) IS NULL THEN END IF;
        END IF;
        IF $6 IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval($6, 'lease', true)) IS NULL THEN END IF;
        END IF;
        c := sandbox_store_internal._take($1, sandbox_store_internal._lock_id($1), $5, $6);
    END IF;

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
    IF $6 IS NULL THEN    -- lock mode: no claim (c is not set on the path above)
        RETURN NEXT ROW(res.action, r.key, r.provider, r.provider_sandbox_id, r.latest_snapshot_id, r.thread_id,
                        r.latest_run_id, r.updated_at, NULL, NULL, NULL)::sandbox_store.ensure_result;
    ELSE
        RETURN NEXT ROW(res.action, r.key, r.provider, r.provider_sandbox_id, r.latest_snapshot_id, r.thread_id,
                        r.latest_run_id, r.updated_at, c.fence, c.owner_token, c.lease_expires_at)::sandbox_store.ensure_result;
    END IF;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_lock(
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
        IF (sandbox_store_internal._check_interval($2, 'wait', false)) IS NULL THEN END IF;
    END IF;
    PERFORM sandbox_store_internal._take($1, sandbox_store_internal._lock_id($1), $2, NULL);
END
$$;

CREATE FUNCTION sandbox_store.sandbox_try_lock(key pg_catalog.text)
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

CREATE FUNCTION sandbox_store.sandbox_lock_id(key pg_catalog.text)
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

CREATE FUNCTION sandbox_store.sandbox_claim(
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
    IF (sandbox_store_internal._check_interval($2, 'lease', true)) IS NULL THEN END IF;
    IF $3 IS NOT NULL THEN
        IF (sandbox_store_internal._check_interval($3, 'wait', false)) IS NULL THEN END IF;
    END IF;
    RETURN QUERY SELECT t.fence, t.owner_token, t.lease_expires_at
                   FROM sandbox_store_internal._take($1, sandbox_store_internal._lock_id($1), $3, $2) t;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_renew(
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
    IF (sandbox_store_internal._check_interval($3, 'lease', true)) IS NULL THEN END IF;
    IF (sandbox_store_internal._lock($1, sandbox_store_internal._lock_id($1))) IS NULL THEN END IF;
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

CREATE FUNCTION sandbox_store.sandbox_release(
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
    IF (sandbox_store_internal._lock($1, sandbox_store_internal._lock_id($1))) IS NULL THEN END IF;
    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
     WHERE l.key OPERATOR(pg_catalog.=) $1 AND l.owner_token OPERATOR(pg_catalog.=) $2;
    RETURN FOUND;
END
$$;

-- The reaper's candidates, oldest first: a sequential read (there is no
-- index on updated_at), whatever the caller's enable_seqscan.
CREATE FUNCTION sandbox_store_internal._reap_candidates(cutoff pg_catalog.timestamptz)
RETURNS SETOF pg_catalog.text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = on
AS $$
SELECT i.key FROM ONLY sandbox_store.instances i
 WHERE i.updated_at OPERATOR(pg_catalog.<) cutoff
 ORDER BY i.updated_at, i.key
$$;

CREATE FUNCTION sandbox_store.sandbox_reap(
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
    IF (sandbox_store_internal._check_interval($1, 'idle_for', false)) IS NULL THEN END IF;
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

CREATE FUNCTION sandbox_store.sandbox_lock_holder(key pg_catalog.text)
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

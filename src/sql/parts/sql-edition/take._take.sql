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
    lock_timeout_read boolean := false;
    lock_timeout_end pg_catalog.timestamptz;
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
        lock_timeout_read := true;
        lock_timeout_end := sandbox_store_internal._lock_timeout_deadline(started);
        IF lock_timeout_end IS NOT NULL AND (deadline IS NULL OR lock_timeout_end < deadline) THEN
            deadline := lock_timeout_end;
            by_lock_timeout := true;
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
        -- (without a wait, deadline is NULL until here)
        IF wait IS NULL AND NOT lock_timeout_read THEN
            lock_timeout_read := true;
            deadline := sandbox_store_internal._lock_timeout_deadline(started);
            by_lock_timeout := deadline IS NOT NULL;
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

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
    -- One condition for the text arguments and max_age; when it holds, the
    -- checks in their order (key, run_id, max_age, provider) say which one
    -- is bad, and a good max_age gives the cutoff.  (The lengths as
    -- '[1,@MAX_TEXT_BYTES@]' @> n: one operator each, where NOT BETWEEN evaluates the
    -- length twice with two operators.)
    IF sandbox_ensure.key IS NULL OR sandbox_ensure.run_id IS NULL
       OR NOT '[1,@MAX_TEXT_BYTES@]'::int4range @> octet_length(sandbox_ensure.key)
       OR NOT '[1,@MAX_TEXT_BYTES@]'::int4range @> octet_length(sandbox_ensure.run_id)
       OR NOT '[1,@MAX_TEXT_BYTES@]'::int4range @> octet_length(sandbox_ensure.provider)
       OR starts_with(sandbox_ensure.key, E'\x01') OR max_age IS NOT NULL THEN
        IF sandbox_ensure.key IS NULL OR octet_length(sandbox_ensure.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_ensure.key, E'\x01') THEN
            PERFORM sandbox_store_internal._bad_text(sandbox_ensure.key, 'key');
        END IF;
        IF sandbox_ensure.run_id IS NULL OR octet_length(sandbox_ensure.run_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ THEN
            PERFORM sandbox_store_internal._bad_text(sandbox_ensure.run_id, 'run_id');
        END IF;
        IF max_age IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval(max_age, 'max_age', false)) IS NULL THEN END IF;
        END IF;
        IF octet_length(sandbox_ensure.provider) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ THEN
            PERFORM sandbox_store_internal._bad_text(sandbox_ensure.provider, 'provider');
        END IF;
        IF max_age IS NOT NULL THEN
            cutoff := sandbox_store_internal._cutoff(max_age);
        END IF;
    END IF;

    IF wait IS NULL AND lease IS NULL AND NOT sandbox_store_internal._snapshot_isolation() AND NOT pg_is_in_recovery() THEN
        -- Lock mode without a wait at READ COMMITTED: _take's first step
        -- here (one call fewer), _take itself only when a claim is found.
        BEGIN
            IF (pg_advisory_xact_lock(sandbox_store_internal._lock_id(sandbox_ensure.key))) IS NULL THEN END IF;
            SELECT l.fence, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) sandbox_ensure.key AND l.owner_token IS NOT NULL;
            IF c_live THEN
                -- Give the lock back (the subtransaction's rollback does).
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            c_live := true;
        END;
        -- (nested: without a claim, the path sets up no call of _retire)
        IF c_fence IS NOT NULL THEN
            IF c_live OR NOT sandbox_store_internal._retire(sandbox_ensure.key) THEN
                c := sandbox_store_internal._take(sandbox_ensure.key, sandbox_store_internal._lock_id(sandbox_ensure.key), NULL, NULL);
            END IF;
        END IF;
    ELSE
        IF wait IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval(wait, 'wait', false)) IS NULL THEN END IF;
        END IF;
        IF lease IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval(lease, 'lease', true)) IS NULL THEN END IF;
        END IF;
        c := sandbox_store_internal._take(sandbox_ensure.key, sandbox_store_internal._lock_id(sandbox_ensure.key), wait, lease);
    END IF;

    IF lease IS NULL AND cutoff IS NULL AND sandbox_ensure.provider IS NULL THEN
        -- Lock mode, no condition on the record: a resume's row comes
        -- straight from the UPDATE (no claim).
        RETURN QUERY
        UPDATE ONLY sandbox_store.instances i
           SET latest_run_id = sandbox_ensure.run_id, updated_at = GREATEST(i.updated_at, now())
         WHERE i.key OPERATOR(pg_catalog.=) sandbox_ensure.key
        RETURNING 'resume'::pg_catalog.text, i.key::pg_catalog.text, i.provider::pg_catalog.text,
                  i.provider_sandbox_id::pg_catalog.text, i.latest_snapshot_id::pg_catalog.text,
                  i.thread_id::pg_catalog.text, i.latest_run_id::pg_catalog.text, i.updated_at,
                  NULL::pg_catalog.int8, NULL::pg_catalog.uuid, NULL::pg_catalog.timestamptz;
        IF FOUND THEN
            RETURN;
        END IF;
    ELSE
        UPDATE ONLY sandbox_store.instances i
           SET latest_run_id = sandbox_ensure.run_id, updated_at = GREATEST(i.updated_at, now())
         WHERE i.key OPERATOR(pg_catalog.=) sandbox_ensure.key
           AND (cutoff IS NULL OR i.updated_at OPERATOR(pg_catalog.>=) cutoff)
           AND (sandbox_ensure.provider IS NULL OR i.provider OPERATOR(pg_catalog.=) sandbox_ensure.provider)
        RETURNING i.* INTO r;
    END IF;
    IF FOUND THEN
        res.action := 'resume';
    ELSE
        IF sandbox_store_internal._snapshot_isolation() THEN
            r := sandbox_store_internal._current_record(sandbox_ensure.key);
        ELSE
            SELECT i.* INTO r FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) sandbox_ensure.key;
        END IF;
        res.action := CASE WHEN r.key IS NULL THEN 'create' ELSE 'recreate' END;
        -- Lock mode in autocommit: the lock ends with the statement.  (A
        -- procedure or DO block holds it until its own COMMIT.)
        IF lease IS NULL AND transaction_timestamp() = statement_timestamp()
           AND current_query() !~* E'^\\s*(call|do)\\M' THEN
            RAISE WARNING USING
                MESSAGE = format('sandbox_ensure returned "%s" outside a transaction block', res.action),
                DETAIL = 'The lock on the key ends with the statement, so another session may also be told to create a sandbox for it.',
                HINT = 'Call sandbox_ensure after BEGIN (or in a procedure) and upsert the new record before COMMIT, or pass a lease.';
        END IF;
    END IF;
    IF lease IS NULL THEN    -- lock mode: no claim (c is not set on the path above)
        RETURN NEXT ROW(res.action, r.key, r.provider, r.provider_sandbox_id, r.latest_snapshot_id, r.thread_id,
                        r.latest_run_id, r.updated_at, NULL, NULL, NULL)::sandbox_store.ensure_result;
    ELSE
        RETURN NEXT ROW(res.action, r.key, r.provider, r.provider_sandbox_id, r.latest_snapshot_id, r.thread_id,
                        r.latest_run_id, r.updated_at, c.fence, c.owner_token, c.lease_expires_at)::sandbox_store.ensure_result;
    END IF;
END
$$;

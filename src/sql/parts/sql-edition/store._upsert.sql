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
            ELSIF newest <> f THEN
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

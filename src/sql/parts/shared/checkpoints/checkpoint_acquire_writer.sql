CREATE FUNCTION sandbox_store.checkpoint_acquire_writer(
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
    now pg_catalog.timestamptz := COALESCE(checkpoint_acquire_writer.at, clock_timestamp());
    cur record;
BEGIN
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_acquire_writer.thread_id, 'thread id', 1000);
    IF lease_ms IS NULL OR lease_ms <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms must be positive', DETAIL = format('The value given is %s.', lease_ms);
    END IF;
    IF checkpoint_acquire_writer.at IS NOT NULL AND NOT isfinite(checkpoint_acquire_writer.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_acquire_writer.at);
    END IF;
    IF lease_ms / 1000.0 >= 9223372036854 OR extract(epoch FROM now) + lease_ms / 1000.0 >= 9224318015999 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms is too long',
            DETAIL = 'now + lease_ms would be past the latest timestamp PostgreSQL has.';
    END IF;
    k := sandbox_store_internal._writer_key(checkpoint_acquire_writer.thread_id);
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
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            'Another transaction is acquiring, renewing, releasing or writing with the thread''s writer and has not ended.');
    END;
    IF cur.owner_token IS NOT NULL AND cur.lease_expires_at > now THEN
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            format('Its lease (fence %s) runs until %s.', cur.fence, cur.lease_expires_at));
    END IF;
    INSERT INTO sandbox_store.leases AS l (key, fence, owner_token, lease_expires_at)
    VALUES (k, sandbox_store_internal._draw_claim_fence(COALESCE(cur.fence, 0)), gen_random_uuid(),
            now + make_interval(secs => lease_ms / 1000.0))
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
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            'Another writer took the lease at the same time.');
    END IF;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_acquire_writer(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz) IS
'Take the single checkpoint writer of a thread for lease_ms, without waiting: a claim (fence, owner_token, expires_at) on the thread''s reserved key, its fence above every fence the thread had. SBC05 if another unexpired writer holds it, or another transaction holds the writer at the moment.';

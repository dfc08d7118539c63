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
    now pg_catalog.timestamptz := COALESCE(checkpoint_acquire_writer.at, clock_timestamp());
    cur record;
    found_row pg_catalog.bool;
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
    -- Never wait: the thread's writer row is locked at once, or another
    -- transaction is acquiring, renewing, releasing or writing with it and
    -- has not ended (SBC05, whatever it does next).  A thread without a
    -- writer row yet: its first acquirers also take the lock of the thread's
    -- reserved key (_try_writer_lock, until the transaction ends), at once or
    -- not at all, so that none waits for another's insert of the row.
    BEGIN
        SELECT w.fence, w.owner_token, w.lease_expires_at INTO cur
          FROM ONLY sandbox_store.checkpoint_writers w
         WHERE w.thread_id OPERATOR(pg_catalog.=) checkpoint_acquire_writer.thread_id FOR UPDATE NOWAIT;
        found_row := FOUND;
        IF NOT found_row THEN
            IF NOT sandbox_store_internal._try_writer_lock(sandbox_store_internal._writer_key(checkpoint_acquire_writer.thread_id)) THEN
                RAISE EXCEPTION USING ERRCODE = 'lock_not_available';
            END IF;
            -- (a row committed since the first look)
            SELECT w.fence, w.owner_token, w.lease_expires_at INTO cur
              FROM ONLY sandbox_store.checkpoint_writers w
             WHERE w.thread_id OPERATOR(pg_catalog.=) checkpoint_acquire_writer.thread_id FOR UPDATE NOWAIT;
            found_row := FOUND;
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            'Another transaction is acquiring, renewing, releasing or writing with the thread''s writer and has not ended.');
    END;
    IF cur.owner_token IS NOT NULL AND cur.lease_expires_at > now THEN
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            format('Its lease (fence %s) runs until %s.', cur.fence, cur.lease_expires_at));
    END IF;
    -- The fence is drawn here, under the row's lock (or the reserved key's),
    -- and written as a value: on Citus an UPDATE may not call a volatile
    -- function.
    fence := sandbox_store_internal._draw_claim_fence(COALESCE(cur.fence, 0));
    owner_token := gen_random_uuid();
    expires_at := now + make_interval(secs => lease_ms / 1000.0);
    IF found_row THEN
        UPDATE ONLY sandbox_store.checkpoint_writers w
           SET fence = checkpoint_acquire_writer.fence, owner_token = checkpoint_acquire_writer.owner_token,
               lease_expires_at = checkpoint_acquire_writer.expires_at
         WHERE w.thread_id OPERATOR(pg_catalog.=) checkpoint_acquire_writer.thread_id;
    ELSE
        INSERT INTO sandbox_store.checkpoint_writers (thread_id, fence, owner_token, lease_expires_at)
        VALUES (checkpoint_acquire_writer.thread_id, checkpoint_acquire_writer.fence, checkpoint_acquire_writer.owner_token,
                checkpoint_acquire_writer.expires_at)
        ON CONFLICT ON CONSTRAINT checkpoint_writers_pkey DO NOTHING;
        IF NOT FOUND THEN
            -- Another writer took the thread's first lease meanwhile.
            PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
                'Another writer took the lease at the same time.');
        END IF;
    END IF;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_acquire_writer(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz) IS
'Take the single checkpoint writer of a thread for lease_ms, without waiting: a writer (fence, owner_token, expires_at) in the thread''s row of checkpoint_writers, its fence above every fence the thread had. SBC05 if another unexpired writer holds it, or another transaction holds the writer at the moment.';

CREATE FUNCTION sandbox_store.checkpoint_delete_head(
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
    IF checkpoint_delete_head.at IS NOT NULL AND NOT isfinite(checkpoint_delete_head.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_delete_head.at);
    END IF;
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_delete_head.thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_id, 'checkpoint id', 1024);
    PERFORM sandbox_store_internal._check_writer(checkpoint_delete_head.thread_id, writer_thread_id, checkpoint_delete_head.owner_token, checkpoint_delete_head.fence, COALESCE(checkpoint_delete_head.at, clock_timestamp()));
    SELECT h.head_id INTO head FROM ONLY sandbox_store.checkpoint_heads h
     WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id FOR UPDATE;
    IF head IS DISTINCT FROM checkpoint_id THEN
        PERFORM sandbox_store_internal._raise('SBC04', format('checkpoint %s is not the head of thread %s', to_jsonb(checkpoint_id), to_jsonb(checkpoint_delete_head.thread_id)),
            format('The head is %s.', COALESCE(to_jsonb(head), 'null')));
    END IF;
    DELETE FROM ONLY sandbox_store.checkpoints c
     WHERE c.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id AND c.id OPERATOR(pg_catalog.=) checkpoint_id
    RETURNING c.parent_id INTO gone;
    -- (its id is free again: a deleted checkpoint may be appended again)
    DELETE FROM ONLY sandbox_store.checkpoint_ids i
     WHERE i.id OPERATOR(pg_catalog.=) checkpoint_id AND i.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id;
    IF gone.parent_id IS NULL THEN
        DELETE FROM ONLY sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id;
    ELSE
        UPDATE ONLY sandbox_store.checkpoint_heads h SET head_id = gone.parent_id
         WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id;
    END IF;
    RETURN gone.parent_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_delete_head(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Delete the thread''s head checkpoint (SBC04 if checkpoint_id is not the head); the head moves to its parent and its blob references drop. Returns the new head id or NULL.';

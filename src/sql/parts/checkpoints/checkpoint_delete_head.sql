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
    RETURNING c.parent_id INTO gone;
    IF gone.parent_id IS NULL THEN
        DELETE FROM sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) $1;
    ELSE
        UPDATE sandbox_store.checkpoint_heads h SET head_id = gone.parent_id
         WHERE h.thread_id OPERATOR(pg_catalog.=) $1;
    END IF;
    RETURN gone.parent_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_delete_head(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Delete the thread''s head checkpoint (SBC04 if checkpoint_id is not the head); the head moves to its parent and its blob references drop. Returns the new head id or NULL.';

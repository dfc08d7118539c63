CREATE FUNCTION sandbox_store.checkpoint_append(
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
    v_id pg_catalog.text := checkpoint_append.checkpoint ->> 'id';
    v_thread pg_catalog.text := checkpoint_append.checkpoint ->> 'threadId';
    v_parent pg_catalog.text := checkpoint_append.checkpoint ->> 'parentCheckpointId';
    v_head pg_catalog.text;
    v_keys pg_catalog.text[];
BEGIN
    IF checkpoint_append.at IS NOT NULL AND NOT isfinite(checkpoint_append.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_append.at);
    END IF;
    v_keys := sandbox_store_internal._checkpoint_check(checkpoint_append.checkpoint);
    PERFORM sandbox_store_internal._check_writer(v_thread, writer_thread_id, checkpoint_append.owner_token, checkpoint_append.fence, COALESCE(checkpoint_append.at, clock_timestamp()));
    -- The id, unique over all threads: its row in checkpoint_ids, taken here
    -- (and undone with the call if a check below fails).  A concurrent write
    -- of the same id is waited for.
    INSERT INTO sandbox_store.checkpoint_ids (id, thread_id) VALUES (v_id, v_thread)
    ON CONFLICT ON CONSTRAINT checkpoint_ids_pkey DO NOTHING;
    IF NOT FOUND THEN
        PERFORM sandbox_store_internal._raise('SBC03', format('checkpoint %s already exists', to_jsonb(v_id)),
            'Checkpoints are immutable: an id is appended once.');
    END IF;
    SELECT h.head_id INTO v_head FROM ONLY sandbox_store.checkpoint_heads h
     WHERE h.thread_id OPERATOR(pg_catalog.=) v_thread FOR UPDATE;
    IF v_head IS DISTINCT FROM expected_head_id THEN
        PERFORM sandbox_store_internal._raise('SBC01', format('the head of thread %s is not the expected one', to_jsonb(v_thread)),
            format('The head is %s; the append expected %s.', COALESCE(to_jsonb(v_head), 'null'), COALESCE(to_jsonb(expected_head_id), 'null')));
    END IF;
    IF v_parent IS DISTINCT FROM expected_head_id THEN
        PERFORM sandbox_store_internal._raise('SBC02', format('the parent of checkpoint %s is not the head', to_jsonb(v_id)),
            format('Its parent is %s; the head is %s.', COALESCE(to_jsonb(v_parent), 'null'), COALESCE(to_jsonb(expected_head_id), 'null')));
    END IF;
    INSERT INTO sandbox_store.checkpoints (id, thread_id, parent_id, created_at, checkpoint, blob_keys)
    VALUES (v_id, v_thread, v_parent, (checkpoint_append.checkpoint ->> 'createdAt')::pg_catalog.int8, checkpoint_append.checkpoint, v_keys);
    INSERT INTO sandbox_store.checkpoint_heads AS h (thread_id, head_id) VALUES (v_thread, v_id)
    ON CONFLICT ON CONSTRAINT checkpoint_heads_pkey DO UPDATE SET head_id = EXCLUDED.head_id;
    RETURN v_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_append(pg_catalog.jsonb, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Append a checkpoint as the thread''s new head, in one call that checks the writer and the head together: SBC07/SBC08 invalid, SB001 writer lost, SBC03 duplicate id, SBC01 stale head, SBC02 parent mismatch. Returns the new head id.';

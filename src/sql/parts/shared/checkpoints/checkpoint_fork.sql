CREATE FUNCTION sandbox_store.checkpoint_fork(
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
    v_keys pg_catalog.text[];
    v_copy pg_catalog.jsonb;
    v_source_thread pg_catalog.text;
    v_size pg_catalog.int4;
BEGIN
    IF checkpoint_fork.at IS NOT NULL AND NOT isfinite(checkpoint_fork.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_fork.at);
    END IF;
    PERFORM sandbox_store_internal._check_id('SBC07', source_thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._check_id('SBC07', source_checkpoint_id, 'checkpoint id', 1024);
    PERFORM sandbox_store_internal._check_id('SBC07', destination_thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._check_id('SBC07', destination_checkpoint_id, 'checkpoint id', 1024);
    IF checkpoint_fork.created_at IS NULL OR checkpoint_fork.created_at NOT BETWEEN -8640000000000000 AND 8640000000000000 THEN
        PERFORM sandbox_store_internal._invalid_entry('createdAt is a whole number of milliseconds since 1970-01-01 UTC.');
    END IF;
    PERFORM sandbox_store_internal._check_writer(destination_thread_id, writer_thread_id, checkpoint_fork.owner_token, checkpoint_fork.fence, COALESCE(checkpoint_fork.at, clock_timestamp()));
    IF source_thread_id = destination_thread_id THEN
        PERFORM sandbox_store_internal._raise('SBC11', format('a fork of thread %s cannot go to the same thread', to_jsonb(source_thread_id)),
            'A fork makes the first checkpoint of another thread.');
    END IF;
    -- The source's thread, from its id; then its stored size, read and
    -- checked before the checkpoint itself (the check here, not in the
    -- query: on Citus the query runs on the thread's node, under that
    -- session's settings).
    SELECT i.thread_id INTO v_source_thread FROM ONLY sandbox_store.checkpoint_ids i
     WHERE i.id OPERATOR(pg_catalog.=) source_checkpoint_id;
    IF FOUND THEN
        SELECT pg_column_size(c.checkpoint) INTO v_size FROM ONLY sandbox_store.checkpoints c
         WHERE c.thread_id OPERATOR(pg_catalog.=) v_source_thread AND c.id OPERATOR(pg_catalog.=) source_checkpoint_id;
        IF v_size IS NOT NULL THEN
            PERFORM sandbox_store_internal._checkpoint_size(v_size, 'The source checkpoint');
        END IF;
        SELECT c.checkpoint, c.blob_keys INTO v_source, v_keys FROM ONLY sandbox_store.checkpoints c
         WHERE c.thread_id OPERATOR(pg_catalog.=) v_source_thread AND c.id OPERATOR(pg_catalog.=) source_checkpoint_id;
    END IF;
    IF v_source IS NULL THEN
        PERFORM sandbox_store_internal._raise('SBC09', format('checkpoint %s does not exist', to_jsonb(source_checkpoint_id)),
            'A fork copies a stored checkpoint.');
    END IF;
    IF v_source ->> 'threadId' IS DISTINCT FROM source_thread_id THEN
        PERFORM sandbox_store_internal._raise('SBC11', format('checkpoint %s is not a checkpoint of thread %s', to_jsonb(source_checkpoint_id), to_jsonb(source_thread_id)),
            format('It belongs to thread %s.', v_source -> 'threadId'));
    END IF;
    IF EXISTS (SELECT FROM ONLY sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) destination_thread_id)
       OR EXISTS (SELECT FROM ONLY sandbox_store.checkpoints c WHERE c.thread_id OPERATOR(pg_catalog.=) destination_thread_id) THEN
        PERFORM sandbox_store_internal._raise('SBC10', format('thread %s already has checkpoints', to_jsonb(destination_thread_id)),
            'A fork makes the first checkpoint of an empty thread.');
    END IF;
    -- The fork root: the source's files, conversation and artifacts, and
    -- nothing of its save (label, sourceRunId).
    v_copy := jsonb_build_object('id', destination_checkpoint_id, 'threadId', destination_thread_id, 'parentCheckpointId', NULL,
                                 'createdAt', checkpoint_fork.created_at, 'reason', 'fork-root',
                                 'files', v_source -> 'files', 'conversation', v_source -> 'conversation',
                                 'artifacts', v_source -> 'artifacts');
    INSERT INTO sandbox_store.checkpoint_ids (id, thread_id) VALUES (destination_checkpoint_id, destination_thread_id)
    ON CONFLICT ON CONSTRAINT checkpoint_ids_pkey DO NOTHING;
    IF NOT FOUND THEN
        PERFORM sandbox_store_internal._raise('SBC03', format('checkpoint %s already exists', to_jsonb(destination_checkpoint_id)),
            'Checkpoints are immutable: an id is appended once.');
    END IF;
    -- (the same files and artifacts: the same blob keys)
    INSERT INTO sandbox_store.checkpoints (id, thread_id, parent_id, created_at, checkpoint, blob_keys)
    VALUES (destination_checkpoint_id, destination_thread_id, NULL, checkpoint_fork.created_at, v_copy, v_keys);
    INSERT INTO sandbox_store.checkpoint_heads (thread_id, head_id) VALUES (destination_thread_id, destination_checkpoint_id);
    RETURN v_copy;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_fork(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Copy a stored checkpoint as the fork-root (no parent) of an empty thread, atomically, under the destination''s writer, and return the copy; SBC09 if the source does not exist, SBC11 if it is not of the source thread (or the threads are the same), SBC10 if the destination has checkpoints.';

CREATE FUNCTION sandbox_store.checkpoint_get(id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_thread pg_catalog.text;
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF checkpoint_get.id IS NULL OR octet_length(checkpoint_get.id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_get.id, 'checkpoint id', 1024);
    END IF;
    -- The id's thread, then the checkpoint in that thread's rows (on Citus,
    -- two shards: the id's and the thread's).
    SELECT i.thread_id INTO v_thread FROM ONLY sandbox_store.checkpoint_ids i WHERE i.id OPERATOR(pg_catalog.=) checkpoint_get.id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN (SELECT c.checkpoint FROM ONLY sandbox_store.checkpoints c
             WHERE c.thread_id OPERATOR(pg_catalog.=) v_thread AND c.id OPERATOR(pg_catalog.=) checkpoint_get.id);
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_get(pg_catalog.text) IS
'The checkpoint with this id, as appended, or NULL.';

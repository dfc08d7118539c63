CREATE FUNCTION sandbox_store.checkpoint_list(thread_id pg_catalog.text)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF checkpoint_list.thread_id IS NULL OR octet_length(checkpoint_list.thread_id) NOT BETWEEN 1 AND 1000 THEN
        PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_list.thread_id, 'thread id', 1000);
    END IF;
    RETURN QUERY SELECT c.checkpoint FROM ONLY sandbox_store.checkpoints c
                  WHERE c.thread_id OPERATOR(pg_catalog.=) checkpoint_list.thread_id
                  ORDER BY c.created_at, c.id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_list(pg_catalog.text) IS
'The checkpoints of a thread, by createdAt, then id as UTF-8 bytes.';

CREATE FUNCTION sandbox_store.checkpoint_head(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF checkpoint_head.thread_id IS NULL OR octet_length(checkpoint_head.thread_id) NOT BETWEEN 1 AND 1000 THEN
        PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_head.thread_id, 'thread id', 1000);
    END IF;
    RETURN (SELECT h.head_id FROM ONLY sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_head.thread_id);
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_head(pg_catalog.text) IS
'The head checkpoint id of a thread, or NULL.';

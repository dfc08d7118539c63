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
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1000 THEN
        PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    END IF;
    RETURN QUERY SELECT c.checkpoint FROM sandbox_store.checkpoints c
                  WHERE c.thread_id OPERATOR(pg_catalog.=) $1
                  ORDER BY c.created_at, c.id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_list(pg_catalog.text) IS
'The checkpoints of a thread, by createdAt, then id as UTF-8 bytes.';

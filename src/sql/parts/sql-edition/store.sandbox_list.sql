CREATE FUNCTION sandbox_store.sandbox_list(thread_id pg_catalog.text)
RETURNS SETOF sandbox_store.instances
LANGUAGE plpgsql STABLE ROWS 4 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_list.thread_id IS NULL OR octet_length(sandbox_list.thread_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_list.thread_id, 'thread_id');
    END IF;
    RETURN QUERY SELECT i.* FROM ONLY sandbox_store.instances i
                  WHERE i.thread_id OPERATOR(pg_catalog.=) sandbox_list.thread_id
                  ORDER BY i.updated_at DESC, i.key;
END
$$;

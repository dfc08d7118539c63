CREATE FUNCTION sandbox_store.checkpoint_release_writer(
    thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_release_writer.thread_id, 'thread id', 1000);
    UPDATE ONLY sandbox_store.checkpoint_writers w SET owner_token = NULL, lease_expires_at = NULL
     WHERE w.thread_id OPERATOR(pg_catalog.=) checkpoint_release_writer.thread_id
       AND w.owner_token OPERATOR(pg_catalog.=) checkpoint_release_writer.owner_token AND w.fence OPERATOR(pg_catalog.=) checkpoint_release_writer.fence;
    RETURN FOUND;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_release_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8) IS
'End the thread''s writer if owner_token and fence still hold it: true if they did (a stale writer never ends its successor).';

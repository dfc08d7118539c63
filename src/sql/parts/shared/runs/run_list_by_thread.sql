-- RunStore.listByThread.
CREATE FUNCTION sandbox_store.run_list_by_thread(thread_id pg_catalog.text)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_list_by_thread.thread_id, 'thread id', 1000);
    RETURN QUERY
        SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
         WHERE r.thread_id OPERATOR(pg_catalog.=) run_list_by_thread.thread_id
         ORDER BY r.started_at, r.run_id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.run_list_by_thread(pg_catalog.text) IS
'The runs of a thread as RunRecord JSON, by startedAt, then run id as UTF-8 bytes.';

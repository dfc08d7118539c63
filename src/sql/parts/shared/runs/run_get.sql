-- RunStore.get.
CREATE FUNCTION sandbox_store.run_get(run_id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_get.run_id, 'run id', @MAX_TEXT_BYTES@);
    RETURN (SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
             WHERE r.run_id OPERATOR(pg_catalog.=) run_get.run_id);
END
$$;

COMMENT ON FUNCTION sandbox_store.run_get(pg_catalog.text) IS
'The record of the run as RunRecord JSON (fields that are not set are absent), or NULL.';

-- RunStore.listReclaimable: the running runs detached at now - ttl_ms or
-- earlier.
CREATE FUNCTION sandbox_store.run_list_reclaimable(now pg_catalog.float8, ttl_ms pg_catalog.float8)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    cutoff pg_catalog.float8;
BEGIN
    cutoff := sandbox_store_internal._run_number(run_list_reclaimable.now, 'now')
              - sandbox_store_internal._run_number(run_list_reclaimable.ttl_ms, 'ttl_ms');
    RETURN QUERY
        SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
         WHERE r.status OPERATOR(pg_catalog.=) 'running' AND r.detached_since IS NOT NULL
           AND r.detached_since OPERATOR(pg_catalog.<=) cutoff
         ORDER BY r.detached_since, r.run_id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.run_list_reclaimable(pg_catalog.float8, pg_catalog.float8) IS
'The running runs whose detachedSince is at or before now - ttl_ms (epoch ms), as RunRecord JSON, by detachedSince, then run id as UTF-8 bytes.';

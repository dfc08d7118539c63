-- A run as the client's RunRecord: runId, threadId, status and startedAt
-- always; finishedAt, error, usage, sandboxKey, detachedSince,
-- cancelRequested and driverEpoch only when not NULL (absent, never JSON
-- null).  Numbers are the stored float8 values exactly (the function's
-- extra_float_digits makes their text the shortest that reads back as the
-- same float8).
CREATE FUNCTION sandbox_store_internal._run_record(r sandbox_store.runs)
RETURNS pg_catalog.jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 1
AS $$
SELECT pg_catalog.jsonb_build_object(
           'runId', r.run_id, 'threadId', r.thread_id, 'status', r.status, 'startedAt', r.started_at,
           'finishedAt', r.finished_at, 'error', r.error, 'usage', r.usage, 'sandboxKey', r.sandbox_key,
           'detachedSince', r.detached_since, 'cancelRequested', r.cancel_requested,
           'driverEpoch', r.driver_epoch)
       OPERATOR(pg_catalog.-) pg_catalog.array_remove(ARRAY[
           CASE WHEN r.finished_at IS NULL THEN 'finishedAt' END,
           CASE WHEN r.error IS NULL THEN 'error' END,
           CASE WHEN r.usage IS NULL THEN 'usage' END,
           CASE WHEN r.sandbox_key IS NULL THEN 'sandboxKey' END,
           CASE WHEN r.detached_since IS NULL THEN 'detachedSince' END,
           CASE WHEN r.cancel_requested IS NULL THEN 'cancelRequested' END,
           CASE WHEN r.driver_epoch IS NULL THEN 'driverEpoch' END], NULL)
$$;

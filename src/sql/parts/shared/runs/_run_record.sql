-- A run as the client's RunRecord: runId, threadId, status and startedAt
-- always; finishedAt, error, usage, sandboxKey, detachedSince,
-- cancelRequested and driverEpoch only when not NULL (absent, never JSON
-- null).  Numbers are the stored float8 values exactly (the function's
-- extra_float_digits makes their text the shortest that reads back as the
-- same float8).  It takes the columns, not the row: on Citus a whole-row
-- reference in a query on a distributed table becomes the shard's row type,
-- which no function takes.
CREATE FUNCTION sandbox_store_internal._run_record(
    run_id pg_catalog.text, thread_id pg_catalog.text, status pg_catalog.text,
    started_at pg_catalog.float8, finished_at pg_catalog.float8, error pg_catalog.jsonb,
    usage pg_catalog.jsonb, sandbox_key pg_catalog.text, detached_since pg_catalog.float8,
    cancel_requested pg_catalog.bool, driver_epoch pg_catalog.int8)
RETURNS pg_catalog.jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 1
AS $$
SELECT pg_catalog.jsonb_build_object(
           'runId', _run_record.run_id, 'threadId', _run_record.thread_id, 'status', _run_record.status, 'startedAt', _run_record.started_at,
           'finishedAt', _run_record.finished_at, 'error', _run_record.error, 'usage', _run_record.usage, 'sandboxKey', _run_record.sandbox_key,
           'detachedSince', _run_record.detached_since, 'cancelRequested', _run_record.cancel_requested,
           'driverEpoch', _run_record.driver_epoch)
       OPERATOR(pg_catalog.-) pg_catalog.array_remove(ARRAY[
           CASE WHEN _run_record.finished_at IS NULL THEN 'finishedAt' END,
           CASE WHEN _run_record.error IS NULL THEN 'error' END,
           CASE WHEN _run_record.usage IS NULL THEN 'usage' END,
           CASE WHEN _run_record.sandbox_key IS NULL THEN 'sandboxKey' END,
           CASE WHEN _run_record.detached_since IS NULL THEN 'detachedSince' END,
           CASE WHEN _run_record.cancel_requested IS NULL THEN 'cancelRequested' END,
           CASE WHEN _run_record.driver_epoch IS NULL THEN 'driverEpoch' END], NULL)
$$;

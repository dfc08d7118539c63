-- The SQL edition's run_log_append without notify (before 1.7.0 its only
-- form): the one with notify, true (a watched log's append notifies when it
-- commits).  Its comment is in comments.sql; its settings are every run
-- function's.
CREATE FUNCTION sandbox_store.run_log_append(
    run_id pg_catalog.text,
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.int8[]
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
SELECT sandbox_store.run_log_append(run_id, chunks, epoch, true)
$$;

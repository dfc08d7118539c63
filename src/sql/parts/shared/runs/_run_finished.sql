-- Whether a run's status is a finished one (completed, failed or aborted):
-- the one place the SQL of both editions lists them (src/run_log.c has the
-- same list, in run_status_finished).  A LANGUAGE sql expression with no
-- SET clause, so the planner puts it inline where it is called.  NULL for
-- NULL.
CREATE FUNCTION sandbox_store_internal._run_finished(status pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE sql
IMMUTABLE
AS $$
    SELECT _run_finished.status OPERATOR(pg_catalog.=) ANY (ARRAY['completed', 'failed', 'aborted']::pg_catalog.text[])
$$;

-- RunStore.createOrResume: insert the run, or return the existing record
-- unchanged (the other arguments are then ignored, but still checked).
CREATE FUNCTION sandbox_store.run_create_or_resume(
    run_id pg_catalog.text,
    thread_id pg_catalog.text,
    started_at pg_catalog.float8,
    status pg_catalog.text DEFAULT 'running')
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_run sandbox_store.runs;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_create_or_resume.run_id, 'run id', @MAX_TEXT_BYTES@);
    PERFORM sandbox_store_internal._check_id('22023', run_create_or_resume.thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._run_number(run_create_or_resume.started_at, 'startedAt');
    IF run_create_or_resume.status IS NULL
       OR (run_create_or_resume.status NOT IN ('running', 'interrupted')
           AND NOT sandbox_store_internal._run_finished(run_create_or_resume.status)) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid run status',
            format('A status is running, interrupted, completed, failed or aborted; the value given is %s.',
                   COALESCE(to_jsonb(run_create_or_resume.status), 'null')));
    END IF;
    INSERT INTO sandbox_store.runs (run_id, thread_id, status, started_at)
    VALUES (run_create_or_resume.run_id, run_create_or_resume.thread_id, run_create_or_resume.status,
            run_create_or_resume.started_at)
    ON CONFLICT ON CONSTRAINT runs_pkey DO NOTHING;
    SELECT r.* INTO v_run FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) run_create_or_resume.run_id;
    RETURN sandbox_store_internal._run_record(
        v_run.run_id, v_run.thread_id, v_run.status, v_run.started_at, v_run.finished_at, v_run.error, v_run.usage, v_run.sandbox_key, v_run.detached_since, v_run.cancel_requested, v_run.driver_epoch);
END
$$;

COMMENT ON FUNCTION sandbox_store.run_create_or_resume(pg_catalog.text, pg_catalog.text, pg_catalog.float8, pg_catalog.text) IS
'Insert the run (thread, startedAt in epoch ms, status, running by default) and return its record as RunRecord JSON; if the run exists, return its record unchanged (the other arguments are checked, then ignored).';

-- Claim a run for a driver: take the lock of its log row (which every log
-- write holds from before its fence check to its commit), then raise its
-- driver_epoch by one in one compare-and-set UPDATE, and return the new
-- epoch.
CREATE FUNCTION sandbox_store.run_claim(run_id pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
AS $$
DECLARE
    v_epoch pg_catalog.int8;
    v_status pg_catalog.text;
BEGIN
    PERFORM sandbox_store_internal._run_id(run_claim.run_id, 'run id', 1024);
    -- The run's log row first (made, empty, if the run has none), locked:
    -- a log write in flight holds it, so the claim waits for it to commit,
    -- and every later write reads the new epoch after taking it.
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_claim.run_id, 0, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at;
    UPDATE ONLY sandbox_store.runs r
       SET driver_epoch = COALESCE(r.driver_epoch, 0) OPERATOR(pg_catalog.+) 1
     WHERE r.run_id OPERATOR(pg_catalog.=) run_claim.run_id
       AND r.status OPERATOR(pg_catalog.<>) ALL (ARRAY['completed', 'failed', 'aborted'])
    RETURNING r.driver_epoch INTO v_epoch;
    IF v_epoch IS NULL THEN
        SELECT r.status INTO v_status FROM ONLY sandbox_store.runs r
         WHERE r.run_id OPERATOR(pg_catalog.=) run_claim.run_id;
        IF v_status IS NULL THEN
            PERFORM sandbox_store_internal._run_raise('SBR01', format('run %s does not exist', to_jsonb(run_claim.run_id)),
                'Only a run that run_create_or_resume made can be claimed.');
        END IF;
        PERFORM sandbox_store_internal._run_raise('SBR02', format('run %s is finished', to_jsonb(run_claim.run_id)),
            format('Its status is %s; a finished run cannot be claimed.', v_status));
    END IF;
    RETURN v_epoch;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_claim(pg_catalog.text) IS
'Claim the run for a driver: its driver epoch goes up by one (from 1), and the new epoch is returned; writes carrying an older epoch, or none, are refused (SB001) from then on. SBR01 if the run does not exist, SBR02 if its status is completed, failed or aborted.';

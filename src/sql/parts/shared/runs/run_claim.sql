-- Claim a run for a driver: take the lock of its log row (which every log
-- write holds from before its fence check to its commit), then the runs
-- row's, and give the run a new driver epoch: the highest it ever had (its
-- max_driver_epoch, which a clear of driver_epoch keeps; 0 if none) plus a
-- number drawn from fence_seq, as a sandbox claim draws its fence.  The
-- drawn number is never drawn again, even after a crash that loses this
-- transaction (the WAL that covers it is flushed before it is returned),
-- and the highest epoch never goes down, so an epoch once returned is
-- never returned again for the run; and a run's epoch, which a run_update
-- patch may raise to any number, never moves the sequence.
CREATE FUNCTION sandbox_store.run_claim(run_id pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_epoch pg_catalog.int8;
    v_highest pg_catalog.int8;
    v_next pg_catalog.numeric;
    v_status pg_catalog.text;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_claim.run_id, 'run id', @MAX_TEXT_BYTES@);
    -- The run's log row first (made, empty, if the run has none), locked:
    -- a log write in flight holds it, so the claim waits for it to commit,
    -- and every later write reads the new epoch after taking it.
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_claim.run_id, 0, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at;
    SELECT r.status, r.max_driver_epoch INTO v_status, v_highest
      FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) run_claim.run_id
       FOR UPDATE;
    IF v_status IS NULL THEN
        PERFORM sandbox_store_internal._raise('SBR01', format('run %s does not exist', to_jsonb(run_claim.run_id)),
            'Only a run that run_create_or_resume made can be claimed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_claim.run_id)),
            format('Its status is %s; a finished run cannot be claimed.', v_status));
    END IF;
    v_next := COALESCE(v_highest, 0)::pg_catalog.numeric + sandbox_store_internal._draw_claim_fence(0);
    IF v_next > 9007199254740991 THEN
        PERFORM sandbox_store_internal._raise('22003', format('no driver epoch is left for run %s', to_jsonb(run_claim.run_id)),
            format('The next epoch would be %s, past 9007199254740991 (2^53 - 1), the greatest epoch.  Nothing was changed.', v_next));
    END IF;
    v_epoch := v_next;
    -- (made durable by its commit too, whatever the session's
    -- synchronous_commit: a claim the caller saw commit is never lost)
    PERFORM sandbox_store_internal._run_durable();
    UPDATE ONLY sandbox_store.runs r SET driver_epoch = v_epoch, max_driver_epoch = v_epoch
     WHERE r.run_id OPERATOR(pg_catalog.=) run_claim.run_id;
    RETURN v_epoch;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_claim(pg_catalog.text) IS
'Claim the run for a driver: it gets a new driver epoch, greater than any it had and never returned again for the run (not even after a crash): the highest epoch it ever had (a cleared one included) plus a number drawn from sandbox_store.fence_seq. The new epoch is returned; writes carrying an older epoch, or none, are refused (SB001) from then on. SBR01 if the run does not exist, SBR02 if its status is completed, failed or aborted.';

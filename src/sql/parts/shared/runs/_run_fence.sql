-- The fence of a log write (append, upsert, close) of run_id, called with
-- the log row locked: reads the runs row (a claim takes the log row's lock
-- before it raises the epoch, so it waits for the write's transaction, or
-- the write, which read after the lock, sees the claim) and raises SB001
-- unless the write may go on:
-- without an epoch, while the run has no runs row or was never claimed (a
-- cleared epoch does not count: the highest it had is kept); with one, when
-- it is the run's current driver_epoch.  Returns the run's status (NULL
-- without a runs row).
CREATE FUNCTION sandbox_store_internal._run_fence(run_id pg_catalog.text, epoch pg_catalog.int8)
RETURNS pg_catalog.text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_status pg_catalog.text;
    v_epoch pg_catalog.int8;
    v_highest pg_catalog.int8;
BEGIN
    SELECT r.status, r.driver_epoch, r.max_driver_epoch INTO v_status, v_epoch, v_highest
      FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) _run_fence.run_id;
    IF epoch IS NULL AND v_highest IS NOT NULL
       OR epoch IS NOT NULL AND v_epoch IS DISTINCT FROM epoch THEN
        PERFORM sandbox_store_internal._run_stale(_run_fence.run_id, epoch, v_epoch, v_highest, v_status IS NOT NULL);
    END IF;
    RETURN v_status;
END
$$;

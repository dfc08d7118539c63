-- Close the log of run_id (making a closed, empty log if it has none): true
-- if this call closed it, false if it was closed already.  Fenced like the
-- other log writes; a finished run's log may be closed.
CREATE FUNCTION sandbox_store.run_log_close(
    run_id pg_catalog.text,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_closed pg_catalog.timestamptz;
    v_watched pg_catalog.bool;
    v_now pg_catalog.timestamptz;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_close.run_id, 'run id', @MAX_TEXT_BYTES@);
    IF run_log_close.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_close.epoch));
    END IF;
    -- The log row, locked, then the fence.
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_close.run_id, 0, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at
    RETURNING l.closed_at, l.watched INTO v_closed, v_watched;
    PERFORM sandbox_store_internal._run_fence(run_log_close.run_id, run_log_close.epoch);
    IF v_closed IS NOT NULL THEN
        RETURN false;
    END IF;
    -- The time as a value, not a call in the UPDATE (Citus refuses a
    -- volatile function there).
    v_now := clock_timestamp();
    UPDATE ONLY sandbox_store.run_logs l SET closed_at = v_now, updated_at = v_now
     WHERE l.run_id OPERATOR(pg_catalog.=) run_log_close.run_id;
    IF v_watched THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_close.run_id);
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_close(pg_catalog.text, pg_catalog.int8) IS
'Close the run''s log (a run without one gets a closed, empty log): true if this call closed it, false if it was closed already. Fenced like run_log_append (SB001); the log of a finished run may be closed. Notifies channel sandbox_store_run_log if a reader watches the log (run_log_watch).';

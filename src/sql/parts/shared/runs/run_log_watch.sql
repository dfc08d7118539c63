-- A reader's start: mark the log of run_id watched (making an open, empty
-- log if it has none) and return its tail and whether it is closed, as
-- run_log_status does.  The reader LISTENs on sandbox_store_run_log first:
-- the mark is made under the log row's lock, so every write that commits
-- after it sees the mark and notifies, and every write before it had
-- committed, and is read, when this returns.
CREATE FUNCTION sandbox_store.run_log_watch(run_id pg_catalog.text)
RETURNS TABLE (last_seq pg_catalog.int8, closed pg_catalog.bool)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_watch.run_id, 'run id', @MAX_TEXT_BYTES@);
    RETURN QUERY
        INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at, watched)
        VALUES (run_log_watch.run_id, 0, clock_timestamp(), true)
        ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET watched = true
        RETURNING l.last_seq, l.closed_at IS NOT NULL;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_watch(pg_catalog.text) IS
'Start reading the run''s log: mark it watched (an open, empty log is made if it has none) and return its greatest seq (0: none) and whether it is closed. From then on every write of the log notifies channel sandbox_store_run_log with the run id; LISTEN on it before calling this, and no write is missed.';

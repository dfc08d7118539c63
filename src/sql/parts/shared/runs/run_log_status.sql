-- The tail of the log of run_id and whether it is closed; no row without a
-- log.
CREATE FUNCTION sandbox_store.run_log_status(run_id pg_catalog.text)
RETURNS TABLE (last_seq pg_catalog.int8, closed pg_catalog.bool)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_status.run_id, 'run id', @MAX_TEXT_BYTES@);
    RETURN QUERY
        SELECT l.last_seq, l.closed_at IS NOT NULL FROM ONLY sandbox_store.run_logs l
         WHERE l.run_id OPERATOR(pg_catalog.=) run_log_status.run_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_status(pg_catalog.text) IS
'The greatest seq stored in the run''s log (0: none) and whether the log is closed: one row, or none when the run has no log.';

-- The entries of the log of run_id after seq after, in seq order, at most
-- max_rows of them (NULL: all).  Never waits for a writer.
CREATE FUNCTION sandbox_store.run_log_read(
    run_id pg_catalog.text,
    after pg_catalog.int8 DEFAULT 0,
    max_rows pg_catalog.int4 DEFAULT NULL)
RETURNS TABLE (seq pg_catalog.int8, chunk pg_catalog.jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_read.run_id, 'run id', @MAX_TEXT_BYTES@);
    IF run_log_read.after IS NULL OR run_log_read.after < 0 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid after',
            format('after is a seq, 0 or more (0: from the start); the value given is %s.',
                   COALESCE(run_log_read.after::pg_catalog.text, 'missing')));
    END IF;
    IF run_log_read.max_rows < 0 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid max_rows',
            format('max_rows is 0 or more, or NULL for all; the value given is %s.', run_log_read.max_rows));
    END IF;
    RETURN QUERY
        SELECT e.seq, e.chunk FROM ONLY sandbox_store.run_log_entries e
         WHERE e.run_id OPERATOR(pg_catalog.=) run_log_read.run_id
           AND e.seq OPERATOR(pg_catalog.>) run_log_read.after
         ORDER BY e.seq
         LIMIT run_log_read.max_rows;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_read(pg_catalog.text, pg_catalog.int8, pg_catalog.int4) IS
'The entries of the run''s log with seq above after, in seq order, at most max_rows (NULL: all). Never waits for a writer.';

-- Wake the readers of logs written with notify false, after the writes
-- committed: notify channel sandbox_store_run_log once for each given run
-- whose log is watched, and return how many were notified.  The read needs
-- no lock: at READ COMMITTED its snapshot is taken after the writes
-- committed (before this call), so a reader's run_log_watch that it does
-- not see commits after them, and the reader's first read after that sees
-- them.  At REPEATABLE READ or SERIALIZABLE the transaction's snapshot may
-- be older than the writes and the mark: every run named is notified,
-- watched or not (a reader ignores a wake it did not need; it must never
-- miss one).
CREATE FUNCTION sandbox_store.run_log_wake(VARIADIC run_ids pg_catalog.text[])
RETURNS pg_catalog.int4
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_id pg_catalog.text;
    n pg_catalog.int4 := 0;
BEGIN
    IF run_log_wake.run_ids IS NULL THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid run ids',
            'run_ids is an array of run ids; the value given is missing.');
    END IF;
    FOREACH v_id IN ARRAY run_log_wake.run_ids LOOP
        PERFORM sandbox_store_internal._check_id('22023', v_id, 'run id', @MAX_TEXT_BYTES@);
    END LOOP;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        FOR v_id IN SELECT DISTINCT u.id FROM unnest(run_log_wake.run_ids) AS u(id) LOOP
            PERFORM pg_notify('sandbox_store_run_log', v_id);
            n := n + 1;
        END LOOP;
        RETURN n;
    END IF;
    FOR v_id IN
        SELECT l.run_id
          FROM ONLY sandbox_store.run_logs l
         WHERE l.run_id OPERATOR(pg_catalog.=) ANY (run_log_wake.run_ids)
           AND l.watched
    LOOP
        PERFORM pg_notify('sandbox_store_run_log', v_id);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_wake(pg_catalog.text[]) IS
'Wake the readers of the given runs'' logs after writes made with notify false committed: notifies channel sandbox_store_run_log with each run id whose log a reader watches (run_log_watch), and returns how many; at REPEATABLE READ or SERIALIZABLE, every run id given (the snapshot may predate the writes). Call it after the commit, never in the writing transaction (there it would notify at the same commit and gain nothing).';

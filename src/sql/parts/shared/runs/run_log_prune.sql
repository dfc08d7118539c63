-- Delete the logs that are finished and quiet (the log row and its
-- entries): closed at least older_than ago, or open with a runs row whose
-- status is terminal and last written at least older_than ago, or open,
-- empty and without a runs row (a reader's run_log_watch made it) and made
-- at least older_than ago.  Any other open log is kept; run
-- records are never deleted.  At most max_logs (NULL: no limit), oldest
-- first; logs another transaction has locked are skipped.
CREATE FUNCTION sandbox_store.run_log_prune(
    older_than pg_catalog.interval,
    max_logs pg_catalog.int4 DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    cutoff pg_catalog.timestamptz;
    pruned pg_catalog.int8;
    candidates pg_catalog.text[];
    v_run pg_catalog.text;
    v_batch pg_catalog.int4;
    v_last_touched pg_catalog.timestamptz;
    v_last_run pg_catalog.text;
BEGIN
    IF run_log_prune.older_than IS NULL OR run_log_prune.older_than < '0'::pg_catalog.interval
       OR NOT isfinite(run_log_prune.older_than) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid older_than',
            format('older_than is a finite interval, 0 or more; the value given is %s.',
                   COALESCE(run_log_prune.older_than::pg_catalog.text, 'missing')));
    END IF;
    IF run_log_prune.max_logs < 0 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid max_logs',
            format('max_logs is 0 or more, or NULL for no limit; the value given is %s.', run_log_prune.max_logs));
    END IF;
    cutoff := clock_timestamp() - run_log_prune.older_than;
    -- Two steps, so that no statement locks rows of more than one run (Citus
    -- cannot lock rows across shards): the logs last touched at the cutoff
    -- or before, oldest first, read without a lock, a batch at a time (as
    -- many as max_logs, at most 100000, each batch after the last one read);
    -- then each one locked if no other transaction holds it, checked against
    -- the rules above and deleted with its entries, in one statement on its
    -- own run, until max_logs are gone or no candidate is left.
    pruned := 0;
    v_batch := LEAST(COALESCE(run_log_prune.max_logs, 100000), 100000);
    WHILE v_batch OPERATOR(pg_catalog.>) 0
          AND (run_log_prune.max_logs IS NULL OR pruned OPERATOR(pg_catalog.<) run_log_prune.max_logs) LOOP
        SELECT pg_catalog.array_agg(c.run_id ORDER BY c.touched, c.run_id COLLATE "C"),
               (pg_catalog.array_agg(c.touched ORDER BY c.touched DESC, c.run_id COLLATE "C" DESC))[1],
               (pg_catalog.array_agg(c.run_id ORDER BY c.touched DESC, c.run_id COLLATE "C" DESC))[1]
          INTO candidates, v_last_touched, v_last_run
          FROM (SELECT l.run_id, COALESCE(l.closed_at, l.updated_at) AS touched
                  FROM ONLY sandbox_store.run_logs l
                 WHERE COALESCE(l.closed_at, l.updated_at) OPERATOR(pg_catalog.<=) cutoff
                   AND (v_last_touched IS NULL
                        OR COALESCE(l.closed_at, l.updated_at) OPERATOR(pg_catalog.>) v_last_touched
                        OR (COALESCE(l.closed_at, l.updated_at) OPERATOR(pg_catalog.=) v_last_touched
                            AND l.run_id COLLATE "C" OPERATOR(pg_catalog.>) v_last_run COLLATE "C"))
                 ORDER BY COALESCE(l.closed_at, l.updated_at), l.run_id COLLATE "C"
                 LIMIT v_batch) c;
        EXIT WHEN candidates IS NULL;
        FOREACH v_run IN ARRAY candidates LOOP
            EXIT WHEN pruned OPERATOR(pg_catalog.>=) run_log_prune.max_logs;
            WITH victim AS (
                SELECT l.run_id FROM ONLY sandbox_store.run_logs l
                 WHERE l.run_id OPERATOR(pg_catalog.=) v_run
                   AND ((l.closed_at IS NOT NULL AND l.closed_at OPERATOR(pg_catalog.<=) cutoff)
                     OR (l.closed_at IS NULL AND l.updated_at OPERATOR(pg_catalog.<=) cutoff
                         AND EXISTS (SELECT FROM ONLY sandbox_store.runs r
                                      WHERE r.run_id OPERATOR(pg_catalog.=) v_run
                                        AND sandbox_store_internal._run_finished(r.status)))
                     OR (l.closed_at IS NULL AND l.last_seq OPERATOR(pg_catalog.=) 0
                         AND l.updated_at OPERATOR(pg_catalog.<=) cutoff
                         AND NOT EXISTS (SELECT FROM ONLY sandbox_store.runs r
                                          WHERE r.run_id OPERATOR(pg_catalog.=) v_run)))
                   FOR UPDATE OF l SKIP LOCKED
            ), entries AS (
                DELETE FROM ONLY sandbox_store.run_log_entries e USING victim v
                 WHERE e.run_id OPERATOR(pg_catalog.=) v_run AND e.run_id OPERATOR(pg_catalog.=) v.run_id
            ), logs AS (
                DELETE FROM ONLY sandbox_store.run_logs l USING victim v
                 WHERE l.run_id OPERATOR(pg_catalog.=) v_run AND l.run_id OPERATOR(pg_catalog.=) v.run_id
                RETURNING l.run_id
            )
            SELECT pruned OPERATOR(pg_catalog.+) count(*) INTO pruned FROM logs;
        END LOOP;
        EXIT WHEN pg_catalog.cardinality(candidates) OPERATOR(pg_catalog.<) v_batch;
    END LOOP;
    RETURN pruned;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_prune(pg_catalog.interval, pg_catalog.int4) IS
'Delete the run logs (log and entries) that are finished and quiet: closed at least older_than ago, or open, of a run whose status is completed, failed or aborted, and last written at least older_than ago, or open, empty and of no run record (made by a reader) at least older_than ago. Any other open log is kept; run records are never deleted. At most max_logs (NULL: no limit), oldest first, skipping logs another transaction holds. Returns how many were deleted.';

-- sandbox_store, SQL edition: from 1.7.2 to 1.8.0 (the pg_tle update path,
-- and with src/sql/build.sh plain-update, the plain script's update).

-- 1.8.0: distribute() also distributes the run tables and delegates the
-- single-run functions; the run functions are written so that Citus can run
-- them (the internal _run_record takes a run's columns instead of its row,
-- run_log_close reads the time before its UPDATE, run_log_prune locks one
-- run at a time).  Every run function is made again with 1.8.0's body
-- (CREATE OR REPLACE keeps each interface function's grants and comment).

-- A claim of a run (run_claim, or run_update raising driverEpoch) commits
-- durably whatever the session's synchronous_commit: off is raised to
-- local for the rest of the transaction, so a claim whose commit the
-- caller saw is never lost in a crash (another claim would then be given
-- the same number by run_update's patch, or the previous driver would go
-- on while the caller believes it drives the run).
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_durable()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'local', true);
    END IF;
END
$$;

-- The fence of a log write (append, upsert, close) of run_id, called with
-- the log row locked: reads the runs row (a claim takes the log row's lock
-- before it raises the epoch, so it waits for the write's transaction, or
-- the write, which read after the lock, sees the claim) and raises SB001
-- unless the write may go on:
-- without an epoch, while the run has no runs row or was never claimed (a
-- cleared epoch does not count: the highest it had is kept); with one, when
-- it is the run's current driver_epoch.  Returns the run's status (NULL
-- without a runs row).
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_fence(run_id pg_catalog.text, epoch pg_catalog.int8)
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

-- Whether a run's status is a finished one (completed, failed or aborted):
-- the one place the SQL of both editions lists them (src/run_log.c has the
-- same list, in run_status_finished).  A LANGUAGE sql expression with no
-- SET clause, so the planner puts it inline where it is called.  NULL for
-- NULL.
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_finished(status pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE sql
IMMUTABLE
AS $$
    SELECT _run_finished.status OPERATOR(pg_catalog.=) ANY (ARRAY['completed', 'failed', 'aborted']::pg_catalog.text[])
$$;

-- 22003 for an append of n entries to the log of run_id whose last seq is
-- last, when they would take seqs past 2^53 - 1 (the largest whole number a
-- JavaScript number holds exactly, an offset's position in the client).
-- Only run_log_upsert brings a tail that near the end.
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_log_full(run_id pg_catalog.text, last pg_catalog.int8,
                                                    n pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'numeric_value_out_of_range',
        MESSAGE = format('the log of run %s is full', to_jsonb(_run_log_full.run_id)),
        DETAIL = format('Its last seq is %s, and the entries appended would end at seq %s, past 9007199254740991 (2^53 - 1), the greatest seq.  Nothing was changed.',
                        last, last OPERATOR(pg_catalog.+) n),
        HINT = 'A log reaches its end only through run_log_upsert of a seq near it; close the log.';
END
$$;

-- A time in epoch milliseconds, as the client's JavaScript number: a finite
-- float8 (NaN and the infinities are refused, 22023).  what names the
-- argument or the patch key in the error.
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_number(v pg_catalog.float8, what pg_catalog.text)
RETURNS pg_catalog.float8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF v IS NULL OR v = 'NaN'::pg_catalog.float8
       OR v = 'Infinity'::pg_catalog.float8
       OR v = '-Infinity'::pg_catalog.float8 THEN
        PERFORM sandbox_store_internal._raise('22023', format('invalid %s', what),
            format('%s is a finite number; the value given is %s.', what, COALESCE(v::pg_catalog.text, 'missing')));
    END IF;
    RETURN v;
END
$$;

-- The value of key in a run_update patch that must be a finite number (a
-- JSON number that a float8 holds) or null (returned as NULL); 22023
-- otherwise.
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_patch_number(patch pg_catalog.jsonb, key pg_catalog.text)
RETURNS pg_catalog.float8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v pg_catalog.jsonb := patch -> key;
BEGIN
    IF jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) = 'number' THEN
        BEGIN
            RETURN (patch ->> key)::pg_catalog.float8;
        EXCEPTION WHEN numeric_value_out_of_range THEN
            NULL;
        END;
    END IF;
    PERFORM sandbox_store_internal._raise('22023', format('invalid patch key %s', key),
        format('%s is a number of milliseconds (a finite JavaScript number) or null; the value given is %s.', key,
               CASE WHEN jsonb_typeof(v) OPERATOR(pg_catalog.=) 'number' THEN 'a number out of range' ELSE v::pg_catalog.text END));
    RETURN NULL;
END
$$;

-- A run as the client's RunRecord: runId, threadId, status and startedAt
-- always; finishedAt, error, usage, sandboxKey, detachedSince,
-- cancelRequested and driverEpoch only when not NULL (absent, never JSON
-- null).  Numbers are the stored float8 values exactly (the function's
-- extra_float_digits makes their text the shortest that reads back as the
-- same float8).  It takes the columns, not the row: on Citus a whole-row
-- reference in a query on a distributed table becomes the shard's row type,
-- which no function takes.
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_record(
    run_id pg_catalog.text, thread_id pg_catalog.text, status pg_catalog.text,
    started_at pg_catalog.float8, finished_at pg_catalog.float8, error pg_catalog.jsonb,
    usage pg_catalog.jsonb, sandbox_key pg_catalog.text, detached_since pg_catalog.float8,
    cancel_requested pg_catalog.bool, driver_epoch pg_catalog.int8)
RETURNS pg_catalog.jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 1
AS $$
SELECT pg_catalog.jsonb_build_object(
           'runId', _run_record.run_id, 'threadId', _run_record.thread_id, 'status', _run_record.status, 'startedAt', _run_record.started_at,
           'finishedAt', _run_record.finished_at, 'error', _run_record.error, 'usage', _run_record.usage, 'sandboxKey', _run_record.sandbox_key,
           'detachedSince', _run_record.detached_since, 'cancelRequested', _run_record.cancel_requested,
           'driverEpoch', _run_record.driver_epoch)
       OPERATOR(pg_catalog.-) pg_catalog.array_remove(ARRAY[
           CASE WHEN _run_record.finished_at IS NULL THEN 'finishedAt' END,
           CASE WHEN _run_record.error IS NULL THEN 'error' END,
           CASE WHEN _run_record.usage IS NULL THEN 'usage' END,
           CASE WHEN _run_record.sandbox_key IS NULL THEN 'sandboxKey' END,
           CASE WHEN _run_record.detached_since IS NULL THEN 'detachedSince' END,
           CASE WHEN _run_record.cancel_requested IS NULL THEN 'cancelRequested' END,
           CASE WHEN _run_record.driver_epoch IS NULL THEN 'driverEpoch' END], NULL)
$$;

-- SB001 for a write of run_id that carried epoch given (NULL: none) while
-- the run's driver_epoch is current_epoch (NULL: none) and the highest
-- epoch it ever had is highest (NULL: never claimed; has_record: whether
-- the run has a runs row).
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_stale(run_id pg_catalog.text, given pg_catalog.int8,
                                                 current_epoch pg_catalog.int8, highest pg_catalog.int8,
                                                 has_record pg_catalog.bool)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sandbox_store_internal._raise('SB001',
        format('the driver epoch of run %s is not current', to_jsonb(_run_stale.run_id)),
        CASE WHEN given IS NULL AND current_epoch IS NOT NULL
             THEN format('The write carried no epoch, and a driver has claimed the run: its current epoch is %s.  Nothing was changed.',
                         current_epoch)
             WHEN given IS NULL
             THEN format('The write carried no epoch, and a driver has claimed the run: its epoch was cleared (the highest it had is %s).  Nothing was changed.',
                         highest)
             WHEN NOT has_record
             THEN format('The write carried epoch %s, and the run has no record: it was never claimed (no current epoch).  Nothing was changed.',
                         given)
             WHEN current_epoch IS NULL AND highest IS NOT NULL
             THEN format('The write carried epoch %s, and the run has no current epoch: it was cleared (the highest it had is %s).  Nothing was changed.',
                         given, highest)
             WHEN current_epoch IS NULL
             THEN format('The write carried epoch %s, and the run was never claimed (no current epoch).  Nothing was changed.',
                         given)
             ELSE format('The write carried epoch %s; the current epoch is %s.  Nothing was changed.', given, current_epoch) END);
END
$$;

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
CREATE OR REPLACE FUNCTION sandbox_store.run_claim(run_id pg_catalog.text)
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
    PERFORM sandbox_store_internal._check_id('22023', run_claim.run_id, 'run id', 1024);
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

-- RunStore.createOrResume: insert the run, or return the existing record
-- unchanged (the other arguments are then ignored, but still checked).
CREATE OR REPLACE FUNCTION sandbox_store.run_create_or_resume(
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
    PERFORM sandbox_store_internal._check_id('22023', run_create_or_resume.run_id, 'run id', 1024);
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

-- RunStore.findActiveRun.
CREATE OR REPLACE FUNCTION sandbox_store.run_find_active(thread_id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_find_active.thread_id, 'thread id', 1000);
    RETURN (SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
             WHERE r.thread_id OPERATOR(pg_catalog.=) run_find_active.thread_id
               AND r.status OPERATOR(pg_catalog.=) 'running'
             ORDER BY r.started_at DESC, r.run_id COLLATE "C" DESC
             LIMIT 1);
END
$$;

COMMENT ON FUNCTION sandbox_store.run_find_active(pg_catalog.text) IS
'The running run of a thread with the latest startedAt (ties: the greatest run id as UTF-8 bytes) as RunRecord JSON, or NULL.';

-- RunStore.get.
CREATE OR REPLACE FUNCTION sandbox_store.run_get(run_id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_get.run_id, 'run id', 1024);
    RETURN (SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
             WHERE r.run_id OPERATOR(pg_catalog.=) run_get.run_id);
END
$$;

COMMENT ON FUNCTION sandbox_store.run_get(pg_catalog.text) IS
'The record of the run as RunRecord JSON (fields that are not set are absent), or NULL.';

-- RunStore.listByThread.
CREATE OR REPLACE FUNCTION sandbox_store.run_list_by_thread(thread_id pg_catalog.text)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_list_by_thread.thread_id, 'thread id', 1000);
    RETURN QUERY
        SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
         WHERE r.thread_id OPERATOR(pg_catalog.=) run_list_by_thread.thread_id
         ORDER BY r.started_at, r.run_id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.run_list_by_thread(pg_catalog.text) IS
'The runs of a thread as RunRecord JSON, by startedAt, then run id as UTF-8 bytes.';

-- RunStore.listReclaimable: the running runs detached at now - ttl_ms or
-- earlier.
CREATE OR REPLACE FUNCTION sandbox_store.run_list_reclaimable(now pg_catalog.float8, ttl_ms pg_catalog.float8)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    cutoff pg_catalog.float8;
BEGIN
    cutoff := sandbox_store_internal._run_number(run_list_reclaimable.now, 'now')
              - sandbox_store_internal._run_number(run_list_reclaimable.ttl_ms, 'ttl_ms');
    RETURN QUERY
        SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
         WHERE r.status OPERATOR(pg_catalog.=) 'running' AND r.detached_since IS NOT NULL
           AND r.detached_since OPERATOR(pg_catalog.<=) cutoff
         ORDER BY r.detached_since, r.run_id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.run_list_reclaimable(pg_catalog.float8, pg_catalog.float8) IS
'The running runs whose detachedSince is at or before now - ttl_ms (epoch ms), as RunRecord JSON, by detachedSince, then run id as UTF-8 bytes.';

-- Close the log of run_id (making a closed, empty log if it has none): true
-- if this call closed it, false if it was closed already.  Fenced like the
-- other log writes; a finished run's log may be closed.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_close(
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
    PERFORM sandbox_store_internal._check_id('22023', run_log_close.run_id, 'run id', 1024);
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

-- Delete the logs that are finished and quiet (the log row and its
-- entries): closed at least older_than ago, or open with a runs row whose
-- status is terminal and last written at least older_than ago, or open,
-- empty and without a runs row (a reader's run_log_watch made it) and made
-- at least older_than ago.  Any other open log is kept; run
-- records are never deleted.  At most max_logs (NULL: no limit), oldest
-- first; logs another transaction has locked are skipped.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_prune(
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

-- The entries of the log of run_id after seq after, in seq order, at most
-- max_rows of them (NULL: all).  Never waits for a writer.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_read(
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
    PERFORM sandbox_store_internal._check_id('22023', run_log_read.run_id, 'run id', 1024);
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

-- The tail of the log of run_id and whether it is closed; no row without a
-- log.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_status(run_id pg_catalog.text)
RETURNS TABLE (last_seq pg_catalog.int8, closed pg_catalog.bool)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_status.run_id, 'run id', 1024);
    RETURN QUERY
        SELECT l.last_seq, l.closed_at IS NOT NULL FROM ONLY sandbox_store.run_logs l
         WHERE l.run_id OPERATOR(pg_catalog.=) run_log_status.run_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_status(pg_catalog.text) IS
'The greatest seq stored in the run''s log (0: none) and whether the log is closed: one row, or none when the run has no log.';

-- Write entries at given seqs: seqs[i] pairs with chunks -> (i - 1).  A seq
-- already stored is replaced; a new one must come after the tail and after
-- every preceding new seq of the batch; none may repeat (SBR03, the whole
-- batch checked before anything is written).
CREATE OR REPLACE FUNCTION sandbox_store.run_log_upsert(
    run_id pg_catalog.text,
    seqs pg_catalog.int8[],
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.int8[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    n pg_catalog.int8;
    objects pg_catalog.bool;
    bad pg_catalog.int8;
    v_last pg_catalog.int8;
    v_closed pg_catalog.timestamptz;
    v_status pg_catalog.text;
    v_watched pg_catalog.bool;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_upsert.run_id, 'run id', 1024);
    IF jsonb_typeof(run_log_upsert.chunks) IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            format('chunks is a JSON array of JSON objects; the value given is %s.',
                   COALESCE(jsonb_typeof(run_log_upsert.chunks), 'missing')));
    END IF;
    SELECT count(*), COALESCE(bool_and(jsonb_typeof(c) OPERATOR(pg_catalog.=) 'object'), true)
      INTO n, objects
      FROM jsonb_array_elements(run_log_upsert.chunks) c;
    IF NOT objects THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            'chunks is a JSON array of JSON objects; an element is not an object.');
    END IF;
    IF run_log_upsert.seqs IS NULL OR COALESCE(cardinality(run_log_upsert.seqs), 0) <> n THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid seqs',
            format('seqs pairs one seq with each chunk: %s seqs were given for %s chunks.',
                   COALESCE(cardinality(run_log_upsert.seqs)::pg_catalog.text, 'no'), n));
    END IF;
    -- (at most 2^53 - 1: an offset's position is a JavaScript number, and
    -- the log's tail must stay far from bigint's end, or no append could
    -- follow)
    IF EXISTS (SELECT FROM unnest(run_log_upsert.seqs) s
                WHERE s IS NULL OR s OPERATOR(pg_catalog.<) 1 OR s OPERATOR(pg_catalog.>) 9007199254740991) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid seqs',
            'A seq is a whole number from 1 to 9007199254740991; seqs has a NULL, a smaller or a larger one.');
    END IF;
    IF run_log_upsert.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_upsert.epoch));
    END IF;
    IF n = 0 THEN
        PERFORM sandbox_store_internal._run_fence(run_log_upsert.run_id, run_log_upsert.epoch);
        RETURN '{}'::pg_catalog.int8[];
    END IF;

    -- The log row, locked (its last_seq as it was), then the fence.
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_upsert.run_id, 0, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = EXCLUDED.updated_at
    RETURNING l.last_seq, l.closed_at, l.watched INTO v_last, v_closed, v_watched;
    v_status := sandbox_store_internal._run_fence(run_log_upsert.run_id, run_log_upsert.epoch);
    IF v_closed IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('the log of run %s is closed', to_jsonb(run_log_upsert.run_id)),
            'A closed log takes no more entries.  Nothing was changed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_log_upsert.run_id)),
            format('Its status is %s: its log takes no more entries.  Nothing was changed.', v_status));
    END IF;

    SELECT s INTO bad FROM unnest(run_log_upsert.seqs) s GROUP BY s HAVING count(*) OPERATOR(pg_catalog.>) 1
     ORDER BY s LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR03', 'invalid log offset',
            format('Seq %s is repeated in the batch; each may appear once.  Nothing was changed.', bad));
    END IF;
    -- A seq not stored must be above the tail and above every preceding new
    -- seq of the batch.
    SELECT y.s INTO bad FROM (
        SELECT x.i, x.s, x.stored,
               max(x.s) FILTER (WHERE NOT x.stored)
                   OVER (ORDER BY x.i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_it
          FROM (SELECT u.i, u.s,
                       EXISTS (SELECT FROM ONLY sandbox_store.run_log_entries e
                                WHERE e.run_id OPERATOR(pg_catalog.=) run_log_upsert.run_id
                                  AND e.seq OPERATOR(pg_catalog.=) u.s) AS stored
                  FROM unnest(run_log_upsert.seqs) WITH ORDINALITY u(s, i)) x) y
     WHERE NOT y.stored AND y.s OPERATOR(pg_catalog.<=) GREATEST(v_last, y.before_it)
     ORDER BY y.i LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR03', 'invalid log offset',
            format('Seq %s is not stored, and it is not after the tail (%s) and every preceding new seq of the batch.  Nothing was changed.',
                   bad, v_last));
    END IF;

    INSERT INTO sandbox_store.run_log_entries AS e (run_id, seq, chunk)
    SELECT run_log_upsert.run_id, x.s, x.c
      FROM ROWS FROM (unnest(run_log_upsert.seqs), jsonb_array_elements(run_log_upsert.chunks)) x(s, c)
    ON CONFLICT ON CONSTRAINT run_log_entries_pkey DO UPDATE SET chunk = EXCLUDED.chunk;
    UPDATE ONLY sandbox_store.run_logs l
       SET last_seq = GREATEST(l.last_seq, (SELECT max(s) FROM unnest(run_log_upsert.seqs) s))
     WHERE l.run_id OPERATOR(pg_catalog.=) run_log_upsert.run_id;
    IF v_watched THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_upsert.run_id);
    END IF;
    RETURN run_log_upsert.seqs;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_upsert(pg_catalog.text, pg_catalog.int8[], pg_catalog.jsonb, pg_catalog.int8) IS
'Write chunks at the given seqs of the run''s log (seqs[i] with the i-th chunk) and return the seqs: a seq already stored is replaced, a new one must come after the tail and every preceding new seq of the batch, and none may repeat (SBR03; the whole batch is checked before anything is written). Fenced and refused like run_log_append; notifies channel sandbox_store_run_log if a reader watches the log (run_log_watch).';

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
CREATE OR REPLACE FUNCTION sandbox_store.run_log_wake(VARIADIC run_ids pg_catalog.text[])
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
        PERFORM sandbox_store_internal._check_id('22023', v_id, 'run id', 1024);
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

-- A reader's start: mark the log of run_id watched (making an open, empty
-- log if it has none) and return its tail and whether it is closed, as
-- run_log_status does.  The reader LISTENs on sandbox_store_run_log first:
-- the mark is made under the log row's lock, so every write that commits
-- after it sees the mark and notifies, and every write before it had
-- committed, and is read, when this returns.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_watch(run_id pg_catalog.text)
RETURNS TABLE (last_seq pg_catalog.int8, closed pg_catalog.bool)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_watch.run_id, 'run id', 1024);
    RETURN QUERY
        INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at, watched)
        VALUES (run_log_watch.run_id, 0, clock_timestamp(), true)
        ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET watched = true
        RETURNING l.last_seq, l.closed_at IS NOT NULL;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_watch(pg_catalog.text) IS
'Start reading the run''s log: mark it watched (an open, empty log is made if it has none) and return its greatest seq (0: none) and whether it is closed. From then on every write of the log notifies channel sandbox_store_run_log with the run id; LISTEN on it before calling this, and no write is missed.';

-- RunStore.update: apply a patch of RunRecord fields (camelCase keys; a key
-- with JSON null clears its field, an absent key leaves it).  With epoch,
-- the run's driver_epoch must be epoch (SB001 otherwise).  driverEpoch in
-- the patch may clear the epoch (null), keep it (the current value) or
-- raise it above every epoch the run had (max_driver_epoch: a claim, made
-- durable); any other value could let a superseded driver write again
-- (SB001).  It takes the run's log row lock first, as run_claim and every
-- log write do, so the calls of one run always lock in one order (no two
-- deadlock, even several in one transaction), a log write in flight
-- commits before a finish or a raise of driverEpoch, and every later one
-- sees it.  False for an unknown run, true otherwise.
CREATE OR REPLACE FUNCTION sandbox_store.run_update(
    run_id pg_catalog.text,
    patch pg_catalog.jsonb,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    bad pg_catalog.text;
    v_finished pg_catalog.float8;
    v_detached pg_catalog.float8;
    v_driver pg_catalog.int8;
    v_current pg_catalog.int8;
    v_highest pg_catalog.int8;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_update.run_id, 'run id', 1024);
    IF jsonb_typeof(run_update.patch) IS DISTINCT FROM 'object' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid run patch',
            format('A patch is a JSON object; the value given is %s.',
                   COALESCE(jsonb_typeof(run_update.patch), 'missing')));
    END IF;
    SELECT k INTO bad FROM jsonb_object_keys(run_update.patch) k
     WHERE k OPERATOR(pg_catalog.<>) ALL (ARRAY['status', 'finishedAt', 'error', 'usage', 'sandboxKey',
                                               'detachedSince', 'cancelRequested', 'driverEpoch'])
     ORDER BY k COLLATE "C" LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('22023', format('invalid patch key %s', to_jsonb(bad)),
            'A patch has the keys status, finishedAt, error, usage, sandboxKey, detachedSince, cancelRequested and driverEpoch.');
    END IF;
    IF run_update.patch ? 'status'
       AND (jsonb_typeof(run_update.patch -> 'status') IS DISTINCT FROM 'string'
            OR (run_update.patch ->> 'status' NOT IN ('running', 'interrupted')
                AND NOT sandbox_store_internal._run_finished(run_update.patch ->> 'status'))) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid patch key status',
            format('A status is running, interrupted, completed, failed or aborted, and cannot be cleared; the value given is %s.',
                   run_update.patch -> 'status'));
    END IF;
    IF run_update.patch ? 'finishedAt' THEN
        v_finished := sandbox_store_internal._run_patch_number(run_update.patch, 'finishedAt');
    END IF;
    IF run_update.patch ? 'detachedSince' THEN
        v_detached := sandbox_store_internal._run_patch_number(run_update.patch, 'detachedSince');
    END IF;
    SELECT k INTO bad FROM (VALUES ('error'), ('usage')) v(k)
     WHERE run_update.patch ? k AND jsonb_typeof(run_update.patch -> k) NOT IN ('object', 'null')
     LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('22023', format('invalid patch key %s', bad),
            format('%s is a JSON object or null; the value given is %s.', bad, run_update.patch -> bad));
    END IF;
    IF run_update.patch ? 'sandboxKey' AND jsonb_typeof(run_update.patch -> 'sandboxKey') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid patch key sandboxKey',
            format('sandboxKey is a string or null; the value given is %s.', run_update.patch -> 'sandboxKey'));
    END IF;
    IF run_update.patch ? 'cancelRequested' AND jsonb_typeof(run_update.patch -> 'cancelRequested') NOT IN ('boolean', 'null') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid patch key cancelRequested',
            format('cancelRequested is true, false or null; the value given is %s.', run_update.patch -> 'cancelRequested'));
    END IF;
    IF run_update.patch ? 'driverEpoch' AND jsonb_typeof(run_update.patch -> 'driverEpoch') <> 'null' THEN
        -- (at most 2^53 - 1: the client holds an epoch in a JavaScript number)
        IF jsonb_typeof(run_update.patch -> 'driverEpoch') IS DISTINCT FROM 'number'
           OR run_update.patch ->> 'driverEpoch' !~ '^[0-9]{1,16}$'
           OR (run_update.patch ->> 'driverEpoch')::pg_catalog.int8 NOT BETWEEN 1 AND 9007199254740991 THEN
            PERFORM sandbox_store_internal._raise('22023', 'invalid patch key driverEpoch',
                format('driverEpoch is a whole number from 1 to 9007199254740991; the value given is %s.', run_update.patch -> 'driverEpoch'));
        END IF;
        v_driver := (run_update.patch ->> 'driverEpoch')::pg_catalog.int8;
    END IF;
    IF run_update.epoch IS NOT NULL AND run_update.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_update.epoch));
    END IF;

    -- The log row's lock first, as run_claim takes it (only when the run
    -- exists: an unknown run is left alone): a patch that sets or clears
    -- driverEpoch is a claim or ends the driver's writes, and one that
    -- finishes the run ends every driver's writes, so each waits for the
    -- log write in flight; any other patch takes it too, so that the locks
    -- of one run are always taken log row first.
    -- (Those that end writes write a new version of the log row, as
    -- run_claim does: a log writer at REPEATABLE READ whose snapshot
    -- predates their commit then fails its upsert of the row (40001)
    -- instead of reading the runs row as its snapshot has it.  The others
    -- take a row lock of the log row when it exists, no new row version;
    -- the upsert, which waits for a first append's insert in flight, when
    -- it does not.)
    IF EXISTS (
        SELECT FROM ONLY sandbox_store.runs r WHERE r.run_id OPERATOR(pg_catalog.=) run_update.run_id) THEN
        IF run_update.patch ? 'driverEpoch'
           OR sandbox_store_internal._run_finished(run_update.patch ->> 'status') THEN
            INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
            VALUES (run_update.run_id, 0, clock_timestamp())
            ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at;
        ELSE
            PERFORM FROM ONLY sandbox_store.run_logs l WHERE l.run_id OPERATOR(pg_catalog.=) run_update.run_id FOR UPDATE;
            IF NOT FOUND THEN
                INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
                VALUES (run_update.run_id, 0, clock_timestamp())
                ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at;
            END IF;
        END IF;
    END IF;
    SELECT r.driver_epoch, r.max_driver_epoch INTO v_current, v_highest FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) run_update.run_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF run_update.epoch IS NOT NULL AND v_current IS DISTINCT FROM run_update.epoch THEN
        PERFORM sandbox_store_internal._run_stale(run_update.run_id, run_update.epoch, v_current, v_highest, true);
    END IF;
    -- driverEpoch: null clears it (the highest is kept), the current value
    -- keeps it, a value above every epoch the run had raises it; a value at
    -- or below the highest, other than the current one, is refused.
    IF v_driver IS DISTINCT FROM v_current AND v_driver <= COALESCE(v_highest, 0) THEN
        PERFORM sandbox_store_internal._raise('SB001',
            format('the driver epoch of run %s is not current', to_jsonb(run_update.run_id)),
            format('The patch sets %s as driverEpoch, and %s: a driverEpoch other than the current one must be above every epoch the run had.  Nothing was changed.',
                   v_driver,
                   CASE WHEN v_current IS NULL
                        THEN format('the run has no current epoch (it was cleared; the highest it had is %s)', v_highest)
                        ELSE format('the current epoch is %s', v_current) END));
    END IF;
    IF v_driver > COALESCE(v_highest, 0) THEN
        PERFORM sandbox_store_internal._run_durable();
    END IF;

    UPDATE ONLY sandbox_store.runs r SET
        status = CASE WHEN run_update.patch ? 'status' THEN run_update.patch ->> 'status' ELSE r.status END,
        finished_at = CASE WHEN run_update.patch ? 'finishedAt' THEN v_finished ELSE r.finished_at END,
        error = CASE WHEN run_update.patch ? 'error'
                     THEN NULLIF(run_update.patch -> 'error', 'null'::pg_catalog.jsonb) ELSE r.error END,
        usage = CASE WHEN run_update.patch ? 'usage'
                     THEN NULLIF(run_update.patch -> 'usage', 'null'::pg_catalog.jsonb) ELSE r.usage END,
        sandbox_key = CASE WHEN run_update.patch ? 'sandboxKey' THEN run_update.patch ->> 'sandboxKey' ELSE r.sandbox_key END,
        detached_since = CASE WHEN run_update.patch ? 'detachedSince' THEN v_detached ELSE r.detached_since END,
        cancel_requested = CASE WHEN run_update.patch ? 'cancelRequested'
                                THEN (run_update.patch ->> 'cancelRequested')::pg_catalog.bool ELSE r.cancel_requested END,
        driver_epoch = CASE WHEN run_update.patch ? 'driverEpoch' THEN v_driver ELSE r.driver_epoch END,
        max_driver_epoch = GREATEST(r.max_driver_epoch, v_driver)
     WHERE r.run_id OPERATOR(pg_catalog.=) run_update.run_id;
    RETURN true;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_update(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8) IS
'Apply a patch of RunRecord fields to the run (status, finishedAt, error, usage, sandboxKey, detachedSince, cancelRequested, driverEpoch; a key with null clears its field, except status): false for an unknown run, true otherwise. With epoch: refused (SB001, nothing changed) unless it is the run''s current driver epoch. A driverEpoch in the patch may clear the epoch (null), keep it, or raise it above every epoch the run had; any other value is refused (SB001).';


DROP FUNCTION sandbox_store_internal._run_record(sandbox_store.runs);

-- On citus: distribute the sandbox tables by key and the run tables by run
-- id, all colocated, and send every single-key and single-run function to
-- the node that holds its shard.  Run once, on the coordinator, as a
-- superuser; running it again distributes what is not distributed yet (the
-- run tables of a cluster that an older distribute() left local) and
-- changes nothing else.
--
-- The run tables go by run id, not by thread: every run function but the
-- listings names a run and no thread, so a run id is what routes a call.
-- A table's rows are moved to its shards when it is distributed; the run
-- functions that write a run's log notify on the node they run on, so the
-- ones that notify at commit (the 3-argument run_log_append, run_log_close,
-- run_log_upsert) are not delegated: their notification reaches readers
-- connected to the node that was called.
CREATE OR REPLACE FUNCTION sandbox_store.distribute()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn pg_catalog.regprocedure;
    rel pg_catalog.regclass;
    failed pg_catalog.text;
    local_runs pg_catalog.regclass[];
    key_to_text constant pg_catalog.text :=
        'ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE pg_catalog.text,'
        ' ADD CONSTRAINT instances_key_length'
        ' CHECK (pg_catalog.octet_length(key) OPERATOR(pg_catalog.>=) 1'
        ' AND pg_catalog.octet_length(key) OPERATOR(pg_catalog.<=) 1024)';
    -- (on a worker: only where it has not been done, for a worker keeps it
    -- when a later step fails and the coordinator rolls back)
    key_to_text_once constant pg_catalog.text :=
        'DO $do$ BEGIN IF (SELECT atttypid FROM pg_catalog.pg_attribute'
        ' WHERE attrelid OPERATOR(pg_catalog.=) ''sandbox_store.instances''::pg_catalog.regclass'
        ' AND attname OPERATOR(pg_catalog.=) ''key'') OPERATOR(pg_catalog.<>) ''pg_catalog.text''::pg_catalog.regtype'
        ' THEN ' || key_to_text || '; END IF; END $do$';
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'feature_not_supported',
            MESSAGE = 'citus is not installed in this database',
            DETAIL = 'sandbox_store.distribute() distributes the tables of sandbox_store with citus.',
            HINT = 'Put citus in shared_preload_libraries on every node, run CREATE EXTENSION citus and add the workers, then call it again.';
    END IF;
    IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) CURRENT_USER) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = 'permission denied to distribute the tables of sandbox_store',
            DETAIL = 'Only a superuser may distribute them.',
            HINT = 'Run sandbox_store.distribute() as a superuser, on the coordinator.';
    END IF;
    -- A worker's own run tables, before they are distributed, hold what was
    -- written through that worker (older versions left the run tables
    -- local); distributing would hide those rows, so refuse while a worker
    -- has any, before anything changes.
    SELECT pg_catalog.array_agg(t.rel) INTO local_runs
      FROM pg_catalog.unnest(ARRAY['sandbox_store.runs', 'sandbox_store.run_logs',
                                   'sandbox_store.run_log_entries']::pg_catalog.regclass[]) t(rel)
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
                        WHERE p.logicalrelid OPERATOR(pg_catalog.=) t.rel);
    IF local_runs IS NOT NULL THEN
        SELECT pg_catalog.string_agg(r.nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) r.nodeport
                                     OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) r.result
                                     OPERATOR(pg_catalog.||) ' rows', '; ')
          INTO failed
          FROM pg_catalog.run_command_on_workers(
                   (SELECT 'SELECT ' OPERATOR(pg_catalog.||)
                           pg_catalog.string_agg(pg_catalog.format('(SELECT count(*) FROM ONLY %s)', t.rel), ' + ')
                      FROM pg_catalog.unnest(local_runs) t(rel))) r
         WHERE r.success AND r.result OPERATOR(pg_catalog.<>) '0';
        IF failed IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = 'a worker holds runs of its own in the run tables of sandbox_store',
                DETAIL = 'Runs and run logs written through a worker before the run tables were distributed stay in that worker''s own tables, which distributing them would hide: ' || failed || '.  Nothing was changed.',
                HINT = 'Copy those rows into the same tables on the coordinator and delete them on the worker (docs/operations.md, section 9), then call it again.';
        END IF;
    END IF;
    -- citus cannot prune shards by a domain-typed key (it coerces the key
    -- to the column's type as a constant, which a domain's check is not), so
    -- instances.key goes back from bounded_text to text with the same
    -- 1..1024-byte check, on every node (each has the extension's tables).
    -- No rewrite: the types are binary-compatible.  citus's functions are
    -- called by name at run time: this extension does not depend on citus.
    IF (SELECT atttypid FROM pg_catalog.pg_attribute
         WHERE attrelid OPERATOR(pg_catalog.=) 'sandbox_store.instances'::pg_catalog.regclass
           AND attname OPERATOR(pg_catalog.=) 'key') OPERATOR(pg_catalog.<>) 'pg_catalog.text'::pg_catalog.regtype THEN
        EXECUTE key_to_text;
        SELECT pg_catalog.string_agg(r.nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) r.nodeport
                                     OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) r.result, '; ')
          INTO failed
          FROM pg_catalog.run_command_on_workers(key_to_text_once) r WHERE NOT r.success;
        IF failed IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = 'could not change sandbox_store.instances.key to text on every worker',
                DETAIL = failed,
                HINT = 'Install sandbox_store on every worker (CREATE EXTENSION on the coordinator after adding them does that), then call it again.';
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid OPERATOR(pg_catalog.=) 'sandbox_store.instances'::pg_catalog.regclass) THEN
        PERFORM pg_catalog.create_distributed_table('sandbox_store.instances', 'key');
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid OPERATOR(pg_catalog.=) 'sandbox_store.leases'::pg_catalog.regclass) THEN
        PERFORM pg_catalog.create_distributed_table('sandbox_store.leases', 'key',
                                                    colocate_with => 'sandbox_store.instances');
    END IF;
    FOREACH rel IN ARRAY ARRAY['sandbox_store.runs', 'sandbox_store.run_logs',
                               'sandbox_store.run_log_entries']::pg_catalog.regclass[]
    LOOP
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                        WHERE logicalrelid OPERATOR(pg_catalog.=) rel) THEN
            PERFORM pg_catalog.create_distributed_table(rel, 'run_id',
                                                        colocate_with => 'sandbox_store.instances');
            -- (its rows were copied to the shards; the coordinator's own
            -- copy is no longer read)
            PERFORM pg_catalog.truncate_local_data_after_distributing_table(rel);
        END IF;
    END LOOP;
    FOREACH fn IN ARRAY ARRAY[
        'sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8)',
        'sandbox_store.sandbox_upsert_release(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz)',
        'sandbox_store.sandbox_get(pg_catalog.text)',
        'sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8)',
        'sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval)',
        'sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval)',
        'sandbox_store.sandbox_try_lock(pg_catalog.text)',
        'sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval)',
        'sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval)',
        'sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid)',
        'sandbox_store.sandbox_lock_holder(pg_catalog.text)']::pg_catalog.regprocedure[]
    LOOP
        PERFORM pg_catalog.create_distributed_function(fn, 'key', colocate_with => 'sandbox_store.instances',
                                                       force_delegation => true);
    END LOOP;
    FOREACH fn IN ARRAY ARRAY[
        'sandbox_store.run_create_or_resume(pg_catalog.text, pg_catalog.text, pg_catalog.float8, pg_catalog.text)',
        'sandbox_store.run_get(pg_catalog.text)',
        'sandbox_store.run_claim(pg_catalog.text)',
        'sandbox_store.run_update(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8)',
        'sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8, pg_catalog.bool)',
        'sandbox_store.run_log_read(pg_catalog.text, pg_catalog.int8, pg_catalog.int4)',
        'sandbox_store.run_log_status(pg_catalog.text)',
        'sandbox_store.run_log_watch(pg_catalog.text)']::pg_catalog.regprocedure[]
    LOOP
        PERFORM pg_catalog.create_distributed_function(fn, 'run_id', colocate_with => 'sandbox_store.runs',
                                                       force_delegation => true);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sandbox_store.distribute() IS
'On citus: distribute instances and leases by key and runs, run_logs and run_log_entries by run id, all colocated, and run every single-key function and the single-run functions that do not notify at commit on the node holding the shard. Once, on the coordinator, as a superuser; running it again distributes only what is not distributed yet.';

-- The internal helpers: nobody but the owner (an update script runs this
-- too, for the helpers it makes).
REVOKE ALL ON SCHEMA sandbox_store_internal FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store_internal FROM PUBLIC;

-- Which edition of sandbox_store this database has, and its version: c (the
-- C edition, CREATE EXTENSION with the library), pg_tle (the SQL edition
-- registered with pg_tle, then CREATE EXTENSION) or plain (the SQL edition's
-- plain script, run with psql).
CREATE OR REPLACE FUNCTION sandbox_store.edition(OUT edition pg_catalog.text, OUT version pg_catalog.text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE WHEN l.lanname OPERATOR(pg_catalog.=) 'c' THEN 'c'
            WHEN e.oid IS NOT NULL THEN 'pg_tle'
            ELSE 'plain' END,
       COALESCE(e.extversion, '1.8.0')
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
  LEFT JOIN pg_catalog.pg_extension e ON e.extname OPERATOR(pg_catalog.=) 'sandbox_store'
 WHERE p.oid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure('sandbox_store.sandbox_get(pg_catalog.text)')
$$;

COMMENT ON FUNCTION sandbox_store.edition() IS
'Which edition of sandbox_store this database has (c, pg_tle or plain) and its version.';

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
CREATE FUNCTION sandbox_store.run_update(
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
    PERFORM sandbox_store_internal._check_id('22023', run_update.run_id, 'run id', @MAX_TEXT_BYTES@);
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

-- The SQL edition's run_log_append (the C edition's is C: src/run_log.c,
-- the same checks, order and messages; its comment is in comments.sql).
-- The hot path: append chunks to the log of run_id as its next entries, in
-- few statements: the log row's upsert (which locks it: appenders of one
-- run are serialized and commit in seq order) returning the seq before them
-- and whether a reader watches the log, the fence (a plain read of the runs
-- row), one INSERT ... SELECT of the entries, and a notification if so
-- and notify is true (1.7.0; false: the caller wakes the readers with
-- run_log_wake after the commit).  src/sql/build.sh makes the form
-- without notify from this text (part sql-edition/run_log.run_log_append-3):
-- keep the notify argument's lines as they are, or its build fails.
CREATE FUNCTION sandbox_store.run_log_append(
    run_id pg_catalog.text,
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8,
    notify pg_catalog.bool)
RETURNS pg_catalog.int8[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    n pg_catalog.int8;
    v_last pg_catalog.int8;
    v_closed pg_catalog.timestamptz;
    v_status pg_catalog.text;
    v_watched pg_catalog.bool;
    v_seqs pg_catalog.int8[];
BEGIN
    -- (the checks are simple expressions, which PL/pgSQL evaluates without
    -- running a query)
    IF run_log_append.run_id IS NULL OR octet_length(run_log_append.run_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ THEN
        PERFORM sandbox_store_internal._check_id('22023', run_log_append.run_id, 'run id', @MAX_TEXT_BYTES@);
    END IF;
    IF jsonb_typeof(run_log_append.chunks) IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            format('chunks is a JSON array of JSON objects; the value given is %s.',
                   COALESCE(jsonb_typeof(run_log_append.chunks), 'missing')));
    END IF;
    -- (strict: in lax mode a nested array is unwrapped, and its elements
    -- would be checked instead of the array itself)
    IF jsonb_path_exists(run_log_append.chunks, 'strict $[*] ? (@.type() != "object")') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            'chunks is a JSON array of JSON objects; an element is not an object.');
    END IF;
    IF run_log_append.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_append.epoch));
    END IF;
    IF run_log_append.notify IS NULL THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid notify',
            'notify is true (a watched log''s append notifies when it commits) or false (the caller wakes the readers with run_log_wake after the commit); the value given is missing.');
    END IF;
    n := jsonb_array_length(run_log_append.chunks);
    IF n = 0 THEN
        PERFORM sandbox_store_internal._run_fence(run_log_append.run_id, run_log_append.epoch);
        RETURN '{}'::pg_catalog.int8[];
    END IF;

    -- The log row, locked, its tail moved past the new entries (appenders
    -- of one run are serialized here, and so is run_claim, which takes
    -- this lock before it raises the epoch).
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_append.run_id, n, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE
       SET last_seq = l.last_seq OPERATOR(pg_catalog.+) EXCLUDED.last_seq, updated_at = EXCLUDED.updated_at
    RETURNING l.last_seq OPERATOR(pg_catalog.-) n, l.closed_at, l.watched INTO v_last, v_closed, v_watched;

    -- The fence, read after the lock: a claim committed before it is seen,
    -- one after it waited for this transaction.
    v_status := sandbox_store_internal._run_fence(run_log_append.run_id, run_log_append.epoch);
    IF v_closed IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('the log of run %s is closed', to_jsonb(run_log_append.run_id)),
            'A closed log takes no more entries.  Nothing was changed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_log_append.run_id)),
            format('Its status is %s: its log takes no more entries.  Nothing was changed.', v_status));
    END IF;
    IF v_last > 9007199254740991 - n THEN
        PERFORM sandbox_store_internal._run_log_full(run_log_append.run_id, v_last, n);
    END IF;

    -- The entries; their seqs, the result, are counted (cheaper than
    -- returning them from the insert and aggregating them).
    INSERT INTO sandbox_store.run_log_entries (run_id, seq, chunk)
    SELECT run_log_append.run_id, v_last OPERATOR(pg_catalog.+) x.i, x.c
      FROM jsonb_array_elements(run_log_append.chunks) WITH ORDINALITY x(c, i);
    v_seqs := '{}';
    FOR i IN 1 .. n LOOP
        v_seqs[i] := v_last + i;
    END LOOP;
    IF v_watched AND run_log_append.notify THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_append.run_id);
    END IF;
    RETURN v_seqs;
END
$$;

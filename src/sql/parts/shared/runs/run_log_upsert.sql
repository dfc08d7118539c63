-- Write entries at given seqs: seqs[i] pairs with chunks -> (i - 1).  A seq
-- already stored is replaced; a new one must come after the tail and after
-- every preceding new seq of the batch; none may repeat (SBR03, the whole
-- batch checked before anything is written).
CREATE FUNCTION sandbox_store.run_log_upsert(
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
    PERFORM sandbox_store_internal._check_id('22023', run_log_upsert.run_id, 'run id', @MAX_TEXT_BYTES@);
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

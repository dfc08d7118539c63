-- 22003 for an append of n entries to the log of run_id whose last seq is
-- last, when they would take seqs past 2^53 - 1 (the largest whole number a
-- JavaScript number holds exactly, an offset's position in the client).
-- Only run_log_upsert brings a tail that near the end.
CREATE FUNCTION sandbox_store_internal._run_log_full(run_id pg_catalog.text, last pg_catalog.int8,
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

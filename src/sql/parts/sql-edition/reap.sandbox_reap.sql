CREATE FUNCTION sandbox_store.sandbox_reap(
    idle_for pg_catalog.interval,
    max_rows pg_catalog.int4 DEFAULT 100)
RETURNS SETOF sandbox_store.instances
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    cutoff pg_catalog.timestamptz;
    reaped pg_catalog.int4 := 0;
    candidate pg_catalog.text;
    r sandbox_store.instances;
BEGIN
    IF idle_for IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('idle_for');
    END IF;
    IF (sandbox_store_internal._check_interval(idle_for, 'idle_for', false)) IS NULL THEN END IF;
    cutoff := sandbox_store_internal._cutoff(idle_for);
    IF max_rows IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('max_rows');
    END IF;
    IF max_rows <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'max_rows must be positive',
            DETAIL = format('The value given is %s.', max_rows);
    END IF;
    FOR candidate IN SELECT sandbox_store_internal._reap_candidates(cutoff) LOOP
        EXIT WHEN reaped >= max_rows;
        CONTINUE WHEN NOT sandbox_store_internal._try_take(candidate, sandbox_store_internal._lock_id(candidate));
        PERFORM FROM ONLY sandbox_store.instances i
          WHERE i.key OPERATOR(pg_catalog.=) candidate AND i.updated_at OPERATOR(pg_catalog.<) cutoff
          FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM ONLY sandbox_store.instances i
         WHERE i.key OPERATOR(pg_catalog.=) candidate AND i.updated_at OPERATOR(pg_catalog.<) cutoff
        RETURNING i.* INTO r;
        IF FOUND THEN
            RETURN NEXT r;
            reaped := reaped + 1;
        END IF;
    END LOOP;
END
$$;

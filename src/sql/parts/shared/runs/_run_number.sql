-- A time in epoch milliseconds, as the client's JavaScript number: a finite
-- float8 (NaN and the infinities are refused, 22023).  what names the
-- argument or the patch key in the error.
CREATE FUNCTION sandbox_store_internal._run_number(v pg_catalog.float8, what pg_catalog.text)
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

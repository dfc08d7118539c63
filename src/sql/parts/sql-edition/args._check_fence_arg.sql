-- A fence argument must be positive.
CREATE FUNCTION sandbox_store_internal._check_fence_arg(f pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF f <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'fence must be positive',
            DETAIL = format('The value given is %s; fences start at 1.', f);
    END IF;
END
$$;

-- The interface.

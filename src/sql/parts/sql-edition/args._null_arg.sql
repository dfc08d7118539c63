-- A required argument given as NULL.
CREATE FUNCTION sandbox_store_internal._null_arg(arg pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
        MESSAGE = format('%s must not be null', arg);
END
$$;

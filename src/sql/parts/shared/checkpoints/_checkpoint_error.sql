-- A checkpoint error (SQLSTATE SBCnn or SB001), message and detail given.
CREATE FUNCTION sandbox_store_internal._checkpoint_error(state pg_catalog.text, message pg_catalog.text,
                                                detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message, DETAIL = detail;
END
$$;

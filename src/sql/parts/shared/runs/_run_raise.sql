-- Raise an error of the runs and run logs: SQLSTATE state (22023, SB001,
-- SBR01..SBR03), message and detail given.
CREATE FUNCTION sandbox_store_internal._run_raise(state pg_catalog.text, message pg_catalog.text,
                                                 detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = _run_raise.state, MESSAGE = _run_raise.message, DETAIL = _run_raise.detail;
END
$$;

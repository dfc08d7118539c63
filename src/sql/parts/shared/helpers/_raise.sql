-- Raise an error of the checkpoint, run and run log stores: SQLSTATE state
-- (22023, SB001, SBCnn, SBR01..SBR03), message and detail given.
CREATE FUNCTION sandbox_store_internal._raise(state pg_catalog.text, message pg_catalog.text,
                                             detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = _raise.state, MESSAGE = _raise.message, DETAIL = _raise.detail;
END
$$;

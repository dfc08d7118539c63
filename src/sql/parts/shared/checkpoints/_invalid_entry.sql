-- An entry of a checkpoint that is not as the contract says: SBC08.
CREATE FUNCTION sandbox_store_internal._invalid_entry(detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'SBC08', MESSAGE = 'invalid checkpoint entry', DETAIL = detail;
END
$$;

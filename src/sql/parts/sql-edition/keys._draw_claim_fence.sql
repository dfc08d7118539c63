-- A fence for a claim that SQL code takes itself (the checkpoint writers):
-- drawn and kept as for sandbox_claim.
CREATE FUNCTION sandbox_store_internal._draw_claim_fence(above pg_catalog.int8)
RETURNS pg_catalog.int8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f pg_catalog.int8 := sandbox_store_internal._draw_fence(above);
BEGIN
    IF (sandbox_store_internal._keep_fence()) IS NULL THEN END IF;
    RETURN f;
END
$$;

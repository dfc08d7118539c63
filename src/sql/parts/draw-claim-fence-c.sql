-- A fence for a claim that SQL code takes itself (the checkpoint writers).
CREATE FUNCTION sandbox_store_internal._draw_claim_fence(above pg_catalog.int8)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'sandbox_draw_claim_fence_v1_4_1'
LANGUAGE C VOLATILE;

-- The C edition's internal helpers that the shared SQL (the checkpoint
-- store) calls; the SQL edition has PL/pgSQL functions of the same names
-- (parts/sql-edition/).

-- A fence for a claim that SQL code takes itself (the checkpoint writers).
CREATE FUNCTION sandbox_store_internal._draw_claim_fence(above pg_catalog.int8)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'sandbox_draw_claim_fence_v1_4_1'
LANGUAGE C VOLATILE;

-- The lock of a thread's first checkpoint writer: the writer key's own
-- lock, in the extension's lock class (which no application lock can
-- take), at once or not at all, until the transaction ends.
CREATE FUNCTION sandbox_store_internal._try_writer_lock(k pg_catalog.text)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_try_writer_lock_v1_4_1'
LANGUAGE C VOLATILE STRICT;

-- sandbox_store.max_checkpoint_bytes as the library defines it (a
-- superuser setting): calling this loads the library, which drops a value a
-- role that may not set it gave the name before (as a placeholder).
CREATE FUNCTION sandbox_store_internal._max_checkpoint_bytes()
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'sandbox_max_checkpoint_bytes_v1_4_1'
LANGUAGE C STABLE;

-- The check of a checkpoint before it is appended (1.5; checkpoint_check.c):
-- its size against sandbox_store.max_checkpoint_bytes, its ids (SBC07),
-- fields and entries (SBC08), in one pass; returns the blob keys it points
-- to, each once, by bytes.  The SQL edition's is PL/pgSQL
-- (sql-edition/checkpoint_check._checkpoint_check.sql), with the same
-- checks and messages.
CREATE FUNCTION sandbox_store_internal._checkpoint_check(c pg_catalog.jsonb)
RETURNS pg_catalog.text[]
AS 'MODULE_PATHNAME', 'sandbox_checkpoint_check_v1_5'
LANGUAGE C STABLE;

-- The reserved claim key of a thread's checkpoint writer.
CREATE FUNCTION sandbox_store_internal._writer_key(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT E'\x01checkpoint-writer\x01' OPERATOR(pg_catalog.||) thread_id $$;

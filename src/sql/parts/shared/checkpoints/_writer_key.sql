-- The reserved key of a thread's checkpoint writer: the key of the lock its
-- first acquirers take (_try_writer_lock), and the key the claims view
-- shows it under (before 1.9.0, its claim's key in leases).
CREATE FUNCTION sandbox_store_internal._writer_key(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT E'\x01checkpoint-writer\x01' OPERATOR(pg_catalog.||) thread_id $$;

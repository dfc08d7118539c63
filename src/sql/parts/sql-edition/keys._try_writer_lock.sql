-- The lock of a thread's first checkpoint writer: the writer key's lock, as
-- this edition takes a key's lock (pg_advisory_xact_lock on its lock id,
-- which an application's own advisory lock on that number shares), at once
-- or not at all, until the transaction ends.
CREATE FUNCTION sandbox_store_internal._try_writer_lock(k pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE sql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
SELECT pg_catalog.pg_try_advisory_xact_lock(sandbox_store_internal._lock_id(k))
$$;

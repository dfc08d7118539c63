-- Take the key's lock with lock_timeout set to ms for this wait only (the
-- SET clause restores the caller's value on the way out, also on error).
-- ms must fit lock_timeout: 1 to 2147483647 (about 24.8 days).
CREATE FUNCTION sandbox_store_internal._lock_within(lock_id pg_catalog.int8, ms pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET lock_timeout = 0
AS $$
BEGIN
    IF (set_config('lock_timeout', ms::pg_catalog.text, true)) IS NULL THEN END IF;
    IF (pg_advisory_xact_lock(lock_id)) IS NULL THEN END IF;
END
$$;

-- The key's lock, taken for a write that does not wait for claims (fenced
-- writes, renew, release, REPEATABLE READ upserts).
CREATE FUNCTION sandbox_store_internal._lock(k pg_catalog.text, lock_id pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF pg_is_in_recovery() THEN
        PERFORM sandbox_store_internal._refuse_on_standby(k);
    END IF;
    IF (pg_advisory_xact_lock(lock_id)) IS NULL THEN END IF;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_lock(
    key pg_catalog.text,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_lock.key IS NULL OR octet_length(sandbox_lock.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_lock.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_lock.key, 'key');
    END IF;
    IF wait IS NOT NULL THEN
        IF (sandbox_store_internal._check_interval(wait, 'wait', false)) IS NULL THEN END IF;
    END IF;
    PERFORM sandbox_store_internal._take(sandbox_lock.key, sandbox_store_internal._lock_id(sandbox_lock.key), wait, NULL);
END
$$;

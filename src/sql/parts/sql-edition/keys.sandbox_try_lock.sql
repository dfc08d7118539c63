CREATE FUNCTION sandbox_store.sandbox_try_lock(key pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_try_lock.key IS NULL OR octet_length(sandbox_try_lock.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_try_lock.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_try_lock.key, 'key');
    END IF;
    RETURN sandbox_store_internal._try_take(sandbox_try_lock.key, sandbox_store_internal._lock_id(sandbox_try_lock.key));
END
$$;

CREATE FUNCTION sandbox_store.sandbox_lock_id(key pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF sandbox_lock_id.key IS NULL OR octet_length(sandbox_lock_id.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_lock_id.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_lock_id.key, 'key');
    END IF;
    RETURN sandbox_store_internal._lock_id(sandbox_lock_id.key);
END
$$;

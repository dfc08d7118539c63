CREATE FUNCTION sandbox_store.sandbox_try_lock(key pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    RETURN sandbox_store_internal._try_take($1, sandbox_store_internal._lock_id($1));
END
$$;

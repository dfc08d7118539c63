CREATE FUNCTION sandbox_store.sandbox_delete(
    key pg_catalog.text,
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    deleted boolean;
BEGIN
    IF sandbox_delete.key IS NULL OR octet_length(sandbox_delete.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_delete.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_delete.key, 'key');
    END IF;
    IF sandbox_delete.fence <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg(sandbox_delete.fence);
    END IF;
    IF sandbox_delete.fence IS NOT NULL THEN
        IF (sandbox_store_internal._lock(sandbox_delete.key, sandbox_store_internal._lock_id(sandbox_delete.key))) IS NULL THEN END IF;
        IF (sandbox_store_internal._check_fence(sandbox_delete.key, sandbox_delete.fence)) IS NULL THEN END IF;
    ELSE
        PERFORM sandbox_store_internal._take(sandbox_delete.key, sandbox_store_internal._lock_id(sandbox_delete.key), NULL, NULL);
    END IF;
    DELETE FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) sandbox_delete.key;
    deleted := FOUND;
    IF NOT deleted AND sandbox_store_internal._snapshot_isolation() THEN
        PERFORM sandbox_store_internal._current_record(sandbox_delete.key);
    END IF;
    RETURN deleted;
END
$$;

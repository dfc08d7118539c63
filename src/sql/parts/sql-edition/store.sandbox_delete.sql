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
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg($2);
    END IF;
    IF $2 IS NOT NULL THEN
        IF (sandbox_store_internal._lock($1, sandbox_store_internal._lock_id($1))) IS NULL THEN END IF;
        IF (sandbox_store_internal._check_fence($1, $2)) IS NULL THEN END IF;
    ELSE
        PERFORM sandbox_store_internal._take($1, sandbox_store_internal._lock_id($1), NULL, NULL);
    END IF;
    DELETE FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) $1;
    deleted := FOUND;
    IF NOT deleted AND sandbox_store_internal._snapshot_isolation() THEN
        PERFORM sandbox_store_internal._current_record($1);
    END IF;
    RETURN deleted;
END
$$;

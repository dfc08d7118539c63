CREATE FUNCTION sandbox_store.sandbox_release(
    key pg_catalog.text,
    owner_token pg_catalog.uuid)
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
    IF $2 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('owner_token');
    END IF;
    IF (sandbox_store_internal._lock($1, sandbox_store_internal._lock_id($1))) IS NULL THEN END IF;
    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
     WHERE l.key OPERATOR(pg_catalog.=) $1 AND l.owner_token OPERATOR(pg_catalog.=) $2;
    RETURN FOUND;
END
$$;

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
    IF sandbox_release.key IS NULL OR octet_length(sandbox_release.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_release.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_release.key, 'key');
    END IF;
    IF sandbox_release.owner_token IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('owner_token');
    END IF;
    IF (sandbox_store_internal._lock(sandbox_release.key, sandbox_store_internal._lock_id(sandbox_release.key))) IS NULL THEN END IF;
    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_release.key AND l.owner_token OPERATOR(pg_catalog.=) sandbox_release.owner_token;
    RETURN FOUND;
END
$$;

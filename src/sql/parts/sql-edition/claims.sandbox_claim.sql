CREATE FUNCTION sandbox_store.sandbox_claim(
    key pg_catalog.text,
    lease pg_catalog.interval,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS TABLE (
    fence pg_catalog.int8,
    owner_token pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz)
LANGUAGE plpgsql VOLATILE ROWS 1 SECURITY DEFINER
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
        PERFORM sandbox_store_internal._null_arg('lease');
    END IF;
    IF (sandbox_store_internal._check_interval($2, 'lease', true)) IS NULL THEN END IF;
    IF $3 IS NOT NULL THEN
        IF (sandbox_store_internal._check_interval($3, 'wait', false)) IS NULL THEN END IF;
    END IF;
    RETURN QUERY SELECT t.fence, t.owner_token, t.lease_expires_at
                   FROM sandbox_store_internal._take($1, sandbox_store_internal._lock_id($1), $3, $2) t;
END
$$;

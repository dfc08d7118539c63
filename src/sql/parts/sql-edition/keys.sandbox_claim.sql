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
    IF sandbox_claim.key IS NULL OR octet_length(sandbox_claim.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_claim.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_claim.key, 'key');
    END IF;
    IF lease IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('lease');
    END IF;
    IF (sandbox_store_internal._check_interval(lease, 'lease', true)) IS NULL THEN END IF;
    IF wait IS NOT NULL THEN
        IF (sandbox_store_internal._check_interval(wait, 'wait', false)) IS NULL THEN END IF;
    END IF;
    RETURN QUERY SELECT t.fence, t.owner_token, t.lease_expires_at
                   FROM sandbox_store_internal._take(sandbox_claim.key, sandbox_store_internal._lock_id(sandbox_claim.key), wait, lease) t;
END
$$;

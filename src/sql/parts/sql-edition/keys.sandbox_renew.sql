CREATE FUNCTION sandbox_store.sandbox_renew(
    key pg_catalog.text,
    owner_token pg_catalog.uuid,
    lease pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    expires pg_catalog.timestamptz;
BEGIN
    IF sandbox_renew.key IS NULL OR octet_length(sandbox_renew.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_renew.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_renew.key, 'key');
    END IF;
    IF sandbox_renew.owner_token IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('owner_token');
    END IF;
    IF lease IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('lease');
    END IF;
    IF (sandbox_store_internal._check_interval(lease, 'lease', true)) IS NULL THEN END IF;
    IF (sandbox_store_internal._lock(sandbox_renew.key, sandbox_store_internal._lock_id(sandbox_renew.key))) IS NULL THEN END IF;
    UPDATE ONLY sandbox_store.leases l
       SET lease_expires_at = (clock_timestamp() AT TIME ZONE 'UTC' + lease) AT TIME ZONE 'UTC'
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_renew.key AND l.owner_token OPERATOR(pg_catalog.=) sandbox_renew.owner_token
    RETURNING l.lease_expires_at INTO expires;
    IF NOT FOUND THEN
        PERFORM sandbox_store_internal._claim_lost(sandbox_renew.key, 'token', 0, 0);
    END IF;
    RETURN expires;
END
$$;

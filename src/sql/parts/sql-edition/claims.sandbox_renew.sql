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
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('owner_token');
    END IF;
    IF $3 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('lease');
    END IF;
    IF (sandbox_store_internal._check_interval($3, 'lease', true)) IS NULL THEN END IF;
    IF (sandbox_store_internal._lock($1, sandbox_store_internal._lock_id($1))) IS NULL THEN END IF;
    UPDATE ONLY sandbox_store.leases l
       SET lease_expires_at = (clock_timestamp() AT TIME ZONE 'UTC' + $3) AT TIME ZONE 'UTC'
     WHERE l.key OPERATOR(pg_catalog.=) $1 AND l.owner_token OPERATOR(pg_catalog.=) $2
    RETURNING l.lease_expires_at INTO expires;
    IF NOT FOUND THEN
        PERFORM sandbox_store_internal._claim_lost($1, 'token', 0, 0);
    END IF;
    RETURN expires;
END
$$;

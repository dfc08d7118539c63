CREATE FUNCTION sandbox_store.checkpoint_renew_writer(
    thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    lease_ms pg_catalog.int8 DEFAULT 120000,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    now pg_catalog.timestamptz := COALESCE(checkpoint_renew_writer.at, clock_timestamp());
    expires pg_catalog.timestamptz;
BEGIN
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_renew_writer.thread_id, 'thread id', 1000);
    IF lease_ms IS NULL OR lease_ms <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms must be positive', DETAIL = format('The value given is %s.', lease_ms);
    END IF;
    IF checkpoint_renew_writer.at IS NOT NULL AND NOT isfinite(checkpoint_renew_writer.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_renew_writer.at);
    END IF;
    IF lease_ms / 1000.0 >= 9223372036854 OR extract(epoch FROM now) + lease_ms / 1000.0 >= 9224318015999 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms is too long',
            DETAIL = 'now + lease_ms would be past the latest timestamp PostgreSQL has.';
    END IF;
    PERFORM sandbox_store_internal._check_writer(checkpoint_renew_writer.thread_id, checkpoint_renew_writer.thread_id, checkpoint_renew_writer.owner_token, checkpoint_renew_writer.fence, now);
    expires := now + make_interval(secs => lease_ms / 1000.0);
    UPDATE ONLY sandbox_store.checkpoint_writers w SET lease_expires_at = expires
     WHERE w.thread_id OPERATOR(pg_catalog.=) checkpoint_renew_writer.thread_id;
    RETURN expires;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_renew_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.int8, pg_catalog.timestamptz) IS
'Extend the thread''s writer to now + lease_ms while it is still the current, unexpired writer; SB001 otherwise.';

-- The end lock_timeout sets to a wait for a key that started at started
-- (lock_timeout read now, in whole milliseconds as PostgreSQL keeps it), or
-- NULL when lock_timeout is 0 (no bound).  _take reads it once per call, and
-- only when it is to wait: with a wait, or when a live claim is in the way.
CREATE FUNCTION sandbox_store_internal._lock_timeout_deadline(started pg_catalog.timestamptz)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_ms pg_catalog.int8 := (extract(epoch FROM current_setting('lock_timeout')::pg_catalog.interval) * 1000)::pg_catalog.int8;
BEGIN
    IF v_ms > 0 THEN
        RETURN started + make_interval(secs => v_ms / 1000.0);
    END IF;
    RETURN NULL;
END
$$;

-- 55P03: the key could not be taken within the wait.  blocked_fence NULL:
-- another transaction's lock was in the way; else a live claim.
CREATE FUNCTION sandbox_store_internal._not_obtained(k pg_catalog.text, wait pg_catalog.interval,
                                            by_lock_timeout pg_catalog.bool,
                                            blocked_fence pg_catalog.int8,
                                            blocked_until pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    limit_text pg_catalog.text;
    hint_text pg_catalog.text;
BEGIN
    IF by_lock_timeout OR wait IS NULL THEN
        limit_text := format('lock_timeout (%s)', current_setting('lock_timeout'));
        hint_text := 'Retry later, or raise lock_timeout.';
    ELSE
        limit_text := format('the wait (%s)', wait);
        hint_text := 'Retry later, or pass a longer wait.';
    END IF;
    IF blocked_fence IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
            MESSAGE = format('could not lock sandbox key "%s"', k),
            DETAIL = format('The key is claimed (fence %s) until %s, past %s.', blocked_fence, blocked_until, limit_text),
            HINT = hint_text;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
        MESSAGE = format('could not lock sandbox key "%s"', k),
        DETAIL = format('Another transaction holds the key''s lock, and %s is over.', limit_text),
        HINT = hint_text;
END
$$;

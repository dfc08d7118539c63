-- now() - age, in UTC; -infinity when that reaches before the earliest
-- timestamp (nothing is that old).
CREATE FUNCTION sandbox_store_internal._cutoff(age pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    p record := sandbox_store_internal._interval_parts(age);
BEGIN
    IF p.months * 31 * 86400000000 + p.days * 86400000000 + p.usecs
       >= (extract(epoch FROM now()) - extract(epoch FROM timestamptz '4714-11-24 00:00:00+00 BC')) * 1000000 THEN
        RETURN '-infinity';
    END IF;
    RETURN (now() AT TIME ZONE 'UTC' - age) AT TIME ZONE 'UTC';
END
$$;

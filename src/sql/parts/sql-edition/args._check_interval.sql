-- An interval argument: parts of one sign; not negative; positive (and
-- now() + it still a timestamp) where the argument must be positive.
CREATE FUNCTION sandbox_store_internal._check_interval(v pg_catalog.interval, arg pg_catalog.text,
                                              must_be_positive pg_catalog.bool)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    -- v's parts, as _interval_parts gives them (computed here: one call fewer)
    months pg_catalog.numeric := extract(year FROM v) * 12 + extract(month FROM v);
    days pg_catalog.numeric := extract(day FROM v);
    usecs pg_catalog.numeric := (extract(hour FROM v) * 3600 + extract(minute FROM v) * 60 + extract(second FROM v)) * 1000000;
    some_negative boolean := months < 0 OR days < 0 OR usecs < 0;
    some_positive boolean := months > 0 OR days > 0 OR usecs > 0;
BEGIN
    IF some_negative AND some_positive THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must not mix negative and positive parts', arg),
            DETAIL = format('The value given is %s.  Its months, days and time last differently on different dates, so its sign depends on the date.', v),
            HINT = 'Write it with parts of one sign, such as ''36 hours'' instead of ''2 days -12 hours''.';
    END IF;
    IF (some_negative AND must_be_positive) OR (must_be_positive AND NOT some_positive) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must be positive', arg),
            DETAIL = format('The value given is %s.', v);
    END IF;
    IF some_negative THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must not be negative', arg),
            DETAIL = format('The value given is %s.', v);
    END IF;
    -- now() + v must stay a timestamp (a month counted as 31 days, as the C
    -- edition counts it).
    IF must_be_positive
       AND (months * 31 * 86400000000 + days * 86400000000 + usecs)
           >= (extract(epoch FROM timestamptz '294276-12-31 23:59:59.999999+00')
               - extract(epoch FROM clock_timestamp())) * 1000000 + 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s is too long', arg),
            DETAIL = format('now() + %s would be past the latest timestamp PostgreSQL has.', arg);
    END IF;
END
$$;

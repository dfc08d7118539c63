-- An interval's months, days and microseconds, each with its sign (in
-- PL/pgSQL: a SQL function that returns a record is never inlined).
CREATE FUNCTION sandbox_store_internal._interval_parts(v pg_catalog.interval,
    OUT months pg_catalog.numeric, OUT days pg_catalog.numeric, OUT usecs pg_catalog.numeric)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
    months := extract(year FROM v) * 12 + extract(month FROM v);
    days := extract(day FROM v);
    usecs := (extract(hour FROM v) * 3600 + extract(minute FROM v) * 60 + extract(second FROM v)) * 1000000;
END
$$;

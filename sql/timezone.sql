--
-- timezone: the age tests do their interval arithmetic in UTC (a day is 24
-- hours, a month a calendar month in UTC), so the session's TimeZone never
-- changes a decision: app servers in different time zones agree.
--
-- Each block runs in one transaction, where now() does not move.  Its age
-- reaches back across a daylight-saving change of America/New_York, chosen
-- from today's date: the fewest days (or months) for which New York's
-- calendar arithmetic gives another instant than UTC's.  Two records sit on
-- the UTC edge: "tz-edge" exactly that old (fresh; not idle), "tz-over" one
-- microsecond older (stale; idle).  Sessions in UTC and in New York must
-- give those answers, whatever the date.
--
\i sql/include/fresh.sql

CREATE FUNCTION pg_temp.utc_minus(age interval) RETURNS timestamptz LANGUAGE sql AS $$
  SELECT (pg_catalog.now() AT TIME ZONE 'UTC' - age) AT TIME ZONE 'UTC'
$$;

-- Days.
BEGIN;
SET LOCAL TimeZone = 'America/New_York';
SELECT make_interval(days => min(n)) AS age FROM generate_series(1, 400) n
 WHERE now() - make_interval(days => n) <> pg_temp.utc_minus(make_interval(days => n)) \gset
SELECT now() - :'age'::interval <> pg_temp.utc_minus(:'age') AS zones_differ;
SELECT key FROM sandbox_store.sandbox_upsert('tz-edge', 'e2b', 'sbx-1', 't-tz',
       updated_at => pg_temp.utc_minus(:'age'));
SELECT key FROM sandbox_store.sandbox_upsert('tz-over', 'e2b', 'sbx-2', 't-tz',
       updated_at => pg_temp.utc_minus(:'age') - interval '1 microsecond');
SAVEPOINT records;
SET LOCAL TimeZone = 'UTC';
SELECT k AS key, e.action FROM unnest(ARRAY['tz-edge', 'tz-over']) k,
       sandbox_store.sandbox_ensure(k, 'run-utc', max_age => :'age') e ORDER BY k;
ROLLBACK TO SAVEPOINT records;
SET LOCAL TimeZone = 'America/New_York';
SELECT k AS key, e.action FROM unnest(ARRAY['tz-edge', 'tz-over']) k,
       sandbox_store.sandbox_ensure(k, 'run-ny', max_age => :'age') e ORDER BY k;
ROLLBACK TO SAVEPOINT records;
SET LOCAL TimeZone = 'UTC';
SELECT key AS reaped FROM sandbox_store.sandbox_reap(idle_for => :'age') ORDER BY key;
ROLLBACK TO SAVEPOINT records;
SET LOCAL TimeZone = 'America/New_York';
SELECT key AS reaped FROM sandbox_store.sandbox_reap(idle_for => :'age') ORDER BY key;
ROLLBACK;

-- Months: a calendar month in UTC.
BEGIN;
SET LOCAL TimeZone = 'America/New_York';
SELECT make_interval(months => min(n)) AS age FROM generate_series(1, 13) n
 WHERE now() - make_interval(months => n) <> pg_temp.utc_minus(make_interval(months => n)) \gset
SELECT now() - :'age'::interval <> pg_temp.utc_minus(:'age') AS zones_differ;
SELECT key FROM sandbox_store.sandbox_upsert('tz-edge', 'e2b', 'sbx-1', 't-tz',
       updated_at => pg_temp.utc_minus(:'age'));
SELECT key FROM sandbox_store.sandbox_upsert('tz-over', 'e2b', 'sbx-2', 't-tz',
       updated_at => pg_temp.utc_minus(:'age') - interval '1 microsecond');
SAVEPOINT records;
SET LOCAL TimeZone = 'UTC';
SELECT k AS key, e.action FROM unnest(ARRAY['tz-edge', 'tz-over']) k,
       sandbox_store.sandbox_ensure(k, 'run-utc', max_age => :'age') e ORDER BY k;
ROLLBACK TO SAVEPOINT records;
SET LOCAL TimeZone = 'America/New_York';
SELECT k AS key, e.action FROM unnest(ARRAY['tz-edge', 'tz-over']) k,
       sandbox_store.sandbox_ensure(k, 'run-ny', max_age => :'age') e ORDER BY k;
ROLLBACK TO SAVEPOINT records;
SET LOCAL TimeZone = 'UTC';
SELECT key AS reaped FROM sandbox_store.sandbox_reap(idle_for => :'age') ORDER BY key;
ROLLBACK TO SAVEPOINT records;
SET LOCAL TimeZone = 'America/New_York';
SELECT key AS reaped FROM sandbox_store.sandbox_reap(idle_for => :'age') ORDER BY key;
ROLLBACK;

SELECT count(*) AS records FROM sandbox_store.instances;

-- sandbox_store, SQL edition: from 1.7.1 to 1.7.2 (the pg_tle update path,
-- and with src/sql/build.sh plain-update, the plain script's update).

-- 1.7.2 changes only the C edition's library (a faster run_log_append); the
-- SQL edition's functions are those of 1.7.1.  Only the version changes.

-- Which edition of sandbox_store this database has, and its version: c (the
-- C edition, CREATE EXTENSION with the library), pg_tle (the SQL edition
-- registered with pg_tle, then CREATE EXTENSION) or plain (the SQL edition's
-- plain script, run with psql).
CREATE OR REPLACE FUNCTION sandbox_store.edition(OUT edition pg_catalog.text, OUT version pg_catalog.text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE WHEN l.lanname OPERATOR(pg_catalog.=) 'c' THEN 'c'
            WHEN e.oid IS NOT NULL THEN 'pg_tle'
            ELSE 'plain' END,
       COALESCE(e.extversion, '1.7.2')
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
  LEFT JOIN pg_catalog.pg_extension e ON e.extname OPERATOR(pg_catalog.=) 'sandbox_store'
 WHERE p.oid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure('sandbox_store.sandbox_get(pg_catalog.text)')
$$;

COMMENT ON FUNCTION sandbox_store.edition() IS
'Which edition of sandbox_store this database has (c, pg_tle or plain) and its version.';

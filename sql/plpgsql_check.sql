--
-- plpgsql_check: a static check of every PL/pgSQL function of both schemas
-- (plpgsql_check_function, errors and warnings, extra warnings included),
-- when the server has the extension plpgsql_check (Debian's
-- postgresql-15-plpgsql-check; test/scripts/install-deps.sh installs it
-- for 15).  Expected: nothing listed.  Without the extension (the matrix's
-- servers 16 and later) the test says so and checks nothing
-- (expected/plpgsql_check_1.out).  plpgsql_check is not a trusted
-- extension: in the SQL edition's runs (as sb_owner) the test connects as
-- SB_SUPERUSER to create it.  The helpers have no SET clause (they run under
-- an interface function's pinned search_path), so the check runs under that
-- search_path too.  Left out: distribute(), which calls Citus's functions
-- (they exist only on a Citus coordinator; make citus-check runs it).
-- Known and kept, each for its reason (the query leaves them out by
-- function and SQLSTATE; anything else is listed):
--   _keep_fence()   42883  pg_logical_emit_message(..., flush) exists on 17
--                          and later only; the call is behind a check of
--                          server_version_num
--   _try_take(text,bigint)  2F005  its loop returns on every way out; the
--                          end of the function is never reached
--   _cutoff(interval)  42804  RETURN '-infinity': a literal of the
--                          function's result type
--
\i sql/include/fresh.sql
\getenv sb_superuser SB_SUPERUSER
\if :{?sb_superuser}
\c - :sb_superuser
\endif
SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'plpgsql_check') AS have_plpgsql_check \gset
\if :have_plpgsql_check
CREATE EXTENSION plpgsql_check;
SET search_path = pg_catalog, pg_temp;
SELECT p.oid::regprocedure AS function, c.lineno, c.level, c.sqlstate, c.message, c.detail
  FROM pg_proc p
  JOIN pg_language l ON l.oid = p.prolang
  CROSS JOIN LATERAL public.plpgsql_check_function_tb(p.oid, extra_warnings => true, other_warnings => true) c
 WHERE l.lanname = 'plpgsql'
   AND p.pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace)
   AND p.oid <> 'sandbox_store.distribute()'::regprocedure
   AND (p.oid::regprocedure::text, c.sqlstate) NOT IN
       (VALUES ('sandbox_store_internal._keep_fence()', '42883'),
               ('sandbox_store_internal._try_take(text,bigint)', '2F005'),
               ('sandbox_store_internal._cutoff(interval)', '42804'))
 ORDER BY 1, 2, 5;
-- The checks the SQL edition's scripts run before they change anything
-- (src/sql/parts/sql-edition/preflight: DO blocks, which plpgsql_check cannot reach),
-- each made a function of pg_temp from its part and checked the same way.
-- Known and kept: pg_tle-edition's 3F000 where pg_tle is not installed (its
-- query of pgtle.available_extensions() runs only after pg_tle's own check).
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set part :abs_srcdir '/src/sql/parts/sql-edition/preflight/plain.sql'
\set body `sed -e 's/@VERSION@/0/g' -e 's/@FROM@/0/g' :'part'`
SELECT format('CREATE FUNCTION pg_temp.preflight_plain() RETURNS void LANGUAGE plpgsql AS %s',
              regexp_replace(:'body', '^DO (.*);$', '\1')) \gexec
\set part :abs_srcdir '/src/sql/parts/sql-edition/preflight/plain-update.sql'
\set body `sed -e 's/@VERSION@/0/g' -e 's/@FROM@/0/g' :'part'`
SELECT format('CREATE FUNCTION pg_temp.preflight_plain_update() RETURNS void LANGUAGE plpgsql AS %s',
              regexp_replace(:'body', '^DO (.*);$', '\1')) \gexec
\set part :abs_srcdir '/src/sql/parts/sql-edition/preflight/pg_tle-admin.sql'
\set body `sed -e 's/@VERSION@/0/g' -e 's/@FROM@/0/g' :'part'`
SELECT format('CREATE FUNCTION pg_temp.preflight_pg_tle_admin() RETURNS void LANGUAGE plpgsql AS %s',
              regexp_replace(:'body', '^DO (.*);$', '\1')) \gexec
\set part :abs_srcdir '/src/sql/parts/sql-edition/preflight/pg_tle-edition.sql'
\set body `sed -e 's/@VERSION@/0/g' -e 's/@FROM@/0/g' :'part'`
SELECT format('CREATE FUNCTION pg_temp.preflight_pg_tle_edition() RETURNS void LANGUAGE plpgsql AS %s',
              regexp_replace(:'body', '^DO (.*);$', '\1')) \gexec
\set ECHO all
SELECT p.proname AS preflight, c.lineno, c.level, c.sqlstate, c.message, c.detail
  FROM pg_proc p
  CROSS JOIN LATERAL public.plpgsql_check_function_tb(p.oid, extra_warnings => true, other_warnings => true) c
 WHERE p.pronamespace = pg_my_temp_schema() AND p.proname LIKE 'preflight\_%'
   AND (p.proname, c.sqlstate) <> ('preflight_pg_tle_edition', '3F000')
 ORDER BY 1, 2, 5;
SELECT count(*) AS preflight_parts_checked
  FROM pg_proc p WHERE p.pronamespace = pg_my_temp_schema() AND p.proname LIKE 'preflight\_%';
RESET search_path;
DROP EXTENSION plpgsql_check;
\else
SELECT 'plpgsql_check is not available: nothing checked' AS skipped;
\endif

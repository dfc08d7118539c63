#!/usr/bin/env bash
# with-sql-edition.sh EDITION COMMAND [ARG...]
#
# Run COMMAND (from the top of the source tree) as a NON-superuser against a
# throwaway cluster set up for the SQL edition of sandbox_store (the one
# without C), as with-cluster.sh does for the C edition.  EDITION:
#
#   pg_tle  the server has shared_preload_libraries = 'pg_tle'; pg_tle is
#           created in template1 (by the superuser) and the registration
#           script dist/sandbox_store-VERSION-pg_tle.sql is run there by
#           sb_owner, so every database made afterwards can
#           CREATE EXTENSION sandbox_store;
#   plain   no pg_tle loaded; a suite runs the plain script
#           dist/sandbox_store-VERSION.sql itself (psql -f), or calls
#           sandbox_store_harness.install() / .uninstall(), which template1
#           holds: they run the script's text (kept in a table there, without
#           its BEGIN and COMMIT) and drop the schema sandbox_store.
#
# The server is a copy of the one of PG_CONFIG without the C edition's files
# and with pg_tle built in (build-pg_tle.sh; a server that already has
# pg_tle and no sandbox_store.control is used as it is).  The role sb_owner
# has LOGIN, CREATEDB and CREATEROLE (and pgtle_admin for pg_tle), nothing
# else.  The databases contrib_regression and isolation_regression are made
# beforehand, from template1, owned by sb_owner, with the settings pg_regress
# gives the databases it makes (it cannot make them as sb_owner, and one made
# from template0 would not have pg_tle).
#
# COMMAND runs with
#   PGHOST PGPORT PGDATABASE  the cluster (database postgres), PGUSER=sb_owner
#   SB_EDITION          pg_tle or plain (unset, the suites take c)
#   SB_PLAIN_SCRIPT     the plain script's absolute path
#   SB_PG_TLE_SCRIPT    the pg_tle registration's absolute path
#   SB_SUPERUSER        postgres: for a suite's own setup that is not
#                       sandbox_store's (CREATE EXTENSION pgtap)
#   EXTRA_REGRESS_OPTS  --use-existing (pg_regress and pg_isolation_regress
#                       use the databases made here)
#   SB_CLUSTER_DIR, SB_SERVER_LOG  as with-cluster.sh
# and its skip lists (test/sql-edition.mk) apply to make's suites.  Fails if
# the server log shows a backend killed by a signal or a PANIC.  As root,
# the pg_tle build runs first, then everything else as postgres on a copy of
# the tree (lib.sh's sb_as_postgres).
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
sb_name=with-sql-edition

edition=${1:-}
case $edition in
pg_tle | plain) shift ;;
*) fail "usage: with-sql-edition.sh pg_tle|plain COMMAND [ARG...]" ;;
esac
[ $# -gt 0 ] || fail "usage: with-sql-edition.sh pg_tle|plain COMMAND [ARG...]"

sb_use_pg
sharedir=$("$PG_CONFIG" --sharedir)
if [ -f "$sharedir/extension/sandbox_store.control" ] || [ ! -f "$sharedir/extension/pg_tle.control" ]; then
  PG_CONFIG=$("$sb_top/test/scripts/build-pg_tle.sh" "$PG_CONFIG") || fail "no server with pg_tle"
  export PG_CONFIG
  sb_use_pg
fi
sb_as_postgres "$edition" "$@"

cd "$sb_top"
make -s --no-print-directory sql-edition >/dev/null || fail "make sql-edition failed"
version=$(sed -n "s/^default_version = '\\(.*\\)'$/\\1/p" sandbox_store.control)
plain=$sb_top/dist/sandbox_store-$version.sql
tle=$sb_top/dist/sandbox_store-$version-pg_tle.sql
{ [ -f "$plain" ] && [ -f "$tle" ]; } || fail "make sql-edition did not write $plain and $tle"

sb_tempdir sandbox_store_pg; dir=$sb_dir
conf=("max_connections = 100")
[ "$edition" = pg_tle ] && conf+=("shared_preload_libraries = 'pg_tle'")
sb_cluster_init "$dir" "${conf[@]}"
export SB_CLUSTER_DIR=$dir SB_SERVER_LOG=$dir/server.log
sb_cluster_env "$dir"
sb_cluster_start "$dir"

owner=sb_owner
as_super() { psql -X -q -v ON_ERROR_STOP=1 -U postgres "$@"; }
as_owner() { psql -X -q -v ON_ERROR_STOP=1 -U "$owner" "$@"; }

as_super -d postgres -v owner="$owner" <<'SQL' >/dev/null
CREATE ROLE :"owner" LOGIN CREATEDB CREATEROLE;
SQL
if [ "$edition" = pg_tle ]; then
  as_super -d template1 -v owner="$owner" <<'SQL' >/dev/null
CREATE EXTENSION pg_tle;
GRANT pgtle_admin TO :"owner";
SQL
  as_owner -d template1 -f "$tle" >/dev/null || fail "registering $tle with pg_tle as $owner failed"
else
  as_super -d template1 -v script="$plain" <<'SQL' >/dev/null
CREATE SCHEMA sandbox_store_harness;
COMMENT ON SCHEMA sandbox_store_harness IS
'The SQL edition''s test harness (test/scripts/with-sql-edition.sh): install() and uninstall() stand for CREATE EXTENSION IF NOT EXISTS sandbox_store and DROP EXTENSION sandbox_store.';
CREATE TABLE sandbox_store_harness.plain_script (body text NOT NULL);
INSERT INTO sandbox_store_harness.plain_script
  SELECT regexp_replace(pg_read_file(:'script'), '^(BEGIN|COMMIT);$', '', 'gn');
-- (Their SET clauses undo the script's SET LOCALs when they return.)
CREATE FUNCTION sandbox_store_harness.install() RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp SET client_min_messages = warning AS $$
BEGIN
  IF to_regnamespace('sandbox_store') IS NULL THEN
    EXECUTE (SELECT body FROM sandbox_store_harness.plain_script);
  END IF;
END $$;
CREATE FUNCTION sandbox_store_harness.uninstall() RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp SET client_min_messages = warning AS $$
BEGIN
  DROP SCHEMA sandbox_store, sandbox_store_internal CASCADE;
END $$;
GRANT USAGE ON SCHEMA sandbox_store_harness TO PUBLIC;
GRANT SELECT ON sandbox_store_harness.plain_script TO PUBLIC;
SQL
fi

# The databases pg_regress and pg_isolation_regress use (--use-existing),
# with the settings pg_regress gives its own.
for db in contrib_regression isolation_regression; do
  as_super -d postgres -v db="$db" -v owner="$owner" <<'SQL' >/dev/null
CREATE DATABASE :"db" TEMPLATE template1 OWNER :"owner";
ALTER DATABASE :"db" SET lc_messages TO 'C';
ALTER DATABASE :"db" SET lc_monetary TO 'C';
ALTER DATABASE :"db" SET lc_numeric TO 'C';
ALTER DATABASE :"db" SET lc_time TO 'C';
ALTER DATABASE :"db" SET bytea_output TO 'hex';
ALTER DATABASE :"db" SET timezone_abbreviations TO 'Default';
SQL
done
# A new database has what template1 has: the registration, or the harness.
if [ "$edition" = pg_tle ]; then
  check="SELECT count(*) FROM pgtle.available_extensions() WHERE name = 'sandbox_store'"
else
  check="SELECT count(*) FROM sandbox_store_harness.plain_script"
fi
[ "$(as_owner -d contrib_regression -Atc "$check")" = 1 ] ||
  fail "a database made from template1 does not have what template1 has ($check)"

export PGUSER=$owner SB_EDITION=$edition SB_PLAIN_SCRIPT=$plain SB_PG_TLE_SCRIPT=$tle \
  SB_SUPERUSER=postgres EXTRA_REGRESS_OPTS=--use-existing
say "$edition edition on $("$PG_CONFIG" --version), as $owner"
rc=0
"$@" || rc=$?

if sb_cluster_crashed "$dir"; then
  warn "a backend crashed (server log above)"
  rc=1
fi
exit $rc

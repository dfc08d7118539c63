#!/usr/bin/env bash
# pgtap.sh: run the pgTAP suite (test/pgtap/*.sql) with pg_prove.
#
# Runs against the server in PGHOST/PGPORT/PGUSER (a superuser, see
# with-cluster.sh; or the SQL edition's owner, see with-sql-edition.sh).  Creates a fresh database (dropping a leftover one first),
# installs pgtap there, runs pg_prove on every test file and drops the
# database again.  Each test file creates sandbox_store itself inside its own
# transaction and rolls everything back, so the files are independent.
# Exits non-zero if any test fails or a file does not run to its plan.
#
#   SB_PGTAP_DB   database name (default sandbox_store_pgtap)
#   SB_PGTAP_ARGS extra pg_prove options (e.g. "--verbose")
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
sb_name=pgtap
cd "$sb_top"

db=${SB_PGTAP_DB:-sandbox_store_pgtap}

for tool in psql pg_prove; do
  command -v "$tool" >/dev/null 2>&1 ||
    fail "$tool not found (install postgresql-15-pgtap / libtap-parser-sourcehandler-pgtap-perl)"
done

shopt -s nullglob
tests=(test/pgtap/*.sql)
shopt -u nullglob
[ ${#tests[@]} -gt 0 ] || fail "no test files in test/pgtap/"

sb_fresh_db "$db"

# (pgTAP is no trusted extension: with-sql-edition.sh runs the suites as a
# non-superuser and names a superuser in SB_SUPERUSER for this.)
psql -X -q -v ON_ERROR_STOP=1 -d "$db" ${SB_SUPERUSER:+-U "$SB_SUPERUSER"} -c "CREATE EXTENSION pgtap"

# shellcheck disable=SC2086  # SB_PGTAP_ARGS is a list of options
pg_prove --dbname "$db" --failures --ext .sql ${SB_PGTAP_ARGS:-} "${tests[@]}"

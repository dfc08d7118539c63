#!/usr/bin/env bash
# bench/profile.sh: CPU instructions per call of each benchmark workload,
# counted with valgrind --tool=callgrind on a single-user backend, and the
# functions they are spent in.  Instruction counts are repeatable (timings on
# a shared 2-core machine are not), so this is the tool to find and check
# hot-path changes.  Not part of `make bench`; needs valgrind (and
# callgrind_annotate, from the valgrind package).
#
#   bench/profile.sh [WORKLOAD...]     default: every main workload
#
# For each workload it runs the statement of bench/WORKLOAD.pgbench as a
# prepared statement (PREPARE once, then EXECUTE with random existing keys),
# PROFILE_WARM times and then PROFILE_WARM + PROFILE_CALLS times, each in a
# fresh single-user backend (postgres --single: autocommit, one statement per
# line) on a private cluster of PROFILE_ROWS records, and reports
#
#   (instructions of the long run - instructions of the short run) / PROFILE_CALLS
#
# i.e. the steady-state cost of one call, without startup and warm-up.  It
# includes parsing the EXECUTE statement and sending the result, the same for
# every workload.  callgrind_annotate of the long run (inclusive costs) goes
# to PROFILE_OUT/WORKLOAD.annotate.txt.
#
# floor_* are empty C functions with the extension's signatures and result
# types (bench/floor.c, built here with cc and loaded from the private
# cluster's directory): the cost of the call itself, the floor under each
# function.
#
# Needs the extension installed (make install).  As root it runs as the
# postgres user (initdb refuses root) on a copy of the tree and copies the
# results back; the method, the cluster and the root re-run are
# bench/profile-lib.sh's, shared with the other profilers.
#
#   PROFILE_CALLS (2000)  PROFILE_WARM (500)  PROFILE_ROWS (100000)
#   PROFILE_OUT (bench/out/profile)
#   PROFILE_SETUP ("")   SQL run after loading, to cost a schema change, e.g.
#                        "ALTER TABLE sandbox_store.instances DROP CONSTRAINT ..."
#   PROFILE_EDITION (c)  sql: profile the SQL edition instead: the plain
#                        script (PROFILE_SQL_SCRIPT, default built from this
#                        tree by src/sql/build.sh plain) installed in place of
#                        CREATE EXTENSION; the same workload files
#   PROFILE_SQL_SCRIPT   a plain script to profile (PROFILE_EDITION=sql), e.g.
#                        one built from a changed src/sql/parts/sql-edition/

set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
# shellcheck source=bench/profile-lib.sh
. "$(dirname "$0")/profile-lib.sh"
sb_name=profile
here=$sb_top/bench
rows=${PROFILE_ROWS:-100000}
edition=${PROFILE_EDITION:-c}
case $edition in c | sql) ;; *) fail "PROFILE_EDITION must be c or sql" ;; esac
if [ -n "${PROFILE_SQL_SCRIPT:-}" ]; then
  PROFILE_SQL_SCRIPT=$(realpath "$PROFILE_SQL_SCRIPT")
  [ -r "$PROFILE_SQL_SCRIPT" ] || fail "cannot read $PROFILE_SQL_SCRIPT"
  export PROFILE_SQL_SCRIPT
fi
prof_begin profile 2000 500 "$@"

workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(floor_statement ensure_auto update_auto plpgsql_ensure_auto floor_ensure
  get select plpgsql_get floor_get upsert insert_on_conflict plpgsql_upsert floor_upsert)

psql -X -q -d postgres -c "CREATE DATABASE bench"
if [ "$edition" = sql ]; then
  sql_script=${PROFILE_SQL_SCRIPT:-}
  if [ -z "$sql_script" ]; then
    sql_script=$dir/sandbox_store-sql.sql
    prof_sql_edition "$sql_script"
  fi
  say "SQL edition: $sql_script"
  psql -X -q -v ON_ERROR_STOP=1 -d bench -f "$sql_script" >/dev/null
fi
psql -X -q -v ON_ERROR_STOP=1 -d bench -v rows="$rows" -f "$here/setup.sql"
psql -X -q -v ON_ERROR_STOP=1 -d bench -f "$here/plpgsql_baseline.sql"
# The floor: empty C functions with the extension's signatures (bench/floor.c),
# loaded from this cluster's directory.
cc -O2 -fPIC -shared -I"$("${PG_CONFIG:-pg_config}" --includedir-server)" -o "$dir/floor.so" "$here/floor.c"
psql -X -q -v ON_ERROR_STOP=1 -d bench -v so="$dir/floor.so" <<'SQL'
CREATE SCHEMA bench_floor;
CREATE FUNCTION bench_floor.sandbox_ensure(key text, run_id text, max_age interval DEFAULT NULL,
    provider text DEFAULT NULL, wait interval DEFAULT NULL, lease interval DEFAULT NULL)
RETURNS SETOF sandbox_store.ensure_result AS :'so', 'floor_srf' LANGUAGE C VOLATILE;
CREATE FUNCTION bench_floor.sandbox_get(key text)
RETURNS SETOF sandbox_store.instances AS :'so', 'floor_srf' LANGUAGE C STABLE ROWS 1;
CREATE FUNCTION bench_floor.sandbox_upsert(key text, provider text, provider_sandbox_id text, thread_id text,
    latest_snapshot_id text DEFAULT NULL, latest_run_id text DEFAULT NULL,
    updated_at timestamptz DEFAULT now(), fence int8 DEFAULT NULL)
RETURNS sandbox_store.instances AS :'so', 'floor_row' LANGUAGE C VOLATILE;
SQL
if [ -n "${PROFILE_SETUP:-}" ]; then
  say "schema change: $PROFILE_SETUP"
  psql -X -q -v ON_ERROR_STOP=1 -d bench -c "$PROFILE_SETUP"
  psql -X -q -v ON_ERROR_STOP=1 -d bench -c "VACUUM ANALYZE sandbox_store.instances"
fi
version=$(psql -X -At -d bench -c "SELECT edition || ' ' || version FROM sandbox_store.edition()")
# Every run starts from this state (a workload that writes leaves dead tuples
# that would make the next one pay for pruning and hint bits).
prof_freeze

# The statement of a one-statement workload, its pgbench variables replaced
# by $1 (k), $2 (t) and $3 (r): the PREPARE, and its EXECUTEs with random keys.
statement_of() {
  # shellcheck disable=SC1003,SC2016  # '^\\': a line that starts with a backslash; $1..$3 are the statement's, not the shell's
  grep -v '^--' "$here/$1.pgbench" | grep -v '^\\' | tr '\n' ' ' |
    sed -E -e 's/;[[:space:]]*$//' -e 's/(^|[^:]):k\b/\1$1/g' -e 's/(^|[^:]):t\b/\1$2/g' \
      -e 's/(^|[^:]):r\b/\1$3/g'
}
prof_script() { # workload n
  echo "PREPARE s(int, int, int) AS $(statement_of "$1")"
  awk -v n="$2" -v rows="$rows" 'BEGIN {
    srand(42)
    for (i = 1; i <= n; i++) {
      k = 1 + int(rand() * rows)
      printf "EXECUTE s(%d, %d, %d)\n", k, k % 1000, 1 + int(rand() * 999999999)
    }
  }'
}
say "sandbox_store $version, $rows records, $calls calls after $warm warm-up calls, instructions per call:"
printf '%-22s %14s\n' workload instructions >"$out/summary.txt"
for wl in "${workloads[@]}"; do
  [ -f "$here/$wl.pgbench" ] || fail "no bench/$wl.pgbench"
  # shellcheck disable=SC1003  # '^\\': a line that starts with a backslash
  if [ "$(grep -v '^--' "$here/$wl.pgbench" | grep -v '^\\' | grep -c ';')" != 1 ]; then
    say "$wl: skipped (not a one-statement workload)"
    continue
  fi
  prof_measure "$wl" bench
  per=$prof_per
  printf '%-22s %14s\n' "$wl" "$per" | tee -a "$out/summary.txt"
done
say "per-function costs: ${PROFILE_SHOWN_OUT:-$out}/<workload>.annotate.txt (callgrind_annotate --inclusive=yes)"

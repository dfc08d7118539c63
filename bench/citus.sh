#!/usr/bin/env bash
# bench/citus.sh: throughput of sandbox_ensure (resume, autocommit) and
# sandbox_get through a citus coordinator and through a worker, side by side
# with one plain PostgreSQL server, on this machine (make bench-citus).
#
# Four servers of Debian's PostgreSQL 15 on loopback TCP: a single node
# without citus, and a coordinator with two workers (citus, built by
# test/scripts/build-citus.sh) where sandbox_store.distribute() has run.
# Each holds BENCH_ROWS records (bench/setup.sql).  Each workload runs
# BENCH_SECONDS at BENCH_CLIENTS clients against the single node, the
# coordinator and worker 1 in turn, BENCH_REPEATS times, rotating the order;
# the report gives medians and the ratios to the single node.  All four
# servers share the machine's cores, so this shows what routing a call
# through citus costs, not how citus scales.
#
#   BENCH_ROWS (20000)  BENCH_SECONDS (10)  BENCH_CLIENTS (8)  BENCH_REPEATS (3)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" = 0 ]; then
  "$top/test/scripts/build-citus.sh"
  copy=$(mktemp -d /tmp/sb_bench_citus.XXXXXX)
  cp -a "$top/bench" "$copy/"
  chown -R postgres: "$copy"
  exec runuser -u postgres -- env PG_CONFIG="${PG_CONFIG:-pg_config}" BENCH_ROWS="${BENCH_ROWS:-}" BENCH_SECONDS="${BENCH_SECONDS:-}" \
    BENCH_CLIENTS="${BENCH_CLIENTS:-}" BENCH_REPEATS="${BENCH_REPEATS:-}" "$copy/bench/citus.sh"
fi

rows=${BENCH_ROWS:-20000}
seconds=${BENCH_SECONDS:-10}
clients=${BENCH_CLIENTS:-8}
repeats=${BENCH_REPEATS:-3}
bin=$("${PG_CONFIG:-pg_config}" --bindir)
dir=$(mktemp -d "${TMPDIR:-/tmp}/sb_citus_bench.XXXXXX")
declare -A port=([single]=5811 [coordinator]=5812 [worker1]=5813 [worker2]=5814)

cleanup() {
  for n in single coordinator worker1 worker2; do
    "$bin/pg_ctl" -D "$dir/$n" -m immediate stop >/dev/null 2>&1 || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT

for n in single coordinator worker1 worker2; do
  "$bin/initdb" -D "$dir/$n" -A trust -U postgres --no-sync >/dev/null
  {
    echo "port = ${port[$n]}"
    echo "listen_addresses = '127.0.0.1'"
    echo "unix_socket_directories = '$dir'"
    echo "fsync = off"
    echo "max_connections = 200"
    echo "max_prepared_transactions = 50"
    [ "$n" = single ] || echo "shared_preload_libraries = 'citus'"
    [ "$n" = single ] || echo "citus.node_conninfo = 'sslmode=disable'"
  } >>"$dir/$n/postgresql.conf"
  "$bin/pg_ctl" -D "$dir/$n" -l "$dir/$n.log" -w start >/dev/null
done
sql() { "$bin/psql" -X -q -h 127.0.0.1 -p "${port[$1]}" -d postgres -v ON_ERROR_STOP=1 "${@:2}"; }

for n in coordinator worker1 worker2; do sql "$n" -c 'CREATE EXTENSION citus'; done
sql coordinator -c "SELECT citus_set_coordinator_host('127.0.0.1', ${port[coordinator]})" \
  -c "SELECT citus_add_node('127.0.0.1', ${port[worker1]})" \
  -c "SELECT citus_add_node('127.0.0.1', ${port[worker2]})" >/dev/null
sql coordinator -c 'CREATE EXTENSION sandbox_store' -c 'SELECT sandbox_store.distribute()' >/dev/null
sql single -c 'CREATE EXTENSION sandbox_store'
for n in single coordinator; do sql "$n" -v rows="$rows" -f "$top/bench/setup.sql" >/dev/null; done

run() { # node workload -> tps
  "$bin/pgbench" -n -h 127.0.0.1 -p "${port[$1]}" -U postgres -M prepared -c "$clients" -j "$clients" \
    -T "$seconds" -D rows="$rows" -f "$top/bench/$2.pgbench" postgres 2>/dev/null |
    sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "| workload | single node (tps) | via coordinator | via worker 1 | coordinator / single | worker / single |"
echo "|---|---:|---:|---:|---:|---:|"
for w in ensure_auto get; do
  declare -A tps=()
  order=(single coordinator worker1)
  for r in $(seq 1 "$repeats"); do
    for n in "${order[@]}"; do tps[$n]+="$(run "$n" "$w") "; done
    order=("${order[@]:1}" "${order[0]}")
  done
  s=$(echo "${tps[single]}" | tr ' ' '\n' | grep . | median)
  c=$(echo "${tps[coordinator]}" | tr ' ' '\n' | grep . | median)
  k=$(echo "${tps[worker1]}" | tr ' ' '\n' | grep . | median)
  awk -v w="$w" -v s="$s" -v c="$c" -v k="$k" \
    'BEGIN { printf "| %s | %.0f | %.0f | %.0f | %.2f | %.2f |\n", w, s, c, k, c / s, k / s }'
  unset tps
done
echo
echo "$clients clients, $seconds s per run, median of $repeats alternating runs, $rows records, $(nproc) cores."

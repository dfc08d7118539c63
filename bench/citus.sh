#!/usr/bin/env bash
# bench/citus.sh: throughput of sandbox_ensure (resume, autocommit) and
# sandbox_get through a citus coordinator and through a worker, side by side
# with one plain PostgreSQL server, on this machine (make bench-citus).
#
# Four throwaway servers of PG_CONFIG's PostgreSQL (lib.sh's clusters) on
# loopback TCP: a single node without citus, and a coordinator with two
# workers (citus, built by test/scripts/build-citus.sh) where
# sandbox_store.distribute() has run.  As root it builds citus if missing,
# then runs as postgres on a copy of the tree (initdb refuses root).
# Each holds BENCH_ROWS records (bench/setup.sql).  Each workload runs
# BENCH_SECONDS at BENCH_CLIENTS clients against the single node, the
# coordinator and worker 1 in turn, BENCH_REPEATS times, rotating the order;
# the report gives medians and the ratios to the single node.  All four
# servers share the machine's cores, so this shows what routing a call
# through citus costs, not how citus scales.
#
#   BENCH_ROWS (20000)  BENCH_SECONDS (10)  BENCH_CLIENTS (8)  BENCH_REPEATS (3)
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=bench-citus
top=$sb_top
if [ "$(id -u)" = 0 ]; then "$top/test/scripts/build-citus.sh"; fi
sb_as_postgres "$@"
sb_use_pg

rows=${BENCH_ROWS:-20000}
seconds=${BENCH_SECONDS:-10}
clients=${BENCH_CLIENTS:-8}
repeats=${BENCH_REPEATS:-3}
sb_tempdir sb_citus_bench; dir=$sb_dir
declare -A port=([single]=5811 [coordinator]=5812 [worker1]=5813 [worker2]=5814)

for n in single coordinator worker1 worker2; do
  conf=("max_connections = 200" "max_prepared_transactions = 50")
  [ "$n" = single ] || conf+=("shared_preload_libraries = 'citus'" "citus.node_conninfo = 'sslmode=disable'")
  sb_cluster_init "$dir/$n" --port "${port[$n]}" --tcp 127.0.0.1 "${conf[@]}"
  sb_cluster_start "$dir/$n"
done
sql() { psql -X -q -h 127.0.0.1 -p "${port[$1]}" -d postgres -v ON_ERROR_STOP=1 "${@:2}"; }

for n in coordinator worker1 worker2; do sql "$n" -c 'CREATE EXTENSION citus'; done
sql coordinator -c "SELECT citus_set_coordinator_host('127.0.0.1', ${port[coordinator]})" \
  -c "SELECT citus_add_node('127.0.0.1', ${port[worker1]})" \
  -c "SELECT citus_add_node('127.0.0.1', ${port[worker2]})" >/dev/null
sql coordinator -c 'CREATE EXTENSION sandbox_store' -c 'SELECT sandbox_store.distribute()' >/dev/null
sql single -c 'CREATE EXTENSION sandbox_store'
for n in single coordinator; do sql "$n" -v rows="$rows" -f "$top/bench/setup.sql" >/dev/null; done

run() { # node workload -> tps
  pgbench -n -h 127.0.0.1 -p "${port[$1]}" -U postgres -M prepared -c "$clients" -j "$clients" \
    -T "$seconds" -D rows="$rows" -f "$top/bench/$2.pgbench" postgres 2>/dev/null |
    sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "| workload | single node (tps) | via coordinator | via worker 1 | coordinator / single | worker / single |"
echo "|---|---:|---:|---:|---:|---:|"
for w in ensure_auto get; do
  declare -A tps=()
  order=(single coordinator worker1)
  for _ in $(seq 1 "$repeats"); do
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

#!/usr/bin/env bash
# bench/citus.sh [MAJOR...]: throughput of sandbox_ensure (resume,
# autocommit), sandbox_get, a driver's fenced run log append (16 chunks;
# with notify false as the TypeScript client appends, delegated, and
# without notify, not delegated) and a reader's resume read (the 16 entries
# after seq 240 of a 256-entry log) through a citus coordinator and through a
# worker, side by side with one plain PostgreSQL server, on this machine
# (make bench-citus), once per Citus/PostgreSQL pair: Citus 13.2.2 on the
# PostgreSQL 15 of PG_CONFIG and Citus 14.0.1 on PostgreSQL 18.6 (MAJORs:
# 15 18 unless given).  One table: a pair's rows beside the other's.
#
# Per pair, four throwaway servers of that PostgreSQL (lib.sh's clusters) on
# loopback TCP: a single node without citus, and a coordinator with two
# workers (citus, built by test/scripts/build-citus.sh) where
# sandbox_store.distribute() has run.  As root it builds what a pair lacks
# (the server by test/scripts/build-server.sh, Citus, and sandbox_store from
# a copy of the tree, as make matrix does), then runs as postgres on a copy
# of the tree (initdb refuses root); as anyone else a pair whose server,
# Citus or sandbox_store is missing is skipped, and said so.
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
clients=${BENCH_CLIENTS:-8}
seconds=${BENCH_SECONDS:-10}
repeats=${BENCH_REPEATS:-3}
rows=${BENCH_ROWS:-20000}

if [ "${1:-}" != --pair ]; then
  # The driver: each pair's server, Citus and sandbox_store, then its rows.
  majors=("$@")
  [ ${#majors[@]} -gt 0 ] || majors=(15 18)
  base_pgc=$(command -v "${PG_CONFIG:-pg_config}") || fail "${PG_CONFIG:-pg_config} not found"
  sb_tempdir sb_citus_bench_build
  echo "| Citus on PostgreSQL | workload | single node (tps) | via coordinator | via worker 1 | coordinator / single | worker / single |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  ran=0
  for major in "${majors[@]}"; do
    pgc=$("$top/test/scripts/build-server.sh" "$major") || { warn "PostgreSQL $major: no server, skipped"; continue; }
    if [ "$pgc" != "$base_pgc" ] && [ "$(id -u)" = 0 ]; then
      # sandbox_store for that server, compiled from a copy (the tree's
      # objects are the base server's).
      copy=$sb_dir/pg$major
      sb_copy_tree "$copy"
      make -C "$copy" -s PG_CONFIG="$pgc" all install >"$copy/build.log" 2>&1 ||
        { cat "$copy/build.log" >&2; fail "building sandbox_store for PostgreSQL $major failed"; }
    fi
    citus=$("$top/test/scripts/build-citus.sh" "$pgc") || fail "building Citus for PostgreSQL $major failed"
    if [ -z "$citus" ]; then warn "PostgreSQL $major: no Citus, skipped"; continue; fi
    if [ ! -f "$("$pgc" --sharedir)/extension/sandbox_store.control" ]; then
      warn "PostgreSQL $major: sandbox_store is not installed (run as root), skipped"
      continue
    fi
    PG_CONFIG=$pgc "$sb_self" --pair
    ran=$((ran + 1))
  done
  [ "$ran" -gt 0 ] || fail "no Citus/PostgreSQL pair to measure"
  echo
  echo "$clients clients, $seconds s per run, median of $repeats alternating runs, $rows records, $(nproc) cores."
  exit 0
fi

# One pair: the server of PG_CONFIG and its Citus, as postgres.
sb_as_postgres "$@"
sb_use_pg

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
# Runs for the run log workloads, one per client of each: fenced-N, claimed
# at epoch 1000000, for the appends; resume-N with 256 entries for the reads.
for n in single coordinator; do
  sql "$n" -v clients="$clients" >/dev/null <<'SQL'
SELECT count(sandbox_store.run_create_or_resume('fenced-' || c, 'thread-' || c, 1767225600000)),
       count(sandbox_store.run_update('fenced-' || c, jsonb_build_object('driverEpoch', 1000000)))
  FROM generate_series(0, :clients - 1) c;
SELECT count(sandbox_store.run_log_append('resume-' || c, b.batch))
  FROM generate_series(0, :clients - 1) c,
       LATERAL (SELECT jsonb_agg(jsonb_build_object('type', 'TEXT_MESSAGE_CONTENT', 'seq', i, 'delta', repeat('x', 160)))
                  AS batch FROM generate_series(1, 16) i) b,
       generate_series(1, 16) r;
SQL
done
# One batch of 16 chunks of about 200 bytes of JSON.
chunks=$(sql single -Atc "SELECT jsonb_agg(jsonb_build_object('type', 'TEXT_MESSAGE_CONTENT', 'messageId', 'msg-7f3a9c',
  'delta', 'Step ' || i || ': the build passed, 42 tests green; now updating the README and the changelog.'))
  FROM generate_series(1, 16) i")

run() { # node workload -> tps
  local vars=()
  case $2 in
    runlog_append*) vars=(-D prefix=fenced- -D epoch=1000000 -D "chunks=$chunks") ;;
    runlog_resume) vars=(-D prefix=resume- -D after=240) ;;
  esac
  pgbench -n -h 127.0.0.1 -p "${port[$1]}" -U postgres -M prepared -c "$clients" -j "$clients" \
    -T "$seconds" -D rows="$rows" "${vars[@]}" -f "$top/bench/$2.pgbench" postgres 2>/dev/null |
    sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

pair=$(sql coordinator -Atc \
  "SELECT split_part(citus_version(), ' ', 2) || ' on ' || split_part(current_setting('server_version'), ' ', 1)")
for w in ensure_auto get runlog_append_quiet runlog_append runlog_resume; do
  declare -A tps=()
  order=(single coordinator worker1)
  for _ in $(seq 1 "$repeats"); do
    for n in "${order[@]}"; do tps[$n]+="$(run "$n" "$w") "; done
    order=("${order[@]:1}" "${order[0]}")
  done
  s=$(echo "${tps[single]}" | tr ' ' '\n' | grep . | median)
  c=$(echo "${tps[coordinator]}" | tr ' ' '\n' | grep . | median)
  k=$(echo "${tps[worker1]}" | tr ' ' '\n' | grep . | median)
  awk -v p="$pair" -v w="$w" -v s="$s" -v c="$c" -v k="$k" \
    'BEGIN { printf "| %s | %s | %.0f | %.0f | %.0f | %.2f | %.2f |\n", p, w, s, c, k, c / s, k / s }'
  unset tps
done

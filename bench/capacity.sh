#!/usr/bin/env bash
# bench/capacity.sh: how many live streams one server carries (phase
# capacity of bench/run.sh; alone: test/scripts/with-cluster.sh bench/capacity.sh).
#
# N concurrent runs, each with ONE producer and ONE reader, in one node
# process (bench/capacity.mjs): the producer appends a batch of 4
# TEXT_MESSAGE_CONTENT chunks every 50 ms (20 batches/s, like a driver's pipe
# batches of a streamed answer) through createStreamDurability(pool, { runId })
# on a producers' pool; the reader tails the run through
# createStreamDurability(readerPool, { runId }).read('-1') on a pool of its
# own (as a second server would; each pool BENCH_CAPACITY_POOL connections,
# the readers' one LISTEN connection besides).  The producers' slots are
# spread evenly over the 50 ms.  Each chunk carries the time its producer
# started the append; delay = the reader's receipt - that time, over the
# chunks sent in a BENCH_CAPACITY_WINDOW-second window after a
# BENCH_CAPACITY_WARMUP-second warm-up: p50, p99, max.  A slot is late when
# its append took longer than 50 ms, missed (skipped) when the producer's
# previous append ended a whole slot after the slot's start: the producer
# fell behind its rate.  (A timer that fires late because node is busy
# starts the append late; that is in neither count nor in the delay: see
# the event loop's delay.)  N is raised through BENCH_CAPACITY_NS until p99
# > 100 ms or the appends fell behind: more than 5% of the window's slots
# late or missed (not 1%: on a shared machine one scheduling stall of a few
# hundred milliseconds costs 1-3% of a 6-second window's slots).  After the window the producers close
# their logs and every reader must have read every chunk exactly once, in
# order (else the phase fails).
#
# Both editions, one after the other: the C edition (database
# bench_capacity, CREATE EXTENSION sandbox_store) and the SQL edition
# (bench_capacity_sql, the plain script from src/sql/build.sh plain, as
# bench/runlog.sh makes bench_runlog_sql); then the floor, @tanstack/ai
# 0.58's in-process memoryStream with the same producers and readers, when
# clients/typescript/test/lines/0.58 is installed (else left out, and said).
#
# CPU: server CPU = utime + stime over the window of the postmaster and its
# children at the window's start and end (/proc/<pid>/stat): every backend
# and background process of the cluster, not processes that started or ended
# inside the window (the pools' connections live through it).  Per stream:
# that / window / N, as a percentage of one core.  Also the node process's
# CPU, the machine's busy share (/proc/stat, every process of the machine),
# node's event-loop delay p99, and the wait events of the active client
# backends in pg_stat_activity sampled every 100 ms (mean backends per
# sample; "CPU" = active without a wait event).
#
# Producers, readers and server share the machine: what gives first may be
# node's event loop as well as the server.  Writes BENCH_OUT (default
# bench/out/): capacity.md, capacity.tsv, capacity.dat, capacity.svg.
#
# Options (environment):
#   BENCH_CAPACITY_NS ("10 20 30 50 75 100 150 200 300 400")  stream counts
#   BENCH_CAPACITY_WARMUP (2)   seconds before each window
#   BENCH_CAPACITY_WINDOW (6)   seconds measured per N
#   BENCH_CAPACITY_POOL (20)    connections per pool
#   BENCH_SMOKE (0)             1: N = 2 and 4, 0.3 s warm-up, 1 s windows,
#                               every N run: checks that every reader got
#                               every chunk once and in order, nothing else
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=bench-capacity
here=$sb_top/bench
smoke=${BENCH_SMOKE:-0}
ns=${BENCH_CAPACITY_NS:-"10 20 30 50 75 100 150 200 300 400"}
warmup=${BENCH_CAPACITY_WARMUP:-2}
window=${BENCH_CAPACITY_WINDOW:-6}
pool=${BENCH_CAPACITY_POOL:-20}
stop=100
out=${BENCH_OUT:-$here/out}
if [ "$smoke" = 1 ]; then
  ns="2 4" warmup=0.3 window=1 stop=0
fi
db=bench_capacity
sqldb=bench_capacity_sql
client=$sb_top/clients/typescript
line=$client/test/lines/0.58

mkdir -p "$out"
rm -f "$out"/capacity.md "$out"/capacity.tsv "$out"/capacity.dat "$out"/capacity.svg
start=$SECONDS
if ! command -v node >/dev/null 2>&1 || [ ! -f "$client/dist/index.js" ] || [ ! -d "$client/node_modules/pg" ]; then
  note="skipped: the TypeScript client is not built (cd clients/typescript && npm ci && npm run build)"
  say "$note"
  printf '### Live streams: capacity\n\n%s\n' "$note" >"$out/capacity.md"
  exit 0
fi
sb_tempdir sandbox_store_capacity; work=$sb_dir

sb_fresh_db "$db"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION sandbox_store"
version=$(psql -X -At -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'")
sb_fresh_db "$sqldb"
"$sb_top/src/sql/build.sh" plain "$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$sb_top/sandbox_store.control")" \
  >"$work/sandbox_store-sql.sql"
psql -X -q -v ON_ERROR_STOP=1 -d "$sqldb" -f "$work/sandbox_store-sql.sql" >/dev/null

# The server's processes: the postmaster and its children.
postmaster=$(head -n 1 "$(psql -X -At -d "$db" -c "SHOW data_directory")/postmaster.pid")
[ -r "/proc/$postmaster/stat" ] || fail "cannot read /proc/$postmaster/stat (the postmaster)"

editions=("c|$db|C edition (CREATE EXTENSION)" "sql|$sqldb|SQL edition (plain script)")
floor_note=""
if [ -f "$line/node_modules/@tanstack/ai/dist/esm/index.js" ]; then
  editions+=("memory||memoryStream floor (@tanstack/ai 0.58, in-process)")
else
  floor_note="The memoryStream floor is left out: clients/typescript/test/lines/0.58 is not installed (npm ci there)."
fi

printf 'edition\tN\tp50_ms\tp99_ms\tmax_ms\tsamples\tslots\tlate\tmissed\tserver_cpu_s\tnode_cpu_s\tmachine_busy_pct\tloop_p99_ms\twaits\n' >"$out/capacity.tsv"
for e in "${editions[@]}"; do
  IFS='|' read -r ed edb label <<<"$e"
  say "capacity: $label, N = $ns"
  backend=pg pids="echo $postmaster; pgrep -P $postmaster"
  [ "$ed" = memory ] && backend=memory pids=""
  BACKEND=$backend NS="$ns" WARMUP_MS=$(awk -v s="$warmup" 'BEGIN { print s * 1000 }') \
    WINDOW_MS=$(awk -v s="$window" 'BEGIN { print s * 1000 }') STOP_P99_MS=$stop POOL_MAX=$pool \
    SAMPLE_PIDS="$pids" PGDATABASE=${edb:-$db} \
    node "$here/capacity.mjs" >"$work/$ed.tsv" || fail "capacity: $label: bench/capacity.mjs failed"
  [ -s "$work/$ed.tsv" ] || fail "capacity: $label: no result"
  sed "s/^/$ed\t/" "$work/$ed.tsv" | tee -a "$out/capacity.tsv" | sed 's/^/bench-capacity: /'
done

# capacity.dat: N, then p50 and p99 of c, sql, memory ("?" where not run).
awk -F'\t' 'NR > 1 { v[$2, $1] = $3 " " $4; n[$2] = 1 }
  END { print "# N c_p50 c_p99 sql_p50 sql_p99 memory_p50 memory_p99"
        for (k in n) { line = k
          split("c sql memory", eds, " ")
          for (i = 1; i <= 3; i++) line = line " " ((k, eds[i]) in v ? v[k, eds[i]] : "? ?")
          print line } }' "$out/capacity.tsv" | sort -n >"$out/capacity.dat"
if command -v gnuplot >/dev/null 2>&1; then
  gnuplot -e "datafile='$out/capacity.dat'; outfile='$out/capacity.svg'; subtitle='nproc=$(nproc), PostgreSQL $(psql -X -At -d postgres -c 'SHOW server_version' | cut -d' ' -f1), sandbox_store $version, all on one machine'" \
    "$here/capacity.gp" || fail "gnuplot failed"
else
  say "gnuplot not installed: no chart (apt-get install gnuplot-nox)"
fi

# The summary per edition: the highest N with p99 under 50 and under 100 ms
# whose appends kept up (<= 5% of the slots late or missed), and the server
# CPU per stream at the highest N under 100 ms (% of one core).
summary() { # edition
  awk -F'\t' -v ed="$1" -v w="$window" -v smoke="$smoke" '
    $1 == ed { kept = ($8 + $9) <= 0.05 * $7
               if (kept && $4 < 50) n50 = $2
               if (kept && $4 < 100) { n100 = $2; cpu = $10 / w / $2 * 100 }
               last = $2; lastok = kept && $4 < 100 }
    END { more = lastok && !smoke ? " (the highest measured)" : ""
          printf "%s|%s|%s", (n50 == "" ? "none" : n50 (n50 == last ? more : "")),
                 (n100 == "" ? "none" : n100 (n100 == last ? more : "")),
                 (cpu == "" || ed == "memory" ? "" : sprintf("%.2f%%", cpu)) }' "$out/capacity.tsv"
}
{
  echo "### Live streams: capacity ($(date -u '+%Y-%m-%d %H:%M UTC'), nproc=$(nproc), load average at the end $(cut -d' ' -f1-3 /proc/loadavg))"
  echo
  [ "$smoke" != 1 ] || { echo "SMOKE RUN (N = $ns, ${window} s windows): checks that every reader got every chunk once and in order; measures nothing."; echo; }
  echo "N runs, each one producer appending 4 chunks every 50 ms and one reader tailing it (one node process, a"
  echo "producers' pool and a readers' pool of $pool connections); delay = reader's receipt - start of the append,"
  echo "chunks sent in a ${window} s window after ${warmup} s; N raised until p99 > 100 ms or appends fell behind."
  echo
  echo "| | N at p99 < 50 ms | N at p99 < 100 ms | server CPU per stream (% of a core) |"
  echo "|---|---:|---:|---:|"
  for e in "${editions[@]}"; do
    IFS='|' read -r ed _ label <<<"$e"
    IFS='|' read -r a b c <<<"$(summary "$ed")"
    echo "| $label | $a | $b | ${c:--} |"
  done
  echo
  echo "| edition | N | p50 ms | p99 ms | max ms | late / missed of slots | server CPU s | node CPU s | machine busy | event loop p99 ms | active backends by wait (mean) |"
  echo "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"
  awk -F'\t' 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s / %s of %s | %s | %s | %s%% | %s | %s |\n", $1, $2, $3, $4, $5, $8, $9, $7, ($10 == "?" ? "-" : $10), $11, $12, $13, $14 }' \
    "$out/capacity.tsv"
  echo
  [ -z "$floor_note" ] || { echo "$floor_note"; echo; }
  echo "Chart: capacity.svg; raw: capacity.tsv. Phase time: $((SECONDS - start)) s."
} >"$out/capacity.md"
cat "$out/capacity.md"

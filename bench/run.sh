#!/usr/bin/env bash
# bench/run.sh: side-by-side benchmark of sandbox_store against plain SQL and
# a PL/pgSQL implementation.  See BENCHMARKS.md for the method and
# the results; `make bench` runs this on a throwaway cluster:
#
#   test/scripts/with-cluster.sh bench/run.sh
#
# Runs against the server in PGHOST/PGPORT/PGUSER (a superuser, with
# sandbox_store installed).  Creates its own databases (bench, bench_sql,
# bench_mem, bench_scale, bench_hot) and drops them at the end.  Phases:
#
#   main        each workload of bench/*.pgbench (prepared statements) at
#               BENCH_CLIENTS clients over BENCH_ROWS records, in groups
#               (extension, plain SQL, PL/pgSQL, SQL edition) run
#               alternately, rotating the order, BENCH_REPEATS times: medians
#               and ratios.  The SQL edition runs the extension's workload
#               files unchanged in database bench_sql, where the plain script
#               (src/sql/build.sh plain) is installed instead of CREATE
#               EXTENSION; its workloads are recorded as sql_<workload>.
#               The lease-mode create cycle (create_lease2) runs here too,
#               both editions alternately, the new records removed after
#               each run (their released claims stay).
#   plot        the ensure groups at the other BENCH_PLOT_CLIENTS counts
#               (BENCH_PLOT_REPEATS runs each) for the throughput / p99 plot
#   contention  BENCH_CONTENTION_CLIENTS clients on 1 new key and on 64 new
#               keys: throughput, p50/p99, and exactly one create per key
#               (checked: a violation fails the run)
#   memory      BENCH_MEMORY_CALLS sandbox_ensure calls in ONE backend, then
#               calls of the other functions: pg_backend_memory_contexts
#               read in that same session; the same calls are the bloat
#               measurement (HOT share of the resume stamps, table growth)
#   hot         (BENCH_HOT_EXPERIMENTS=1) HOT share of BENCH_HOT_STAMPS
#               stamps for table variants: fillfactor, no updated_at index,
#               BRIN, stamping a non-indexed column, an hourly bucket index
#   rtt         the headline workloads and the create cycle of both modes
#               behind a simulated network round trip of 0, 0.2, 0.5 and 1 ms
#               (bench/rtt.sh, with its own BENCH_RTT_* options; database
#               bench_rtt): rtt.md, rtt.png
#   redis       "why not Redis?": sandbox_store beside a Redis lock and
#               record (Debian's redis-server, started and stopped by the
#               phase) on the same jobs through the same delay proxy, at two
#               durability levels each, then the semantics side by side
#               (a stalled holder, a killed server, a killed client)
#               (bench/redis.sh and bench/redis-semantics.sh, with their own
#               BENCH_REDIS_* options; database bench_redis): redis.md,
#               redis-semantics.md.  Not part of the smoke run.
#   runlog      the run log (1.5): run_log_append of 16-chunk batches beside
#               a bare 16-row INSERT at 8 clients (ratio), and the
#               append-to-reader wake latency through LISTEN/NOTIFY
#               (bench/runlog.sh, with its own BENCH_RUNLOG_* options;
#               database bench_runlog): runlog.md.  Skipped (and said so)
#               when the installed extension has no run log
#   checkpoints the checkpoint store: append (the head read inside it, and
#               read first in a statement of its own), get and list, the
#               C edition and the SQL edition beside the by-hand SQL
#               (insert plus head compare-and-set), at 1 and 8 clients
#               (bench/checkpoints.sh, with its own BENCH_CP_* options;
#               databases bench_cp, bench_cp_sql): checkpoints.md
#   capacity    live streams: N runs at once, each a producer appending a
#               batch every 50 ms and a reader tailing it through the
#               TypeScript client, N raised until p99 delay > 100 ms; both
#               editions and memoryStream's floor (bench/capacity.sh, with
#               its own BENCH_CAPACITY_* options; databases bench_capacity,
#               bench_capacity_sql): capacity.md, capacity.svg.  Skipped (and
#               said so) when the client is not built
#   browser     a streamed answer in headless chromium after a fault: the
#               chat-resume example (two replicas, its balancer, its page)
#               through kill -9, SIGSTOP, a cut and a chain of both, the
#               time to the next new token in the page's DOM and every
#               token checked once and in order, beside the same page on
#               resumable-stream with Redis (bench/browser.sh, with its own
#               BENCH_BROWSER_* options; database bench_browser):
#               browser.md, browser.tsv.  In the smoke run one trial of
#               the kill -9; skipped (and said so) without chromium
#   scale       the extension / plain SQL pairs at BENCH_SCALE_CLIENTS clients
#               over BENCH_SCALE_ROWS records, alternating with the same
#               workloads over BENCH_ROWS records: ratios and latency growth
#
# Prints the report (markdown) at the end and writes everything to
# BENCH_OUT (default bench/out/): report.md, runs.tsv, machine.txt,
# pgbench.log, memory.txt, plot.dat, plot.png.
#
# Options (environment):
#   BENCH_SECONDS (5)            length of one pgbench run
#   BENCH_REPEATS (3)            alternating runs per workload and client count
#   BENCH_CLIENTS ("8 64")       client counts of the main matrix
#   BENCH_ROWS (100000)          records of the main data set
#   BENCH_PLOT_CLIENTS ("1 4 8 16 64")  client counts of the plot
#   BENCH_PLOT_SECONDS (3)       length of a plot-only run
#   BENCH_PLOT_REPEATS (BENCH_REPEATS)  alternating runs per plot-only point
#   BENCH_CONTENTION_CLIENTS (64)
#   BENCH_MEMORY_CALLS (1000000) ensure calls of the memory / bloat phase
#   BENCH_HOT_EXPERIMENTS (0)    1: run the 9 HOT variants (60-130 s each)
#   BENCH_HOT_STAMPS (1000000)   stamps per HOT variant
#   BENCH_HOT_VARIANTS (all)     which HOT variants (numbers, see below)
#   BENCH_SCALE_ROWS (10000000)  records of the scale phase; 0 skips it
#   BENCH_SCALE_CLIENTS ("8")
#   BENCH_THREADS (2)            pgbench -j (at most the client count)
#   BENCH_SHARED_BUFFERS (3GB)   on a throwaway cluster of with-cluster.sh
#                                only: ALTER SYSTEM + restart so the scale
#                                data set fits; "" leaves the server alone
#   BENCH_GROUPS ("ensure_auto ensure_txn get upsert lease create")  the
#                                main phase's workload groups to run
#   BENCH_PHASES ("main plot rtt redis runlog checkpoints capacity browser contention memory scale")  the phases to run
#                                (hot is added by BENCH_HOT_EXPERIMENTS=1)
#   BENCH_OUT (bench/out)        output directory
#   BENCH_SQL_EDITION (1)        0: leave the SQL edition out of main and rtt
#   BENCH_SQL_SCRIPT             the SQL edition's plain script to measure in
#                                main, an absolute path (default: built from
#                                this tree), e.g. a variant built on a branch
#   BENCH_SMOKE (0)              1: a tiny run (seconds) of every workload and
#                                phase, to check the harness; never judges speed
#
# Exit status: non-zero if any workload failed to produce a throughput, a
# pgbench run reported errors, a phase produced no result, or a key was
# created more than once.  Missed performance targets are reported, not
# failures: the benchmark is not a test.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=bench
here=$sb_top/bench
cd "$sb_top"

smoke=${BENCH_SMOKE:-0}
secs=${BENCH_SECONDS:-5}
repeats=${BENCH_REPEATS:-3}
clients_list=${BENCH_CLIENTS:-"8 64"}
rows=${BENCH_ROWS:-100000}
plot_clients=${BENCH_PLOT_CLIENTS:-"1 4 8 16 64"}
plot_secs=${BENCH_PLOT_SECONDS:-3}
plot_repeats=${BENCH_PLOT_REPEATS:-}
cont_clients=${BENCH_CONTENTION_CLIENTS:-64}
mem_calls=${BENCH_MEMORY_CALLS:-1000000}
hot=${BENCH_HOT_EXPERIMENTS:-0}
hot_stamps=${BENCH_HOT_STAMPS:-1000000}
scale_rows=${BENCH_SCALE_ROWS:-10000000}
scale_clients=${BENCH_SCALE_CLIENTS:-"8"}
run_groups=${BENCH_GROUPS:-"ensure_auto ensure_txn get upsert lease create"}
threads_max=${BENCH_THREADS:-2}
shared_buffers=${BENCH_SHARED_BUFFERS-3GB}
out=${BENCH_OUT:-$here/out}
sql_edition=${BENCH_SQL_EDITION:-1}
sql_db=bench_sql
smoke_txns=0

if [ "$smoke" = 1 ]; then
  # Every workload and phase once, on tiny data, with a fixed number of
  # transactions per client instead of a duration: 10-20 seconds in all.
  repeats=1 clients_list="2" rows=1000 plot_clients="1 2" cont_clients=4
  mem_calls=2000 hot=${BENCH_HOT_EXPERIMENTS:-1} hot_stamps=500
  scale_rows=${BENCH_SCALE_ROWS:-3000} scale_clients="2" smoke_txns=20
  shared_buffers=""
fi
mem_other=$((mem_calls / 20))
# The smoke run (part of make test) leaves out the Redis comparison: a
# benchmark, not a test, and the only phase that needs Redis.
default_phases="main plot rtt redis runlog checkpoints capacity browser contention memory scale"
[ "$smoke" = 1 ] && default_phases=${default_phases/ redis/}
phases=" ${BENCH_PHASES:-$default_phases} "
[ "$hot" = 1 ] && [[ $phases != *" hot "* ]] && phases="$phases hot "
[ "$scale_rows" -gt 0 ] || phases=${phases/ scale / }
has_phase() { case "$phases" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
plot_repeats=${plot_repeats:-$repeats}

mkdir -p "$out"
rm -f "$out"/runs.tsv "$out"/pgbench.log "$out"/report.md "$out"/plot.dat "$out"/plot.png \
  "$out"/memory.txt "$out"/machine.txt
sb_tempdir sandbox_store_bench; work=$sb_dir
[ "${BENCH_KEEP_DB:-0}" = 1 ] || sb_at_exit sb_drop_db bench $sql_db bench_mem bench_scale bench_hot

psql_db() {
  local db=$1
  shift
  psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"
}

for tool in psql pgbench awk sort; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found"
done

# --- the server -------------------------------------------------------------

# On with-cluster.sh's throwaway cluster (it exports SB_CLUSTER_DIR), give the
# server enough shared_buffers for the scale data set (~2.5 GB at 10M
# records), so the scale phase measures index depth, not the OS page cache.
if [ -n "$shared_buffers" ] && [ -n "${SB_CLUSTER_DIR:-}" ]; then
  current=$(psql -X -At -d postgres -c "SHOW shared_buffers")
  if [ "$current" != "$shared_buffers" ]; then
    say "throwaway cluster: shared_buffers $current -> $shared_buffers (ALTER SYSTEM, restart)"
    psql_db postgres -c "ALTER SYSTEM SET shared_buffers = '$shared_buffers'"
    sb_use_pg
    sb_cluster_restart "$SB_CLUSTER_DIR"
  fi
fi

ext_version=$(psql -X -At -d postgres -c \
  "SELECT default_version FROM pg_available_extensions WHERE name = 'sandbox_store'")
[ -n "$ext_version" ] || fail "sandbox_store is not installed (make install)"
# A `make install` during the run would mix versions: noticed and reported.
library=$("${PG_CONFIG:-pg_config}" --pkglibdir)/sandbox_store.so
library_sum() { md5sum "$library" 2>/dev/null | cut -c1-12; }
library_at_start=$(library_sum)
# The SQL edition's plain script, built from this tree at the installed
# default version (what `make sql-edition` writes to dist/).
sql_script=${BENCH_SQL_SCRIPT:-$work/sandbox_store-$ext_version.sql}
if [ "$sql_edition" = 1 ] && [ -z "${BENCH_SQL_SCRIPT:-}" ]; then
  "$sb_top/src/sql/build.sh" plain "$ext_version" >"$sql_script" ||
    fail "could not build the SQL edition's plain script"
fi
[ "$sql_edition" != 1 ] || [ -r "$sql_script" ] || fail "cannot read $sql_script"

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "host: nproc=$(nproc), $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo)," \
    "cpu: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "server: $(psql -X -At -d postgres -c 'SELECT version()')"
  echo "settings: $(psql -X -At -d postgres -c "SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name)
      FROM pg_settings WHERE name IN ('shared_buffers', 'fsync', 'synchronous_commit', 'max_connections',
                                     'autovacuum', 'wal_level', 'jit', 'huge_pages')")"
  echo "pgbench: $(pgbench --version)"
  echo "sandbox_store: $ext_version (installed default version), library md5 $library_at_start"
  if [ "$sql_edition" = 1 ]; then
    echo "SQL edition: plain script $(basename "$sql_script"), md5 $(md5sum "$sql_script" | cut -c1-12), in database $sql_db"
  fi
  read -ra phase_list <<<"$phases"
  echo "options: seconds=$secs repeats=$repeats clients='$clients_list' rows=$rows" \
    "plot_clients='$plot_clients' contention_clients=$cont_clients memory_calls=$mem_calls" \
    "hot_experiments=$hot hot_stamps=$hot_stamps scale_rows=$scale_rows scale_clients='$scale_clients'" \
    "sql_edition=$sql_edition smoke=$smoke phases='${phase_list[*]}'"
} >"$out/machine.txt"
sed 's/^/bench: /' "$out/machine.txt"

# --- databases --------------------------------------------------------------

load_db() { # db rows
  sb_create_db "$1"
  psql_db "$1" -v rows="$2" -f "$here/setup.sql"
  psql_db "$1" -f "$here/plpgsql_baseline.sql"
}

start=$SECONDS
load_db bench "$rows"
psql_db bench <<'SQL'
CREATE TABLE bench_runs (phase text, rows bigint, workload text, clients int, rep int,
                         tps float8, lat_mean float8, p50 float8, p99 float8, txns bigint);
CREATE TABLE bench_contention (keys int, workload text, run text, creates bigint,
                               distinct_keys bigint, records bigint, ok boolean);
CREATE TABLE bench_mem_copy (label text, name text, ident text, level int,
                             total_bytes bigint, used_bytes bigint);
CREATE TABLE bench_bloat_copy (label text, n_tup_upd bigint, n_tup_hot_upd bigint,
                               n_dead_tup bigint, autovacuum_count bigint,
                               heap_bytes bigint, index_bytes bigint);
CREATE TABLE bench_hot (ord int, variant text, stamps bigint, n_tup_upd bigint, n_tup_hot_upd bigint,
                        heap_before bigint, heap_after bigint, index_before bigint, index_after bigint,
                        seconds float8);
SQL
# The SQL edition: the plain script in a database of its own (one edition per
# database), then the same data set.
if [ "$sql_edition" = 1 ] && has_phase main; then
  sb_create_db "$sql_db"
  psql_db "$sql_db" -f "$sql_script" >/dev/null
  psql_db "$sql_db" -v rows="$rows" -f "$here/setup.sql"
  [ "$(psql -X -At -d "$sql_db" -c "SELECT edition FROM sandbox_store.edition()")" = plain ] ||
    fail "$sql_db: sandbox_store.edition() does not say plain"
fi
printf 'phase\trows\tworkload\tclients\trep\ttps\tlat_mean_ms\tp50_ms\tp99_ms\ttxns\n' >"$out/runs.tsv"

# --- one pgbench run ----------------------------------------------------------

# run_one PHASE DB ROWS WORKLOAD CLIENTS REP SECONDS [pgbench args...]
# Runs bench/WORKLOAD.pgbench, checks that it ran cleanly, and records
# throughput and per-transaction latency percentiles (from pgbench -l).
# WORKLOAD sql_X runs bench/X.pgbench against the SQL edition's database.
run_one() {
  local phase=$1 db=$2 nrows=$3 wl=$4 c=$5 rep=$6 s=$7
  shift 7
  local file=$wl
  case $wl in sql_*) file=${wl#sql_} db=$sql_db ;; esac
  local j=$((c < threads_max ? c : threads_max))
  local res=$work/pgbench.out prefix=$work/txlog dur rc=0
  if [ "$smoke_txns" -gt 0 ]; then dur=(-t "$smoke_txns"); else dur=(-T "$s"); fi
  rm -f "$prefix".*
  pgbench -n -M prepared -c "$c" -j "$j" "${dur[@]}" -l --log-prefix="$prefix" \
    -D rows="$nrows" "$@" -f "$here/$file.pgbench" "$db" >"$res" 2>&1 || rc=$?
  {
    echo "=== $phase $wl clients=$c rep=$rep rows=$nrows"
    cat "$res"
  } >>"$out/pgbench.log"
  if [ $rc -ne 0 ] || grep -Eq "aborted|ERROR:|FATAL:" "$res"; then
    tail -n 20 "$res" >&2
    fail "$phase $wl clients=$c: pgbench failed (exit $rc; see above)"
  fi
  if grep -Eq "^number of failed transactions: [1-9]" "$res"; then
    tail -n 20 "$res" >&2
    fail "$phase $wl clients=$c: failed transactions"
  fi
  local tps txns
  tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$res" | head -n 1)
  txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$res")
  if [ -z "$tps" ] || [ -z "$txns" ] || [ "$txns" -eq 0 ] || ! awk -v t="$tps" 'BEGIN { exit !(t > 0) }'; then
    tail -n 20 "$res" >&2
    fail "$phase $wl clients=$c: no throughput"
  fi
  # latency (µs, 3rd field of pgbench's per-transaction log): mean, p50, p99
  local lat
  lat=$(cat "$prefix".* 2>/dev/null | awk '{ print $3 }' | sort -n | awk '
    { v[NR] = $1; s += $1 }
    END {
      if (NR == 0) exit 1
      i50 = int(NR * 0.50); if (i50 < NR * 0.50) i50++; if (i50 < 1) i50 = 1
      i99 = int(NR * 0.99); if (i99 < NR * 0.99) i99++; if (i99 < 1) i99 = 1
      printf "%.4f %.4f %.4f\n", s / NR / 1000, v[i50] / 1000, v[i99] / 1000
    }') || fail "$phase $wl clients=$c: no per-transaction log"
  rm -f "$prefix".*
  local mean p50 p99
  read -r mean p50 p99 <<<"$lat"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$phase" "$nrows" "$wl" "$c" "$rep" "$tps" \
    "$mean" "$p50" "$p99" "$txns" | tee -a "$out/runs.tsv" |
    psql_db bench -c "COPY bench_runs FROM STDIN"
  printf 'bench: %-10s %-20s c=%-3s rep=%s  tps=%9.0f  p50=%7.3f ms  p99=%7.3f ms\n' \
    "$phase" "$wl" "$c" "$rep" "$tps" "$p50" "$p99"
  # Create cycles make new keys ('new-...'): their records are removed, so
  # every run starts from the same records.  Their released claims stay, as
  # a key's leases row does in production: emptied and vacuumed, leases gets
  # plans that scan it sequentially in the SQL edition (BENCHMARKS.md).
  case $file in
    create_*)
      psql_db "$db" -c "DELETE FROM sandbox_store.instances WHERE key LIKE 'new-%'" \
        -c "VACUUM (ANALYZE) sandbox_store.instances, sandbox_store.leases"
      ;;
  esac
}

# The groups: extension, plain SQL, PL/pgSQL (bench/<name>.pgbench), and
# the SQL edition (sql_<name>: the extension's file in database bench_sql).
declare -A members=(
  [ensure_auto]="ensure_auto update_auto plpgsql_ensure_auto"
  [ensure_txn]="ensure_txn app_txn plpgsql_ensure_txn"
  [get]="get select plpgsql_get"
  [upsert]="upsert insert_on_conflict plpgsql_upsert"
  [lease]="lease lock_work"
  [create]="create_lease2"
)
groups=()
for group in ensure_auto ensure_txn get upsert; do
  case " $run_groups " in *" $group "*) groups+=("$group") ;; esac
done
if [ "$sql_edition" = 1 ]; then
  for group in ensure_auto ensure_txn get upsert create; do
    members[$group]+=" sql_${members[$group]%% *}"
  done
fi

# Lease mode (version 1.1) is measured only once sandbox_ensure has
# a `lease` argument; until then the pair is reported as skipped.  The
# two-commit create cycle needs sandbox_upsert_release (1.3).
has_lease=$(psql -X -At -d bench -c "SELECT count(*) FROM pg_proc
  WHERE pronamespace = 'sandbox_store'::regnamespace AND proname = 'sandbox_ensure'
    AND 'lease' = ANY (proargnames)")
has_release=$(psql -X -At -d bench -c "SELECT count(*) FROM pg_proc
  WHERE pronamespace = 'sandbox_store'::regnamespace AND proname = 'sandbox_upsert_release'")
if [ "$has_lease" != 0 ]; then
  lease_note="measured"
else
  lease_note="skipped: sandbox_ensure $ext_version has no lease argument (1.1)"
  say "lease pair $lease_note"
fi

# run_group PHASE DB ROWS GROUP CLIENTS REPEATS SECONDS: the members of GROUP
# alternately, the order rotated each repeat (A B C, B C A, C A B, ...).  The
# SQL edition's members run in the main phase only.
run_group() {
  local phase=$1 db=$2 nrows=$3 group=$4 c=$5 reps=$6 s=$7
  local -a all m=()
  read -ra all <<<"${members[$group]}"
  local w
  for w in "${all[@]}"; do
    [[ $phase != main && $w == sql_* ]] || m+=("$w")
  done
  local n=${#m[@]} rep i
  for rep in $(seq 1 "$reps"); do
    for i in $(seq 0 $((n - 1))); do
      run_one "$phase" "$db" "$nrows" "${m[$(((i + rep - 1) % n))]}" "$c" "$rep" "$s"
    done
  done
  # Dead tuples of this group do not slow the next one.
  psql_db "$db" -c "VACUUM sandbox_store.instances"
  if [[ " ${m[*]} " == *" sql_"* ]]; then psql_db "$sql_db" -c "VACUUM sandbox_store.instances"; fi
}

# --- main matrix ----------------------------------------------------------------

if has_phase main; then
  for group in "${groups[@]}"; do
    for c in $clients_list; do
      run_group main bench "$rows" "$group" "$c" "$repeats" "$secs"
    done
  done
fi

# --- plot sweep (ensure groups only; the main matrix gives the other points) ------

if has_phase plot; then
  for c in $plot_clients; do
    if has_phase main; then case " $clients_list " in *" $c "*) continue ;; esac; fi
    for group in ensure_auto ensure_txn; do
      run_group plot bench "$rows" "$group" "$c" "$plot_repeats" "$plot_secs"
    done
  done
fi

# --- lease pair (after the ensure runs: claims leave rows in sandbox_store.leases) ---

if [ "$has_lease" != 0 ] && has_phase main && [[ " $run_groups " == *" lease "* ]]; then
  groups+=(lease)
  for c in $clients_list; do
    run_group main bench "$rows" lease "$c" "$repeats" "$secs"
  done
fi
if [ "$has_lease" != 0 ] && has_phase main && [[ " $run_groups " == *" create "* ]]; then
  # The lease-mode create cycle (sandbox_ensure with a lease, then
  # sandbox_upsert_release) on new keys: the C edition beside the SQL edition.
  if [ "$has_release" != 0 ]; then
    groups+=(create)
    for c in $clients_list; do
      run_group main bench "$rows" create "$c" "$repeats" "$secs"
    done
  fi
fi

# --- round trips (bench/rtt.sh) -----------------------------------------------------

if has_phase rtt; then
  BENCH_OUT="$out" BENCH_ROWS="$rows" BENCH_SMOKE="$smoke" BENCH_THREADS="$threads_max" "$here/rtt.sh" ||
    fail "the round-trip phase failed"
fi

# --- why not Redis? (bench/redis.sh, bench/redis-semantics.sh) -------------------------

if has_phase redis; then
  BENCH_OUT="$out" BENCH_ROWS="$rows" BENCH_SMOKE="$smoke" BENCH_THREADS="$threads_max" "$here/redis.sh" ||
    fail "the Redis phase failed"
fi

# --- the run log (bench/runlog.sh) --------------------------------------------------

if has_phase runlog; then
  BENCH_OUT="$out" BENCH_SMOKE="$smoke" BENCH_THREADS="$threads_max" "$here/runlog.sh" ||
    fail "the run log phase failed"
  [ -s "$out/runlog.md" ] || fail "the run log phase wrote no runlog.md"
fi

# --- the checkpoint store (bench/checkpoints.sh) ----------------------------------------

if has_phase checkpoints; then
  BENCH_OUT="$out" BENCH_SMOKE="$smoke" "$here/checkpoints.sh" || fail "the checkpoints phase failed"
  [ -s "$out/checkpoints.md" ] || fail "the checkpoints phase wrote no checkpoints.md"
fi

# --- live streams: how many one server carries (bench/capacity.sh) ---------------------

if has_phase capacity; then
  BENCH_OUT="$out" BENCH_SMOKE="$smoke" "$here/capacity.sh" || fail "the capacity phase failed"
  [ -s "$out/capacity.md" ] || fail "the capacity phase wrote no capacity.md"
fi

# --- a streamed answer in the browser after a fault (bench/browser.sh) -----------------

if has_phase browser; then
  BENCH_OUT="$out" BENCH_SMOKE="$smoke" "$here/browser.sh" || fail "the browser phase failed"
  [ -s "$out/browser.md" ] || fail "the browser phase wrote no browser.md"
fi

# --- contention ------------------------------------------------------------------

has_phase contention && for keys in 1 64; do
  for rep in $(seq 1 "$repeats"); do
    for wl in contention_ensure contention_app; do
      run="c$keys-$wl-$rep"
      run_one "contention-$keys" bench "$rows" "$wl" "$cont_clients" "$rep" "$secs" \
        -D keys="$keys" -D run="$run"
      check=$(psql_db bench -At -F ' ' -v run="$run" -v keys="$keys" -v wl="$wl" <<'SQL'
WITH c AS (SELECT count(*) AS creates, count(DISTINCT key) AS keys,
                  count(*) FILTER (WHERE key NOT LIKE :'run' || '/k%') AS foreign_keys
             FROM public.bench_creates WHERE run = :'run'),
     r AS (SELECT count(*) AS records FROM sandbox_store.instances WHERE key LIKE :'run' || '/k%'),
     x AS (SELECT count(*) AS missing FROM sandbox_store.instances i
            WHERE i.key LIKE :'run' || '/k%'
              AND NOT EXISTS (SELECT FROM public.bench_creates b WHERE b.key = i.key))
INSERT INTO bench_contention
SELECT :keys, :'wl', :'run', c.creates, c.keys, r.records,
       c.creates = c.keys AND c.keys = r.records AND x.missing = 0 AND c.foreign_keys = 0
       AND r.records BETWEEN 1 AND :keys
  FROM c, r, x
RETURNING ok, creates, distinct_keys, records;
SQL
)
      read -r ok creates dkeys records <<<"$check"
      [ "$ok" = t ] || fail "contention $run: $creates creates of $dkeys distinct keys, $records records: not exactly one create per key"
      say "contention $run: $records keys, $creates creates: exactly one create per key"
    done
  done
done

# --- memory and bloat (one backend) --------------------------------------------------

if has_phase memory; then
say "memory/bloat: $mem_calls sandbox_ensure calls (then $mem_other each of get, upsert, list, lock) in one backend"
load_db bench_mem "$rows"
psql_db bench_mem -v rows="$rows" -v calls="$mem_calls" -v other="$mem_other" \
  -f "$here/memory.sql" >"$out/memory.txt" 2>&1 || {
  cat "$out/memory.txt" >&2
  fail "memory phase failed"
}
sed -n 's/^Time: /bench: memory: ensure loop took /p' "$out/memory.txt"
psql_db bench_mem -c "COPY bench_mem TO STDOUT" | psql_db bench -c "COPY bench_mem_copy FROM STDIN"
psql_db bench_mem -c "COPY bench_bloat TO STDOUT" | psql_db bench -c "COPY bench_bloat_copy FROM STDIN"
[ "$(psql -X -At -d bench -c "SELECT count(DISTINCT label) FROM bench_mem_copy")" = 4 ] ||
  fail "memory phase: missing pg_backend_memory_contexts snapshots"
[ "$(psql -X -At -d bench -c "SELECT count(*) FROM bench_bloat_copy b JOIN bench_bloat_copy a
      ON b.label = 'before' AND a.label = 'after' AND a.n_tup_upd > b.n_tup_upd")" = 1 ] ||
  fail "bloat: pg_stat_user_tables shows no stamps"
psql_db postgres -c "DROP DATABASE bench_mem"
fi

# --- HOT experiments (optional) ---------------------------------------------------

# variant: ord|name|DDL after CREATE EXTENSION (before loading)|stamp mode|version
# Variants 1-8 start from the 1.1 table (fillfactor 100, a btree on
# updated_at, six CHECK constraints), the design they were written to compare;
# variant 9 is the table of the installed default version as shipped (1.2:
# what variant 4 found, with the domain instead of the CHECK constraints).
# stamp mode ensure: sandbox_ensure (the shipped stamp: latest_run_id, updated_at);
# column: a plain UPDATE stamping latest_run_id and a new, non-indexed column
# last_used_at instead of updated_at (what a changed stamp would write).
# Variant 8 keeps the stamp as shipped but indexes a generated column, the
# hour of updated_at, for sweeps: a stamp is HOT unless the hour changed
# since the record's last write (a sweep filters on the hour, then updated_at).
# BENCH_HOT_VARIANTS ("1 2 3 4 5 6 7 8 9") picks some.
hot_variants=(
  "1|1.1 as shipped: fillfactor 100, btree (updated_at)||ensure|1.1"
  "2|fillfactor 90, btree (updated_at)|ALTER TABLE sandbox_store.instances SET (fillfactor = 90)|ensure|1.1"
  "3|fillfactor 100, no updated_at index|DROP INDEX sandbox_store.instances_updated_at_idx|ensure|1.1"
  "4|fillfactor 90, no updated_at index|ALTER TABLE sandbox_store.instances SET (fillfactor = 90); DROP INDEX sandbox_store.instances_updated_at_idx|ensure|1.1"
  "5|fillfactor 90, BRIN (updated_at)|ALTER TABLE sandbox_store.instances SET (fillfactor = 90); DROP INDEX sandbox_store.instances_updated_at_idx; CREATE INDEX instances_updated_at_brin ON sandbox_store.instances USING brin (updated_at)|ensure|1.1"
  "6|fillfactor 100, btree (updated_at), stamp writes non-indexed last_used_at|ALTER TABLE sandbox_store.instances ADD COLUMN last_used_at timestamptz|column|1.1"
  "7|fillfactor 90, btree (updated_at), stamp writes non-indexed last_used_at|ALTER TABLE sandbox_store.instances SET (fillfactor = 90); ALTER TABLE sandbox_store.instances ADD COLUMN last_used_at timestamptz|column|1.1"
  "8|fillfactor 90, btree on a generated hourly bucket of updated_at instead of updated_at|ALTER TABLE sandbox_store.instances SET (fillfactor = 90); DROP INDEX sandbox_store.instances_updated_at_idx; ALTER TABLE sandbox_store.instances ADD COLUMN updated_hour timestamp GENERATED ALWAYS AS (date_trunc('hour', updated_at AT TIME ZONE 'UTC')) STORED; CREATE INDEX instances_updated_hour_idx ON sandbox_store.instances (updated_hour)|ensure|1.1"
  "9|default version as shipped (1.2: fillfactor 90, no updated_at index, domain)||ensure|"
)
if has_phase hot; then
  sb_create_db bench_hot
  psql_db bench_hot <<'SQL'
CREATE PROCEDURE public.bench_stamp_loop(mode text, n int, nrows int)
LANGUAGE plpgsql AS $$
DECLARE
    k int;
    key text;
BEGIN
    FOR i IN 1..n LOOP
        k := 1 + floor(random() * nrows)::int;
        key := 'tenant-' || (k % 1000) || '/thread-' || k || '/sbx/e2b';
        IF mode = 'ensure' THEN
            PERFORM * FROM sandbox_store.sandbox_ensure(key => key, run_id => 'run-' || i);
        ELSE
            EXECUTE 'UPDATE sandbox_store.instances SET latest_run_id = $2, last_used_at = now()
                      WHERE key = $1 RETURNING *' USING key, 'run-' || i;
        END IF;
        COMMIT;
    END LOOP;
END
$$;
SQL
  for v in "${hot_variants[@]}"; do
    IFS='|' read -r ord name ddl mode version <<<"$v"
    case " ${BENCH_HOT_VARIANTS:-$ord} " in *" $ord "*) ;; *) continue ;; esac
    # shellcheck disable=SC2016  # '$version': an SQL literal in a double-quoted string (the shell expands it)
    psql_db bench_hot -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS sandbox_store CASCADE" \
      -c "CREATE EXTENSION sandbox_store${version:+ VERSION '$version'}"
    [ -z "$ddl" ] || psql_db bench_hot -c "$ddl"
    psql_db bench_hot -v rows="$rows" -f "$here/setup.sql"
    res=$(psql_db bench_hot -At -F ' ' -v mode="$mode" -v n="$hot_stamps" -v rows="$rows" <<'SQL'
SELECT pg_stat_force_next_flush();
CREATE TEMP TABLE b AS
SELECT n_tup_upd, n_tup_hot_upd, pg_relation_size('sandbox_store.instances') AS heap,
       pg_indexes_size('sandbox_store.instances') AS idx, clock_timestamp() AS t
  FROM pg_stat_user_tables WHERE relid = 'sandbox_store.instances'::regclass;
CALL public.bench_stamp_loop(:'mode', :n, :rows);
SELECT pg_stat_force_next_flush();
SELECT s.n_tup_upd - b.n_tup_upd, s.n_tup_hot_upd - b.n_tup_hot_upd, b.heap,
       pg_relation_size('sandbox_store.instances'), b.idx, pg_indexes_size('sandbox_store.instances'),
       extract(epoch FROM clock_timestamp() - b.t)
  FROM pg_stat_user_tables s, b WHERE s.relid = 'sandbox_store.instances'::regclass;
SQL
)
    res=$(echo "$res" | tail -n 1)
    read -r upd hotupd hb ha ib ia sec <<<"$res"
    { [ -n "$sec" ] && [ "$upd" -gt 0 ]; } || fail "HOT variant $ord: no stamps recorded ($res)"
    psql_db bench -c "INSERT INTO bench_hot VALUES ($ord, '$name', $hot_stamps, $upd, $hotupd, $hb, $ha, $ib, $ia, $sec)"
    say "hot variant $ord ($name): $hotupd of $upd stamps HOT, heap $hb -> $ha bytes, ${sec}s"
  done
  psql_db postgres -c "DROP DATABASE bench_hot"
fi

# --- scale -------------------------------------------------------------------------

if has_phase scale; then
  say "scale: loading $scale_rows records"
  sb_create_db bench_scale
  # Fast load: drop the table's indexes, insert, build them again (the same
  # definitions, read from the catalog), then VACUUM ANALYZE.
  psql_db bench_scale -c "CREATE EXTENSION sandbox_store"
  psql_db bench_scale -v rows="$scale_rows" <<'SQL'
SET maintenance_work_mem = '1GB';
CREATE TEMP TABLE idx AS
SELECT CASE WHEN c.oid IS NOT NULL
            THEN format('ALTER TABLE sandbox_store.instances ADD CONSTRAINT %I %s', c.conname, pg_get_constraintdef(c.oid))
            ELSE pg_get_indexdef(i.indexrelid) END AS create_sql,
       CASE WHEN c.oid IS NOT NULL
            THEN format('ALTER TABLE sandbox_store.instances DROP CONSTRAINT %I', c.conname)
            ELSE format('DROP INDEX %s', i.indexrelid::regclass) END AS drop_sql
  FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
 WHERE i.indrelid = 'sandbox_store.instances'::regclass;
-- All or nothing: if an index cannot be dropped (say, a foreign key of a
-- later version needs it), load with the indexes in place.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT drop_sql FROM idx LOOP
        EXECUTE r.drop_sql;
    END LOOP;
EXCEPTION WHEN others THEN
    RAISE WARNING 'bench: loading with the indexes in place: %', SQLERRM;
    DELETE FROM idx;
END
$$;
\i bench/setup.sql
SET maintenance_work_mem = '1GB';
SELECT create_sql FROM idx \gexec
VACUUM (ANALYZE) sandbox_store.instances;
SQL
  psql_db bench_scale -f "$here/plpgsql_baseline.sql"
  say "scale: loaded in $((SECONDS - start))s since start; $(psql -X -At -d bench_scale -c \
    "SELECT 'heap ' || pg_size_pretty(pg_table_size('sandbox_store.instances')) || ', indexes ' ||
            pg_size_pretty(pg_indexes_size('sandbox_store.instances'))")"
  # Extension and plain-SQL workload of each pair, each at both sizes, run
  # alternately (order rotated per repeat): the latency growth from
  # BENCH_ROWS to BENCH_SCALE_ROWS compares runs made side by side, not runs
  # made minutes apart under another background load.  The 100k runs are
  # recorded as phase scale-ref.
  for group in ensure_auto ensure_txn get upsert; do
    read -ra m <<<"${members[$group]}"
    runs=("scale bench_scale $scale_rows ${m[0]}" "scale bench_scale $scale_rows ${m[1]}"
      "scale-ref bench $rows ${m[0]}" "scale-ref bench $rows ${m[1]}")
    for c in $scale_clients; do
      for rep in $(seq 1 "$repeats"); do
        for i in 0 1 2 3; do
          read -r ph db nr wl <<<"${runs[$(((i + rep - 1) % 4))]}"
          run_one "$ph" "$db" "$nr" "$wl" "$c" "$rep" "$secs"
        done
      done
    done
    psql_db bench_scale -c "VACUUM sandbox_store.instances"
    psql_db bench -c "VACUUM sandbox_store.instances"
  done
  psql_db postgres -c "DROP DATABASE bench_scale"
fi

# --- checks: every workload produced a number ----------------------------------------

expected=()
for group in "${groups[@]}"; do
  for wl in ${members[$group]}; do
    if has_phase main; then
      for c in $clients_list; do expected+=("main:$wl:$c"); done
    fi
    if has_phase scale && [ "$group" != lease ] && [ "$group" != create ] &&
      [[ $wl != plpgsql_* && $wl != sql_* ]]; then
      for c in $scale_clients; do expected+=("scale:$wl:$c" "scale-ref:$wl:$c"); done
    fi
  done
done
if has_phase plot; then
  for c in $plot_clients; do
    for wl in ${members[ensure_auto]} ${members[ensure_txn]}; do
      [[ $wl == sql_* ]] || expected+=("plot|main:$wl:$c")
    done
  done
fi
if has_phase contention; then
  for keys in 1 64; do
    for wl in contention_ensure contention_app; do expected+=("contention-$keys:$wl:$cont_clients"); done
  done
fi
missing=0
for e in "${expected[@]}"; do
  IFS=: read -r ph wl c <<<"$e"
  n=$(psql -X -At -d bench -v ph="$ph" -v wl="$wl" -v c="$c" <<'SQL'
SELECT count(*) FROM bench_runs
 WHERE phase = ANY (string_to_array(:'ph', '|')) AND workload = :'wl' AND clients = :c AND tps > 0;
SQL
)
  if [ "$n" -lt 1 ]; then
    warn "no throughput for $e"
    missing=$((missing + 1))
  fi
done
[ $missing -eq 0 ] || fail "$missing workloads produced no throughput"

# --- report ------------------------------------------------------------------------------

# plot.dat: clients, then median tps and median p99 of each ensure workload
plot_wls="ensure_auto update_auto plpgsql_ensure_auto ensure_txn app_txn plpgsql_ensure_txn"
{
  printf '# clients'
  for wl in $plot_wls; do printf ' %s_tps %s_p99ms' "$wl" "$wl"; done
  echo
  psql -X -At -F ' ' -d bench -v wls="$plot_wls" <<'SQL'
WITH m AS (
  SELECT workload, clients,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY tps) AS tps,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY p99) AS p99
    FROM bench_runs WHERE phase IN ('main', 'plot') GROUP BY workload, clients)
SELECT c.clients,
       string_agg(coalesce(round(m.tps::numeric)::text, '?') || ' ' || coalesce(round(m.p99::numeric, 3)::text, '?'),
                  ' ' ORDER BY w.ord)
  FROM (SELECT DISTINCT clients FROM m) c
 CROSS JOIN unnest(string_to_array(:'wls', ' ')) WITH ORDINALITY AS w(workload, ord)
  LEFT JOIN m ON m.workload = w.workload AND m.clients = c.clients
 GROUP BY c.clients ORDER BY c.clients;
SQL
} >"$out/plot.dat"
if ! has_phase main && ! has_phase plot; then
  :
elif [[ " $run_groups " != *" ensure_auto "* && " $run_groups " != *" ensure_txn "* ]]; then
  say "no ensure group ran: no plot"
elif command -v gnuplot >/dev/null 2>&1; then
  gnuplot -e "datafile='$out/plot.dat'; outfile='$out/plot.png'; subtitle='$rows records, nproc=$(nproc), PostgreSQL $(psql -X -At -d postgres -c 'SHOW server_version' | cut -d' ' -f1), median of runs'" \
    "$here/plot.gp" || fail "gnuplot failed"
  [ -s "$out/plot.png" ] || fail "gnuplot wrote no plot"
else
  say "gnuplot not installed: no plot (apt-get install gnuplot-nox)"
fi

library_note=""
if [ "$(library_sum)" != "$library_at_start" ]; then
  library_note="WARNING: $library changed during the run (md5 $library_at_start -> $(library_sum)): the results mix versions; run again."
  warn "$library_note"
fi

{
  echo "## sandbox_store benchmark"
  echo
  [ -z "$library_note" ] || { echo "**$library_note**"; echo; }
  sed 's/^/    /' "$out/machine.txt"
  psql_db bench -v rows="$rows" -v scale_rows="$scale_rows" -v lease_note="$lease_note" \
    -v mem_calls="$mem_calls" -v mem_other="$mem_other" \
    -v main="$(has_phase main && echo true || echo false)" \
    -v scale="$(has_phase scale && echo true || echo false)" \
    -v contention="$(has_phase contention && echo true || echo false)" \
    -v memory="$(has_phase memory && echo true || echo false)" -f "$here/report.sql"
  if has_phase hot; then
    echo
    echo "### HOT experiments: $hot_stamps stamps over $rows records per variant (one backend, one transaction per stamp)"
    echo
    echo "| # | table variant | HOT share | heap growth | index growth | stamps/s (one backend) |"
    echo "|---:|---|---:|---:|---:|---:|"
    psql -X -At -d bench -c "SELECT format('| %s | %s | **%s%%** | %s -> %s (%s%%) | %s -> %s | %s |', ord, variant,
        round(100.0 * n_tup_hot_upd / nullif(n_tup_upd, 0), 1),
        pg_size_pretty(heap_before), pg_size_pretty(heap_after),
        round(100.0 * (heap_after - heap_before) / nullif(heap_before, 0)),
        pg_size_pretty(index_before), pg_size_pretty(index_after), round(stamps / seconds))
      FROM bench_hot ORDER BY ord"
  fi
  echo
  if has_phase rtt; then
    echo
    cat "$out/rtt.md"
  fi
  if has_phase runlog; then
    echo
    cat "$out/runlog.md"
  fi
  if has_phase checkpoints; then
    echo
    cat "$out/checkpoints.md"
  fi
  if has_phase capacity; then
    echo
    cat "$out/capacity.md"
  fi
  if has_phase browser; then
    echo
    cat "$out/browser.md"
  fi
  if has_phase redis; then
    echo
    cat "$out/redis.md"
    if [ -f "$out/redis-semantics.md" ]; then
      echo
      cat "$out/redis-semantics.md"
    fi
  fi
  echo
  echo "Total time: $((SECONDS - start)) s.  Raw runs: runs.tsv; pgbench output: pgbench.log."
} >"$out/report.md"

cat "$out/report.md"
say "ok: every workload produced a throughput; outputs in $out"

#!/usr/bin/env bash
# bench/redis.sh: "why not Redis?" in numbers.  sandbox_store beside what a
# team reaches for first, a Redis lock (SET NX PX, compare-and-delete
# release) and a Redis hash as the record, on the same jobs, through the
# same delay proxy (bench/proxy.sh, bench/delay-proxy.c), at the same round
# trips and client counts, side by side in one run; then the semantics side
# by side (bench/redis-semantics.sh: a holder stalled past its TTL, a server
# killed, a client killed).
#
# The jobs (round trips per job, sandbox_store / Redis):
#   resume   resume-or-create of a random existing key (1 / 4):
#            sandbox_ensure, autocommit (bench/ensure_auto.pgbench) beside
#            SET lock NX PX; HGETALL; HSET (stamp); EVALSHA compare-and-delete
#   lua      the same sandbox_ensure beside Redis's best case: the resume as
#            one Lua script, no lock (1 / 1; a create would still need the
#            lock, so this is not a whole resume-or-create)
#   create   a create cycle on a new key (2 / 4): lease mode, sandbox_ensure
#            with a lease then sandbox_upsert_release
#            (bench/create_lease2.pgbench), beside SET NX PX; HGETALL (finds
#            nothing); HSET the record; EVALSHA release
#   hot      all clients on one existing key: resume as above with one key.
#            sandbox_ensure waits in the server's lock queue; a Redis
#            client that misses the lock backs off and tries again
#            (exponential backoff with jitter from BENCH_REDIS_BACKOFF_US to
#            BENCH_REDIS_BACKOFF_CAP_US; client libraries wait longer: see
#            bench/redis/redis-bench.c)
# Durability, the comparable pairs: Redis with AOF and appendfsync always
# beside PostgreSQL with synchronous_commit on (each acknowledged write is
# on disk: fsync before the reply / the commit); appendfsync everysec beside
# synchronous_commit off (an OS crash or power loss can lose the last
# moment of acknowledged writes: up to about a second of Redis's, up to
# three wal_writer_delay (600 ms) of PostgreSQL's).  See BENCHMARKS.md.
# PostgreSQL needs fsync on for this: on with-cluster.sh's throwaway cluster
# (SB_CLUSTER_DIR set) fsync is turned on for the run and back off after;
# on another server it is left as it is and the report says so.
#
# The Redis client is bench/redis/redis-bench.c (hiredis), built here: one
# thread and one blocking connection per client, like pgbench's one
# connection per client.  Redis (redis-server from Debian) runs in a temp
# directory on a Unix socket of its own, no TCP port, with AOF on and no
# RDB snapshots, and is stopped at exit.  Both servers are reached through
# the proxy on 127.0.0.1.  Each cell of the matrix runs the 14 workloads
# (4 jobs x 2 durability levels x 2 systems, less sandbox_store's side of
# the Lua job, which is its resume) one after the other, the order rotated
# per cell; one short run each (BENCH_REDIS_SECONDS, 2 s), so a
# ratio moves by 0.1-0.2 between runs.  About 5 minutes in all.
#
# Runs against the server in PGHOST (its socket directory) / PGPORT / PGUSER,
# a superuser, with sandbox_store installed; creates and drops database
# bench_redis.  Called by bench/run.sh (phase redis) or alone (make
# bench-redis).  Writes to BENCH_OUT (default bench/out/): redis.md,
# redis.tsv, redis-bench.log, redis-semantics.md.
#
# Options (environment):
#   BENCH_REDIS_RTT_MS ("0 0.2 0.5 1")  target round trips, ms
#   BENCH_REDIS_CLIENTS ("8 64")
#   BENCH_REDIS_SECONDS (2)        length of one run
#   BENCH_REDIS_PORT (6544)        the proxy's port on 127.0.0.1
#   BENCH_REDIS_BACKOFF_US (500), BENCH_REDIS_BACKOFF_CAP_US (16000)
#   BENCH_REDIS_SEMANTICS (1)      0: skip bench/redis-semantics.sh
#   BENCH_ROWS (100000)            records of the data set (both systems)
#   BENCH_THREADS (2)              pgbench -j
#   BENCH_SMOKE (0)                1: a tiny run, to check the harness only
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=bench-redis
here=$sb_top/bench
smoke=${BENCH_SMOKE:-0}
rtts=${BENCH_REDIS_RTT_MS:-"0 0.2 0.5 1"}
clients_list=${BENCH_REDIS_CLIENTS:-"8 64"}
secs=${BENCH_REDIS_SECONDS:-2}
port=${BENCH_REDIS_PORT:-6544}
backoff=${BENCH_REDIS_BACKOFF_US:-500}
backoff_cap=${BENCH_REDIS_BACKOFF_CAP_US:-16000}
semantics=${BENCH_REDIS_SEMANTICS:-1}
rows=${BENCH_ROWS:-100000}
threads_max=${BENCH_THREADS:-2}
out=${BENCH_OUT:-$here/out}
proxy_calib_secs=2
if [ "$smoke" = 1 ]; then
  rtts="0 0.5" clients_list="2" secs=1 rows=1000 proxy_calib_secs=1
fi
db=bench_redis

psql_db() { psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }

[ -d "${PGHOST:-}" ] || fail "PGHOST must be the server's socket directory (the proxy relays to it)"
pg_upstream="$PGHOST/.s.PGSQL.${PGPORT:-5432}"
[ -S "$pg_upstream" ] || fail "no server socket at $pg_upstream"
for tool in psql pgbench cc awk redis-server redis-cli; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found (make deps installs redis-server and libhiredis-dev)"
done
[ -f /usr/include/hiredis/hiredis.h ] || fail "hiredis not found (apt-get install libhiredis-dev)"

mkdir -p "$out"
rm -f "$out"/redis.md "$out"/redis.tsv "$out"/redis-bench.log "$out"/redis-semantics.md "$out"/redis-semantics.log
sb_tempdir sandbox_store_redis; work=$sb_dir
# shellcheck source=bench/proxy.sh
. "$here/proxy.sh"
proxy_port=$port
proxy_build "$work"
cc -O2 -Wall -Wextra -Werror -o "$work/redis-bench" "$here/redis/redis-bench.c" -lhiredis -lpthread ||
  fail "could not build bench/redis/redis-bench.c"

# --- Redis: a private server on a Unix socket in the temp directory -------------------

rdir=$work/redis
rsock=$rdir/redis.sock
mkdir -p "$rdir"
cat >"$rdir/redis.conf" <<EOF
port 0
unixsocket $rsock
unixsocketperm 700
dir $rdir
logfile $rdir/redis.log
daemonize no
save ""
appendonly yes
appendfsync everysec
EOF
redis_pid=""
redis_stop() {
  [ -n "$redis_pid" ] || return 0
  kill -TERM "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
  redis_pid=""
}
sb_at_exit redis_stop
redis-server "$rdir/redis.conf" &
redis_pid=$!
rcli() { redis-cli -s "$rsock" "$@"; }
for _ in $(seq 1 50); do
  [ "$(rcli PING 2>/dev/null)" = PONG ] && break
  kill -0 "$redis_pid" 2>/dev/null || fail "redis-server exited: $(tail -n 5 "$rdir/redis.log")"
  sleep 0.1
done
[ "$(rcli PING 2>/dev/null)" = PONG ] || fail "redis-server did not start"
redis_version=$(rcli INFO server | sed -n 's/^redis_version:\([^\r]*\).*/\1/p')
"$work/redis-bench" -s "$rsock" -m load -n "$rows" >/dev/null || fail "could not load the Redis records"

# --- PostgreSQL: the same records, fsync on -------------------------------------------

sb_fresh_db "$db"
psql_db -v rows="$rows" -f "$here/setup.sql" >/dev/null
psql_db -c "CREATE TABLE bench_redis (target_ms float8, rtt_ms float8, system text, job text, clients int,
                                      tps float8, lat_mean float8, p50 float8, p99 float8, jobs bigint,
                                      misses bigint, lost bigint, proxy_cpu_s float8, seconds float8)"
fsync_note=""
restore_fsync() {
  psql -X -q -d postgres -c "ALTER SYSTEM RESET fsync" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 ||
    warn "could not reset fsync"
}
if [ "$(psql -X -At -d postgres -c 'SHOW fsync')" != on ]; then
  if [ -n "${SB_CLUSTER_DIR:-}" ]; then
    say "throwaway cluster: fsync on for this phase (ALTER SYSTEM, reload; reset at the end)"
    sb_at_exit restore_fsync
    psql -X -q -d postgres -c "ALTER SYSTEM SET fsync = on" -c "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 1 50); do
      [ "$(psql -X -At -d postgres -c 'SHOW fsync')" = on ] && break
      sleep 0.1
    done
  fi
  [ "$(psql -X -At -d postgres -c 'SHOW fsync')" = on ] ||
    fsync_note="**fsync is off on this server: synchronous_commit on does not flush, so the pairs below are not of the same durability.**"
fi
pg_fsync=$(psql -X -At -d postgres -c 'SHOW fsync')
[ -z "$fsync_note" ] || warn "$fsync_note"

# --- round trips: the delay per target, measured on PostgreSQL, checked on Redis ----------

# shellcheck disable=SC2086 # a list of targets
proxy_calibrate "$db" $rtts
declare -A redis_rtt
ping_at() { # one-way us -> mean PING latency ms, one client
  proxy_start "$1" "$rsock" redis-cli -h 127.0.0.1 -p "$port" PING
  "$work/redis-bench" -s "127.0.0.1:$port" -m ping -c 1 -T "$proxy_calib_secs" |
    sed -n 's/.* lat_mean_ms=\([0-9.]*\) .*/\1/p'
  proxy_stop
}
rbase=$(ping_at 0)
[ -n "$rbase" ] || fail "no PING through the proxy"
for t in $rtts; do
  l=$(ping_at "${one_way[$t]}")
  redis_rtt[$t]=$(awk -v l="$l" -v b="$rbase" 'BEGIN { printf "%.3f", l - b }')
done

# --- runs ---------------------------------------------------------------------------------

: >"$out/redis-bench.log"
runno=0

# record T C SYSTEM JOB TPS MEAN P50 P99 JOBS MISSES LOST
record() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "${measured[$1]}" "$3" "$4" "$2" \
    "$5" "$6" "$7" "$8" "$9" "${10}" "${11}" "$proxy_cpu" "$secs" | psql_db -c "COPY bench_redis FROM STDIN"
  printf 'bench-redis: rtt=%-4s c=%-3s %-15s %-7s tps=%8.0f  mean=%8.3f ms  p99=%8.3f ms  proxy cpu=%5.2fs\n' \
    "$1" "$2" "$3" "$4" "$5" "$6" "$8" "$proxy_cpu"
}

run_pg() { # target clients system(pg_on|pg_off) job
  local t=$1 c=$2 sys=$3 job=$4 rc=0 res=$work/pgbench.out prefix=$work/txlog
  local j=$((c < threads_max ? c : threads_max)) wl=ensure_auto n=$rows sc=on
  case $job in
    hot) n=1 ;;
    create) wl=create_lease2 ;;
  esac
  [ "$sys" = pg_off ] && sc=off
  rm -f "$prefix".*
  proxy_start "${one_way[$t]}" "$pg_upstream" psql -X -At -h 127.0.0.1 -p "$port" -d "$db" -c "SELECT 1"
  PGOPTIONS="-c synchronous_commit=$sc" pgbench -n -M prepared -c "$c" -j "$j" -T "$secs" -h 127.0.0.1 \
    -p "$port" -D rows="$n" -l --log-prefix="$prefix" -f "$here/$wl.pgbench" "$db" >"$res" 2>&1 || rc=$?
  proxy_stop
  { echo "=== rtt $t ms clients=$c $sys $job ($wl, synchronous_commit=$sc, proxy cpu ${proxy_cpu}s)"; cat "$res"; } \
    >>"$out/redis-bench.log"
  if [ $rc -ne 0 ] || grep -Eq "aborted|ERROR:|FATAL:|^number of failed transactions: [1-9]" "$res"; then
    tail -n 20 "$res" >&2
    fail "rtt $t ms $sys $job clients=$c: pgbench failed (exit $rc)"
  fi
  local tps txns lat
  tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$res" | head -n 1)
  txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$res")
  { [ -n "$tps" ] && [ -n "$txns" ] && [ "$txns" -gt 0 ]; } || fail "rtt $t ms $sys $job clients=$c: no throughput"
  # latency (us, 3rd field of pgbench's per-transaction log): mean, p50, p99
  lat=$(cat "$prefix".* | awk '{ print $3 }' | sort -n | awk '
    { v[NR] = $1; s += $1 }
    END {
      if (NR == 0) exit 1
      i50 = int(NR * 0.50); if (i50 < NR * 0.50) i50++; if (i50 < 1) i50 = 1
      i99 = int(NR * 0.99); if (i99 < NR * 0.99) i99++; if (i99 < 1) i99 = 1
      printf "%.4f %.4f %.4f\n", s / NR / 1000, v[i50] / 1000, v[i99] / 1000
    }') || fail "rtt $t ms $sys $job clients=$c: no per-transaction log"
  rm -f "$prefix".*
  local mean p50 p99
  read -r mean p50 p99 <<<"$lat"
  record "$t" "$c" "$sys" "$job" "$tps" "$mean" "$p50" "$p99" "$txns" 0 0
}

run_redis() { # target clients system(redis_always|redis_everysec) job
  local t=$1 c=$2 sys=$3 job=$4 rc=0 res=$work/redis-bench.out mode=resume n=$rows
  case $job in
    hot) n=1 ;;
    lua) mode=resume_lua ;;
    create) mode=create ;;
  esac
  runno=$((runno + 1))
  [ "$(rcli CONFIG SET appendfsync "${sys#redis_}")" = OK ] || fail "CONFIG SET appendfsync ${sys#redis_} failed"
  proxy_start "${one_way[$t]}" "$rsock" redis-cli -h 127.0.0.1 -p "$port" PING
  "$work/redis-bench" -s "127.0.0.1:$port" -m "$mode" -c "$c" -T "$secs" -n "$n" -b "$backoff" \
    -B "$backoff_cap" -p "new-$runno" >"$res" 2>&1 || rc=$?
  proxy_stop
  { echo "=== rtt $t ms clients=$c $sys $job (redis-bench -m $mode -n $n, proxy cpu ${proxy_cpu}s)"; cat "$res"; } \
    >>"$out/redis-bench.log"
  [ $rc -eq 0 ] || { cat "$res" >&2; fail "rtt $t ms $sys $job clients=$c: redis-bench failed (exit $rc)"; }
  local line jobs tps mean p50 p99 misses lost creates
  line=" $(grep '^jobs=' "$res") " || fail "rtt $t ms $sys $job clients=$c: no result"
  field() { local x=${line##* "$1"=}; echo "${x%% *}"; }
  jobs=$(field jobs) tps=$(field tps) mean=$(field lat_mean_ms) p50=$(field p50_ms) p99=$(field p99_ms)
  misses=$(field lock_misses) lost=$(field lost_locks) creates=$(field creates)
  if [ "$job" = create ] && [ "$creates" != "$jobs" ]; then
    fail "rtt $t ms $sys create clients=$c: $creates creates in $jobs create jobs (keys must be new)"
  fi
  if [ "$job" != create ] && [ "$creates" != 0 ]; then
    fail "rtt $t ms $sys $job clients=$c: $creates creates on existing records"
  fi
  record "$t" "$c" "$sys" "$job" "$tps" "$mean" "$p50" "$p99" "$jobs" "$misses" "$lost"
}

workloads=()
for job in resume lua create hot; do
  for sys in pg_on redis_always pg_off redis_everysec; do
    # "lua" is a Redis job; its sandbox_store side is the resume's
    case $sys:$job in pg_*:lua) continue ;; esac
    workloads+=("$sys:$job")
  done
done
n=${#workloads[@]}
cell=0
start=$SECONDS
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for c in $clients_list; do
  for t in $rtts; do
    for i in $(seq 0 $((n - 1))); do
      IFS=: read -r sys job <<<"${workloads[$(((i + cell) % n))]}"
      case $sys in
        pg_*) run_pg "$t" "$c" "$sys" "$job" ;;
        *) run_redis "$t" "$c" "$sys" "$job" ;;
      esac
    done
    cell=$((cell + 1))
    psql_db -c "DELETE FROM sandbox_store.instances WHERE key LIKE 'new-%'" \
      -c "DELETE FROM sandbox_store.leases WHERE key LIKE 'new-%'" \
      -c "VACUUM sandbox_store.instances, sandbox_store.leases"
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
runs_secs=$((SECONDS - start))
say "runs took $runs_secs s (load average $load_start at the start, $load_end at the end)"

# --- report -------------------------------------------------------------------------------

psql_db -At -c "COPY (SELECT * FROM bench_redis ORDER BY clients, target_ms, job, system) TO STDOUT" \
  >"$out/redis.tsv"

{
  echo "### Why not Redis? sandbox_store beside a Redis lock and record: $(date -u '+%Y-%m-%d %H:%M UTC'), nproc=$(nproc)"
  echo
  echo "PostgreSQL $(psql -X -At -d postgres -c 'SHOW server_version' | cut -d' ' -f1) (fsync=$pg_fsync), Redis $redis_version (AOF on, no RDB snapshots), $rows records in each."
  [ -z "$fsync_note" ] || { echo; echo "$fsync_note"; }
  if [ "$smoke" = 1 ]; then
    echo
    echo "SMOKE RUN: checks the harness, measures nothing."
  fi
  echo
  echo "One run of ${secs} s per cell (short runs: a ratio moves by 0.1-0.2 between runs). Ratio = sandbox_store / Redis"
  echo "throughput at the same durability: above 1, sandbox_store is faster. Round trips per job in brackets"
  echo "(sandbox_store / Redis). The RTT is the one measured on PostgreSQL (SELECT 1, $proxy_base ms at 0)"
  echo "and on Redis (PING, $rbase ms at 0): $(for t in $rtts; do printf '%s: %s / %s ms; ' "$t" "${measured[$t]}" "${redis_rtt[$t]}"; done)"
  echo "Redis lock misses back off from ${backoff} us to ${backoff_cap} us (see bench/redis/redis-bench.c)."
  echo "The runs took $runs_secs s; load average $load_start at the start, $load_end at the end."
  echo
  echo "| job | clients | RTT ms | sandbox_store, synchronous_commit on | Redis, appendfsync always | **on / always** | sandbox_store, synchronous_commit off | Redis, appendfsync everysec | **off / everysec** | proxy cores |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  psql_db -At <<'SQL'
WITH p AS (
  SELECT job, clients, target_ms, max(proxy_cpu_s / seconds) AS proxy_cores,
         max(tps) FILTER (WHERE system = 'pg_on') AS pg_on,
         max(tps) FILTER (WHERE system = 'pg_off') AS pg_off,
         max(tps) FILTER (WHERE system = 'redis_always') AS r_always,
         max(tps) FILTER (WHERE system = 'redis_everysec') AS r_everysec
    FROM bench_redis GROUP BY job, clients, target_ms),
q AS (  -- the lua job's sandbox_store side is the resume job's
  SELECT p.job, p.clients, p.target_ms, greatest(p.proxy_cores, r.proxy_cores) AS proxy_cores,
         coalesce(p.pg_on, r.pg_on) AS pg_on, coalesce(p.pg_off, r.pg_off) AS pg_off, p.r_always, p.r_everysec
    FROM p LEFT JOIN p r ON r.job = 'resume' AND r.clients = p.clients AND r.target_ms = p.target_ms)
SELECT format('| %s | %s | %s | %s | %s | **%s** | %s | %s | **%s** | %s |',
              CASE job WHEN 'resume' THEN 'resume-or-create, random key (1 / 4)'
                       WHEN 'lua' THEN 'resume; Redis: one Lua script, no lock (1 / 1)'
                       WHEN 'create' THEN 'create cycle, new key; lease mode (2 / 4)'
                       ELSE 'one hot key, all clients (1 / 4 + retries)' END,
              clients, target_ms, round(pg_on), round(r_always), to_char(pg_on / r_always, 'FM990.00'),
              round(pg_off), round(r_everysec), to_char(pg_off / r_everysec, 'FM990.00'),
              to_char(proxy_cores, 'FM990.00'))
  FROM q
 ORDER BY array_position(ARRAY['resume', 'lua', 'create', 'hot'], job), clients, target_ms;
SQL
  echo
  echo "Latency per job, mean / p99 in ms (per transaction for sandbox_store, from pgbench's log; per job for Redis,"
  echo "from the first lock attempt to the release's reply, backoff included). Redis's lock misses per job and"
  echo "lost locks (a release that found the lock no longer its own) are counted too."
  echo
  echo "| job | clients | RTT ms | sandbox_store, on | Redis, always | sandbox_store, off | Redis, everysec | Redis lock misses per job (always; everysec) | lost locks |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  psql_db -At <<'SQL'
WITH l AS (
  SELECT job, clients, target_ms, system,
         to_char(lat_mean, 'FM9990.000') || ' / ' || to_char(p99, 'FM9990.000') AS lat,
         misses::float8 / nullif(jobs, 0) AS mpj, lost
    FROM bench_redis)
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s; %s | %s |', job, clients, target_ms,
              coalesce(max(lat) FILTER (WHERE system = 'pg_on'), '(as resume)'),
              max(lat) FILTER (WHERE system = 'redis_always'),
              coalesce(max(lat) FILTER (WHERE system = 'pg_off'), '(as resume)'),
              max(lat) FILTER (WHERE system = 'redis_everysec'),
              to_char(max(mpj) FILTER (WHERE system = 'redis_always'), 'FM9990.00'),
              to_char(max(mpj) FILTER (WHERE system = 'redis_everysec'), 'FM9990.00'),
              coalesce(sum(lost), 0))
  FROM l GROUP BY job, clients, target_ms
 ORDER BY array_position(ARRAY['resume', 'lua', 'create', 'hot'], job), clients, target_ms;
SQL
  echo
  echo "\"proxy cores\": the most CPU the proxy used in one run of the row (user + system time / run time)."
} >"$out/redis.md"
cat "$out/redis.md"

redis_stop

if [ "$semantics" = 1 ]; then
  REDIS_BENCH=$work/redis-bench "$here/redis-semantics.sh" 2>&1 | tee "$out/redis-semantics.log"
fi
say "ok: outputs in $out (redis.md, redis.tsv, redis-bench.log$([ "$semantics" != 1 ] || echo ', redis-semantics.md'))"

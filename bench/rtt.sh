#!/usr/bin/env bash
# bench/rtt.sh: the headline workloads behind a network round trip.
#
# App servers reach their database over a network, where each round trip
# costs 0.2-1 ms within a cloud region; over a Unix socket it costs almost
# nothing.  This kernel has no netem, so bench/delay-proxy.c (built here with
# cc) relays pgbench's TCP connections to the server's socket and holds every
# chunk for a set time in each direction.  Each run gets a fresh proxy, whose
# CPU time is reported next to the run: on a 2-core machine it competes with
# the server, and the report shows how much.
#
# Calibration: a sleeping thread wakes late on a VM (tens of microseconds),
# so for each target round trip the one-way delay is corrected once from a
# measurement (SELECT 1, one client, through the proxy, minus the same at
# delay 0), and the report gives the round trip measured, not the nominal.
#
# Workloads (bench/<name>.pgbench), all prepared statements:
#   ensure_auto          sandbox_ensure, autocommit: 1 round trip
#   ensure_txn           BEGIN; sandbox_ensure; COMMIT: 3
#   app_txn              BEGIN; advisory lock; SELECT; UPDATE; COMMIT: 5
#   plpgsql_ensure_auto  the PL/pgSQL sandbox_ensure, autocommit: 1
#   create_lock          lock-mode create: BEGIN; ensure; upsert; COMMIT: 4
#   create_lease3        lease-mode create, 1.1/1.2: ensure(lease); fenced
#                        upsert; release: 3 round trips, 3 commits
#   create_lease2        lease-mode create, 1.3: ensure(lease);
#                        sandbox_upsert_release: 2 round trips, 2 commits
#   sql_ensure_auto      ensure_auto against the SQL edition: 1
#   sql_create_lease2    create_lease2 against the SQL edition: 2
# At each client count and round trip the nine run side by side, the order
# rotated per repeat.  Created records are removed after each create run;
# their released claims stay, as a key's leases row does in production (the
# SQL edition plans its leases lookups as sequential scans when leases was
# emptied and vacuumed; BENCHMARKS.md, "The SQL edition").  The SQL edition's two run in database bench_rtt_sql, where
# the plain script (src/sql/build.sh plain) is installed instead of the
# extension.
#
# Runs against the server in PGHOST (its socket directory) / PGPORT / PGUSER,
# a superuser, with sandbox_store installed; creates and drops databases
# bench_rtt and bench_rtt_sql.  Called by bench/run.sh (phase rtt) or alone.
# Writes to BENCH_OUT (default bench/out/): rtt.md, rtt.tsv, rtt.dat,
# rtt.png, rtt-pgbench.log.
#
# Options (environment):
#   BENCH_RTT_MS ("0 0.2 0.5 1")   target round trips, ms
#   BENCH_RTT_CLIENTS ("8 64")
#   BENCH_RTT_SECONDS (5)          length of one run
#   BENCH_RTT_REPEATS (1)          side-by-side rounds
#   BENCH_RTT_PORT (6543)          the proxy's port on 127.0.0.1
#   BENCH_ROWS (100000)            records of the data set
#   BENCH_THREADS (2)              pgbench -j
#   BENCH_SQL_EDITION (1)          0: leave the SQL edition out
#   BENCH_SMOKE (0)                1: every workload once, 20 transactions per
#                                  client, to check the harness only
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=bench-rtt
here=$sb_top/bench
smoke=${BENCH_SMOKE:-0}
rtts=${BENCH_RTT_MS:-"0 0.2 0.5 1"}
clients_list=${BENCH_RTT_CLIENTS:-"8 64"}
secs=${BENCH_RTT_SECONDS:-5}
repeats=${BENCH_RTT_REPEATS:-1}
port=${BENCH_RTT_PORT:-6543}
rows=${BENCH_ROWS:-100000}
threads_max=${BENCH_THREADS:-2}
out=${BENCH_OUT:-$here/out}
calib_secs=2
dur=(-T "$secs")
if [ "$smoke" = 1 ]; then
  rtts="0 0.5" clients_list="2" repeats=1 rows=1000 calib_secs=1 dur=(-t 20)
fi
wls=(ensure_auto ensure_txn app_txn plpgsql_ensure_auto create_lock create_lease3 create_lease2)
plot_wls="${wls[*]}"
db=bench_rtt
sql_db=bench_rtt_sql
sql_edition=${BENCH_SQL_EDITION:-1}
[ "$sql_edition" = 1 ] && wls+=(sql_ensure_auto sql_create_lease2)

psql_db() { psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }

[ -d "${PGHOST:-}" ] || fail "PGHOST must be the server's socket directory (the proxy relays to it)"
upstream="$PGHOST/.s.PGSQL.${PGPORT:-5432}"
[ -S "$upstream" ] || fail "no server socket at $upstream"
for tool in psql pgbench cc awk; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found"
done

mkdir -p "$out"
sb_tempdir sandbox_store_rtt; work=$sb_dir
# shellcheck source=bench/proxy.sh
. "$here/proxy.sh"
proxy_port=$port proxy_calib_secs=$calib_secs
proxy_build "$work"
start_proxy() { # one-way delay in microseconds
  proxy_start "$1" "$upstream" psql -X -At -h 127.0.0.1 -p "$port" -d postgres -c "SELECT 1"
}

sb_fresh_db "$db"
psql_db -v rows="$rows" -f "$here/setup.sql" >/dev/null
psql_db -f "$here/plpgsql_baseline.sql" >/dev/null
if [ "$sql_edition" = 1 ]; then
  version=$(psql -X -At -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'")
  "$sb_top/src/sql/build.sh" plain "$version" >"$work/sandbox_store-sql.sql" ||
    fail "could not build the SQL edition's plain script"
  sb_fresh_db "$sql_db"
  psql -X -q -v ON_ERROR_STOP=1 -d "$sql_db" -f "$work/sandbox_store-sql.sql" >/dev/null
  psql -X -q -v ON_ERROR_STOP=1 -d "$sql_db" -v rows="$rows" -f "$here/setup.sql" >/dev/null
fi
psql_db -c "CREATE TABLE bench_rtt (target_ms float8, rtt_ms float8, workload text, clients int, rep int,
                                    tps float8, lat_ms float8, proxy_cpu_s float8, seconds float8)"
: >"$out/rtt-pgbench.log"

# --- calibration: latency of SELECT 1 through the proxy, one client ---------------

# shellcheck disable=SC2086 # a list of targets
proxy_calibrate "$db" $rtts
base=$proxy_base

# --- runs -------------------------------------------------------------------------

run_one() { # target clients rep workload (sql_X: X.pgbench against the SQL edition)
  local t=$1 c=$2 rep=$3 wl=$4 rc=0 res=$work/pgbench.out
  local j=$((c < threads_max ? c : threads_max))
  local file=$wl wdb=$db
  case $wl in sql_*) file=${wl#sql_} wdb=$sql_db ;; esac
  start_proxy "${one_way[$t]}"
  pgbench -n -M prepared -c "$c" -j "$j" "${dur[@]}" -h 127.0.0.1 -p "$port" -D rows="$rows" \
    -f "$here/$file.pgbench" "$wdb" >"$res" 2>&1 || rc=$?
  proxy_stop
  local cpu=$proxy_cpu
  {
    echo "=== rtt $t ms clients=$c rep=$rep $wl (proxy cpu ${cpu}s)"
    cat "$res"
  } >>"$out/rtt-pgbench.log"
  if [ $rc -ne 0 ] || grep -Eq "aborted|ERROR:|FATAL:|^number of failed transactions: [1-9]" "$res"; then
    tail -n 20 "$res" >&2
    fail "rtt $t ms $wl clients=$c: pgbench failed (exit $rc)"
  fi
  local tps lat
  tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$res" | head -n 1)
  lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$res")
  { [ -n "$tps" ] && [ -n "$lat" ]; } || fail "rtt $t ms $wl clients=$c: no throughput"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "${measured[$t]}" "$wl" "$c" "$rep" "$tps" "$lat" \
    "${cpu:-0}" "$secs" | psql_db -c "COPY bench_rtt FROM STDIN"
  printf 'bench-rtt: rtt=%-4s c=%-3s rep=%s %-20s tps=%9.0f  latency=%7.3f ms  proxy cpu=%5.2fs\n' \
    "$t" "$c" "$rep" "$wl" "$tps" "$lat" "${cpu:-0}"
  case $file in
    create_*)
      psql -X -q -v ON_ERROR_STOP=1 -d "$wdb" -c "DELETE FROM sandbox_store.instances WHERE key LIKE 'new-%'" \
        -c "VACUUM (ANALYZE) sandbox_store.instances, sandbox_store.leases"
      ;;
  esac
}

n=${#wls[@]}
for rep in $(seq 1 "$repeats"); do
  for c in $clients_list; do
    for t in $rtts; do
      for i in $(seq 0 $((n - 1))); do
        run_one "$t" "$c" "$rep" "${wls[$(((i + rep + c) % n))]}"
      done
      psql_db -c "VACUUM sandbox_store.instances"
      [ "$sql_edition" != 1 ] || psql -X -q -d "$sql_db" -c "VACUUM sandbox_store.instances"
    done
  done
done

# --- report -----------------------------------------------------------------------

psql_db -At -c "COPY (SELECT * FROM bench_rtt ORDER BY clients, target_ms, workload, rep) TO STDOUT" \
  >"$out/rtt.tsv"

# rtt.dat: per client count (a gnuplot data block each), the measured round
# trip and the median tps of each workload, in the order of wls.
psql_db -At -F ' ' -v wls="$plot_wls" >"$out/rtt.dat" <<'SQL'
WITH m AS (
  SELECT clients, target_ms, max(rtt_ms) AS rtt, workload,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY tps) AS tps
    FROM bench_rtt GROUP BY clients, target_ms, workload),
rows AS (
  SELECT m.clients, m.target_ms, max(m.rtt) AS rtt,
         string_agg(round(m.tps)::text, ' ' ORDER BY w.ord) AS tps
    FROM m JOIN unnest(string_to_array(:'wls', ' ')) WITH ORDINALITY AS w(workload, ord) USING (workload)
   GROUP BY m.clients, m.target_ms)
SELECT CASE WHEN row_number() OVER (PARTITION BY clients ORDER BY target_ms) = 1
            THEN CASE WHEN clients > min(clients) OVER () THEN E'\n\n' ELSE '' END
                 || '# clients ' || clients || E'\n' ELSE '' END || rtt || ' ' || tps
  FROM rows ORDER BY clients, target_ms;
SQL

{
  echo "### Round trips: $(date -u '+%Y-%m-%d %H:%M UTC'), nproc=$(nproc), $(psql -X -At -d postgres -c 'SHOW server_version'), fsync=$(psql -X -At -d postgres -c 'SHOW fsync'), synchronous_commit=$(psql -X -At -d postgres -c 'SHOW synchronous_commit')"
  echo
  if [ "$smoke" = 1 ]; then
    echo "SMOKE RUN (20 transactions per client): checks the harness, measures nothing."
  fi
  echo "Median tps of $repeats side-by-side round(s) of ${secs} s runs over $rows records; the round trip is the one measured"
  echo "(SELECT 1, one client, through the proxy, minus the same at delay 0: $base ms)."
  echo
  echo "| clients | RTT ms (measured) | ensure auto | ensure txn | app-side | PL/pgSQL auto | **ensure auto / app** | ensure txn / app | ensure / PL/pgSQL | create lock | create lease, 3 commits | create lease, 2 commits | **lease (2) / lock** | lease (3) / lock | proxy cores |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  psql_db -At <<'SQL'
WITH m AS (
  SELECT clients, target_ms, max(rtt_ms) AS rtt, workload,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY tps) AS tps,
         max(proxy_cpu_s / seconds) AS proxy_cores
    FROM bench_rtt GROUP BY clients, target_ms, workload),
p AS (
  SELECT clients, target_ms, max(rtt) AS rtt, max(proxy_cores) AS proxy_cores,
         max(tps) FILTER (WHERE workload = 'ensure_auto') AS ensure_auto,
         max(tps) FILTER (WHERE workload = 'ensure_txn') AS ensure_txn,
         max(tps) FILTER (WHERE workload = 'app_txn') AS app_txn,
         max(tps) FILTER (WHERE workload = 'plpgsql_ensure_auto') AS plpgsql,
         max(tps) FILTER (WHERE workload = 'create_lock') AS create_lock,
         max(tps) FILTER (WHERE workload = 'create_lease3') AS create_lease3,
         max(tps) FILTER (WHERE workload = 'create_lease2') AS create_lease2
    FROM m GROUP BY clients, target_ms)
SELECT format('| %s | %s (%s) | %s | %s | %s | %s | **%s** | %s | %s | %s | %s | %s | **%s** | %s | %s |',
              clients, target_ms, round(rtt::numeric, 2),
              round(ensure_auto), round(ensure_txn), round(app_txn), round(plpgsql),
              round((ensure_auto / app_txn)::numeric, 2), round((ensure_txn / app_txn)::numeric, 2),
              round((ensure_auto / plpgsql)::numeric, 2),
              round(create_lock), round(create_lease3), round(create_lease2),
              round((create_lease2 / create_lock)::numeric, 2), round((create_lease3 / create_lock)::numeric, 2),
              round(proxy_cores::numeric, 2))
  FROM p ORDER BY clients, target_ms;
SQL
  echo
  echo "\"proxy cores\": the most CPU the proxy used in one run of the row, in cores (user + system time / run time)."
  if [ "$sql_edition" = 1 ]; then
    echo
    echo "C edition beside the SQL edition (the plain script, database $sql_db), same rounds:"
    echo
    echo "| clients | RTT ms (measured) | ensure auto, C | ensure auto, SQL | **C / SQL** | create lease (2), C | create lease (2), SQL | **C / SQL** |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
    psql_db -At <<'SQL'
WITH m AS (
  SELECT clients, target_ms, max(rtt_ms) AS rtt, workload,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY tps) AS tps
    FROM bench_rtt GROUP BY clients, target_ms, workload),
p AS (
  SELECT clients, target_ms, max(rtt) AS rtt,
         max(tps) FILTER (WHERE workload = 'ensure_auto') AS c_ensure,
         max(tps) FILTER (WHERE workload = 'sql_ensure_auto') AS sql_ensure,
         max(tps) FILTER (WHERE workload = 'create_lease2') AS c_create,
         max(tps) FILTER (WHERE workload = 'sql_create_lease2') AS sql_create
    FROM m GROUP BY clients, target_ms)
SELECT format('| %s | %s (%s) | %s | %s | **%s** | %s | %s | **%s** |',
              clients, target_ms, round(rtt::numeric, 2),
              round(c_ensure), round(sql_ensure), round((c_ensure / sql_ensure)::numeric, 2),
              round(c_create), round(sql_create), round((c_create / sql_create)::numeric, 2))
  FROM p ORDER BY clients, target_ms;
SQL
  fi
} >"$out/rtt.md"

if command -v gnuplot >/dev/null 2>&1 && [ "$smoke" != 1 ]; then
  gnuplot -e "datafile='$out/rtt.dat'; outfile='$out/rtt.png'; clients='$clients_list'; subtitle='$rows records, nproc=$(nproc), PostgreSQL $(psql -X -At -d postgres -c 'SHOW server_version' | cut -d' ' -f1), fsync=$(psql -X -At -d postgres -c 'SHOW fsync')'" \
    "$here/rtt.gp" || fail "gnuplot failed"
  [ -s "$out/rtt.png" ] || fail "gnuplot wrote no plot"
fi
cat "$out/rtt.md"
say "ok: outputs in $out (rtt.md, rtt.tsv, rtt.dat, rtt.png)"

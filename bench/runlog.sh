#!/usr/bin/env bash
# bench/runlog.sh: the run log (extension 1.5) beside a bare table, and the
# append-to-reader wake latency through LISTEN/NOTIFY (phase runlog of
# bench/run.sh; alone: test/scripts/with-cluster.sh bench/runlog.sh).
#
# (a) Append: one batch of 16 chunks (about 200 bytes of JSON each, the
#     TEXT_MESSAGE_CONTENT events of an agent's stream) per transaction,
#     each client on a run of its own, side by side:
#
#       append_fenced  run_log_append(run, chunks, epoch) on a claimed run
#                      (what a driver's pipe does): argument checks, the
#                      run_logs row's upsert (last_seq, its row lock), the
#                      runs row read (the fence), 16 entries (no NOTIFY:
#                      nobody watches these logs)
#       append_statements  append_fenced with sandbox_store.direct_reads and
#                      sandbox_store.direct_inserts off (the C edition's
#                      statements, as before 1.7.2: what reading the runs
#                      row and inserting the entries directly saves)
#       append         run_log_append(run, chunks): no epoch, no runs row
#                      (createStreamDurability without a driver)
#       sql_append_fenced  append_fenced in a second database,
#                      bench_runlog_sql, that has the SQL edition (the
#                      plain script built from this tree) instead of the
#                      extension
#       bare           INSERT INTO runlog_bare VALUES (16 rows) at seqs the
#                      client counts itself: a table of run_log_entries'
#                      shape and primary key, nothing else
#       append_watched append_fenced on logs a reader watches (run_log_watch;
#                      bench/runlog-listen.c LISTENs and takes every
#                      notification): each append notifies at its commit
#       append_woken   the same logs, run_log_append with notify false, then
#                      run_log_wake of the run in a statement of its own
#                      after the commit (bench/runlog_woken.pgbench): a wake
#                      per append, the worst case of what the client does
#                      (it gathers the wakes of a process into one statement)
#       sql_append_watched, sql_append_woken  the same in bench_runlog_sql
#       hand_fenced    the hand-written SQL that gives append_fenced's
#                      guarantee, in ONE statement per transaction
#                      (bench/runlog_hand.pgbench): a data-modifying CTE
#                      that reads the runs row FOR SHARE at driver_epoch =
#                      the epoch, moves run_logs.last_seq by 16 (its upsert)
#                      and inserts the 16 entries of jsonb_array_elements
#                      (chunks) WITH ORDINALITY at the seqs after the old
#                      tail.  It is written against the extension's own
#                      tables in bench_runlog (this script runs as a
#                      superuser, which may write them directly; an app
#                      would have tables of its own of the same shape), so
#                      the rows, indexes and locks are the same work.  Plain
#                      SQL: run once, in the C edition's database; both
#                      editions' fenced appends are divided by it.
#
#     bench/runlog_append.pgbench and bench/runlog_bare.pgbench, prepared
#     statements, the chunks as parameters (the array of 16 for the
#     extension, 16 parameters for the bare INSERT: the same bytes).  Every
#     run starts from empty tables (TRUNCATE); the three alternate, the order
#     rotated, BENCH_RUNLOG_REPEATS times; medians of tps and latency, and
#     each extension workload's ratio to bare (the goal: >= 0.8), each
#     fenced append's to hand_fenced (the goal: >= 1.0), and each
#     watched workload's to the same append unwatched (the goal: >= 0.8).
#     All of it once per synchronous_commit setting of BENCH_RUNLOG_SYNCS.
#
# (b) Wake: bench/runlog-wake.c (built here with cc and libpq): a writer
#     connection appends one batch (BENCH_RUNLOG_WAKE_CHUNKS chunks) at a
#     time, a reader connection that LISTENs on sandbox_store_run_log waits
#     for the notification and reads the new entries; median, p99 and max of
#     the time from sending the append to the wake (notify), to having the
#     entries (read), and to the writer's acknowledgement (ack), over
#     BENCH_RUNLOG_WAKE_ITERATIONS appends on an otherwise idle server.
#
#     The hook for a comparison: BENCH_RUNLOG_WAKE_COMPARE, by default the
#     client's clients/typescript/test/lines/0.58/bench-wake.mjs (the
#     in-process memoryStream of @tanstack/ai 0.58 beside
#     createStreamDurability, and 200 readers tailing 200 runs with the
#     connections they use) when the client is built and its 0.58 line
#     installed (not in a smoke run); set it empty to skip.  It is run as a
#     shell command, and
#     each line it prints, "label<TAB>p50_ms<TAB>p99_ms", becomes a row of the
#     wake table beside PostgreSQL's.  The raw samples are in runlog-wake.tsv.
#
# (c) The client: bench/runlog-client.mjs, its appends to watched logs (one
#     run_log_wake at a time for all of them, after the commits) and to the
#     same logs notifying at their commits (a role without run_log_wake),
#     each beside unwatched logs, per synchronous_commit setting; when the
#     client is built (not in a smoke run).
#
# Runs against the server in PGHOST/PGPORT/PGUSER (a superuser, with
# sandbox_store 1.5 or later installed); creates and drops databases
# bench_runlog and bench_runlog_sql.  Writes to BENCH_OUT (default bench/out/): runlog.md,
# runlog.tsv, runlog-wake.tsv, runlog-pgbench.log, runlog-client.tsv.  Skips (and says so in
# runlog.md) when the installed extension has no run_log_append.
#
# Options (environment):
#   BENCH_RUNLOG_CLIENTS (8)            client count of (a)
#   BENCH_RUNLOG_SECONDS (5)            length of one run of (a)
#   BENCH_RUNLOG_REPEATS (3)            side-by-side rounds of (a)
#   BENCH_RUNLOG_SYNCS ("on off")       synchronous_commit settings of (a)
#   BENCH_RUNLOG_FSYNC (on)             fsync during the phase on with-cluster.sh's
#                                       throwaway cluster (which runs with fsync
#                                       off), as a server's default: a notifying
#                                       commit holds PostgreSQL's notification
#                                       lock through its WAL flush; another
#                                       server is measured as it is set
#   BENCH_RUNLOG_WAKE_ITERATIONS (2000) timed appends of (b), after 200 untimed
#   BENCH_RUNLOG_WAKE_CHUNKS (1)        chunks per append of (b)
#   BENCH_RUNLOG_WAKE_COMPARE           see above
#   BENCH_THREADS (2)                   pgbench -j
#   BENCH_SMOKE (0)                     1: each workload once, 20 transactions
#                                       per client, 50 wake iterations: checks
#                                       the harness, measures nothing
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=bench-runlog
here=$sb_top/bench
smoke=${BENCH_SMOKE:-0}
clients=${BENCH_RUNLOG_CLIENTS:-8}
secs=${BENCH_RUNLOG_SECONDS:-5}
repeats=${BENCH_RUNLOG_REPEATS:-3}
wake_iterations=${BENCH_RUNLOG_WAKE_ITERATIONS:-2000}
wake_warmup=200
wake_chunks=${BENCH_RUNLOG_WAKE_CHUNKS:-1}
threads_max=${BENCH_THREADS:-2}
out=${BENCH_OUT:-$here/out}
dur=(-T "$secs")
if [ "$smoke" = 1 ]; then
  clients=2 repeats=1 dur=(-t 20) wake_iterations=50 wake_warmup=5
fi
db=bench_runlog
sqldb=bench_runlog_sql
wls=(append_fenced append_statements append sql_append_fenced bare hand_fenced append_watched append_woken sql_append_watched sql_append_woken)
read -r -a syncs <<<"${BENCH_RUNLOG_SYNCS:-on off}"

psql_db() { psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }

for tool in psql pgbench cc awk sort; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found"
done
mkdir -p "$out"
rm -f "$out"/runlog.md "$out"/runlog.tsv "$out"/runlog-wake.tsv "$out"/runlog-pgbench.log "$out"/runlog-client.tsv
sb_tempdir sandbox_store_runlog; work=$sb_dir
for prog in runlog-wake runlog-listen; do
  cc -O2 -Wall -Wextra -Werror -I"$("${PG_CONFIG:-pg_config}" --includedir)" -o "$work/$prog" \
    "$here/$prog.c" -L"$("${PG_CONFIG:-pg_config}" --libdir)" -lpq ||
    fail "could not build bench/$prog.c (libpq-dev)"
done

sb_fresh_db "$db"
psql_db -c "CREATE EXTENSION sandbox_store"
if [ "$(psql -X -At -d "$db" -c "SELECT count(*) FROM pg_proc
      WHERE pronamespace = 'sandbox_store'::regnamespace AND proname = 'run_log_append'")" = 0 ]; then
  note="skipped: sandbox_store $(psql -X -At -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'") has no run_log_append (1.5)"
  say "$note"
  printf '### Run log\n\n%s\n' "$note" >"$out/runlog.md"
  exit 0
fi
# The SQL edition beside it: the plain script of this tree's version.
sb_fresh_db "$sqldb"
"$sb_top/src/sql/build.sh" plain "$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$sb_top/sandbox_store.control")" \
  >"$work/sandbox_store-sql.sql"
psql -X -q -v ON_ERROR_STOP=1 -d "$sqldb" -f "$work/sandbox_store-sql.sql" >/dev/null

# The bare table: run_log_entries' shape and primary key.  Runs for the
# fenced appends: one per client, each claimed at one epoch, 1000000 (a
# driverEpoch raise: run_claim's epochs differ from run to run).
psql_db <<'SQL'
CREATE TABLE runlog_bare (run_id text NOT NULL, seq int8 NOT NULL, chunk jsonb NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE runlog_runs (workload text, sync text, clients int, rep int, tps float8, lat_ms float8, txns bigint);
SQL
setup_runs() { # database
  psql -X -q -v ON_ERROR_STOP=1 -d "$1" -c "SELECT count(sandbox_store.run_create_or_resume('fenced-' || c, 'thread-' || c, 1767225600000)),
                     count(sandbox_store.run_update('fenced-' || c, jsonb_build_object('driverEpoch', 1000000)))
                FROM generate_series(0, $((clients - 1))) c" >/dev/null
}

# 16 chunks of about 200 bytes of JSON: the events of one streamed answer.
chunk() { # i
  printf '{"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-7f3a9c", "timestamp": %d, "delta": "%s"}' \
    $((1767225600000 + $1)) \
    "$(printf 'Step %02d: the build passed, 42 tests green; now updating the README and the changelog for the release.' "$1")"
}
chunks="["
bare_vars=()
for i in $(seq 1 16); do
  c=$(chunk "$i")
  chunks+="${c}"
  [ "$i" = 16 ] || chunks+=", "
  bare_vars+=(-D "c$i=$c")
done
chunks+="]"
chunk_bytes=$(psql -X -At -d "$db" -v c="$chunks" <<<"SELECT round(avg(octet_length(e::text))) FROM jsonb_array_elements(:'c'::jsonb) e")

run_one() { # workload sync rep
  local wl=$1 sync=$2 rep=$3 rc=0 res=$work/pgbench.out args=() wdb=$db listener=
  local j=$((clients < threads_max ? clients : threads_max))
  case $wl in sql_*) wdb=$sqldb ;; esac
  psql -X -q -v ON_ERROR_STOP=1 -d "$wdb" -c "TRUNCATE sandbox_store.run_log_entries, sandbox_store.run_logs"
  psql_db -c "TRUNCATE runlog_bare"
  case $wl in
    *_watched | *_woken)
      # A reader watches every client's log, its listener takes the notifications.
      psql -X -q -v ON_ERROR_STOP=1 -d "$wdb" -c "SELECT count(*) FROM generate_series(0, $((clients - 1))) c,
                       LATERAL sandbox_store.run_log_watch('fenced-' || c)" >/dev/null
      "$work/runlog-listen" "dbname=$wdb" >"$work/listen.out" &
      listener=$!
      # Its LISTEN in effect before the first append (up to 2 minutes on a
      # loaded machine; at once if it failed).
      for _ in $(seq 1 1200); do
        grep -q listening "$work/listen.out" 2>/dev/null && break
        kill -0 "$listener" 2>/dev/null || break
        sleep 0.1
      done
      if ! grep -q listening "$work/listen.out"; then
        kill "$listener" 2>/dev/null || true
        wait "$listener" 2>/dev/null || true
        fail "runlog $wl: the listener did not start"
      fi
      ;;
  esac
  case $wl in
    append_fenced | append_statements | sql_append_fenced | append_watched | sql_append_watched)
      args=(-D prefix=fenced- -D epoch=1000000 -D "chunks=$chunks" -f "$here/runlog_append.pgbench") ;;
    append_woken | sql_append_woken)
      args=(-D prefix=fenced- -D epoch=1000000 -D "chunks=$chunks" -f "$here/runlog_woken.pgbench") ;;
    hand_fenced) args=(-D prefix=fenced- -D epoch=1000000 -D "chunks=$chunks" -f "$here/runlog_hand.pgbench") ;;
    append) args=(-D prefix=open- -D epoch=0 -D "chunks=$chunks" -f "$here/runlog_append.pgbench") ;;
    bare) args=(-D prefix=bare- -D n=0 "${bare_vars[@]}" -f "$here/runlog_bare.pgbench") ;;
  esac
  psql_db -c "CHECKPOINT"
  local options="-c synchronous_commit=$sync"
  [ "$wl" = append_statements ] && options+=" -c sandbox_store.direct_reads=off -c sandbox_store.direct_inserts=off"
  PGOPTIONS="$options" pgbench -n -M prepared -c "$clients" -j "$j" "${dur[@]}" "${args[@]}" "$wdb" >"$res" 2>&1 || rc=$?
  if [ -n "$listener" ]; then
    kill -TERM "$listener"
    wait "$listener" || fail "runlog $wl: the listener failed"
    # Every append of a watched log woke the reader at least once.
    [ "$(tail -n 1 "$work/listen.out")" -gt 0 ] || fail "runlog $wl: the listener got no notification"
  fi
  {
    echo "=== runlog $wl synchronous_commit=$sync clients=$clients rep=$rep"
    cat "$res"
  } >>"$out/runlog-pgbench.log"
  if [ $rc -ne 0 ] || grep -Eq "aborted|ERROR:|FATAL:|^number of failed transactions: [1-9]" "$res"; then
    tail -n 20 "$res" >&2
    fail "runlog $wl clients=$clients: pgbench failed (exit $rc)"
  fi
  local tps lat txns
  tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$res" | head -n 1)
  lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$res")
  txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$res")
  { [ -n "$tps" ] && [ -n "$lat" ] && [ -n "$txns" ] && [ "$txns" -gt 0 ]; } || fail "runlog $wl: no throughput"
  # What was written is what was sent: 16 entries per transaction, seqs
  # 1..last_seq in every run (the extension's), last_seq in run_logs;
  # hand_fenced's too (a stale epoch would have written no rows: the count).
  local check
  case $wl in
    bare) check=$(psql -X -At -d "$db" -c "SELECT count(*) = 16 * $txns FROM runlog_bare") ;;
    *) check=$(psql -X -At -d "$wdb" -c "SELECT count(*) = 16 * $txns
           AND NOT EXISTS (SELECT FROM sandbox_store.run_logs l
                            WHERE l.last_seq <> (SELECT count(*) FROM sandbox_store.run_log_entries e WHERE e.run_id = l.run_id)
                               OR l.last_seq <> (SELECT max(seq) FROM sandbox_store.run_log_entries e WHERE e.run_id = l.run_id))
           FROM sandbox_store.run_log_entries") ;;
  esac
  [ "$check" = t ] || fail "runlog $wl: the tables do not hold 16 entries per transaction, 1..last_seq per run"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$wl" "$sync" "$clients" "$rep" "$tps" "$lat" "$txns" |
    tee -a "$out/runlog.tsv" | psql_db -c "COPY runlog_runs FROM STDIN"
  printf 'bench-runlog: %-18s sync=%-3s c=%-3s rep=%s  tps=%9.0f  latency=%7.3f ms\n' "$wl" "$sync" "$clients" "$rep" "$tps" "$lat"
}

start=$SECONDS
fsync_want=${BENCH_RUNLOG_FSYNC:-on}
if [ -n "${SB_CLUSTER_DIR:-}" ] && [ "$(psql -X -At -d postgres -c 'SHOW fsync')" != "$fsync_want" ]; then
  say "throwaway cluster: fsync = $fsync_want for this phase (ALTER SYSTEM, reload)"
  psql -X -q -d postgres -c "ALTER SYSTEM SET fsync = $fsync_want" -c "SELECT pg_reload_conf()" >/dev/null
  fsync_set=1
fi
fsync_now=$(psql -X -At -d postgres -c 'SHOW fsync')
setup_runs "$db"
setup_runs "$sqldb"
printf 'workload\tsync\tclients\trep\ttps\tlat_ms\ttxns\n' >"$out/runlog.tsv"
n=${#wls[@]}
for sync in "${syncs[@]}"; do
  for rep in $(seq 1 "$repeats"); do
    for i in $(seq 0 $((n - 1))); do
      run_one "${wls[$(((i + rep - 1) % n))]}" "$sync" "$rep"
    done
  done
done

# --- (b) wake latency ----------------------------------------------------------------

psql_db -c "TRUNCATE sandbox_store.run_log_entries, sandbox_store.run_logs"
"$work/runlog-wake" "dbname=$db" wake-run "$wake_iterations" "$wake_warmup" "$wake_chunks" \
  "$out/runlog-wake.tsv" >"$work/wake.txt" || fail "the wake probe failed"
declare -A p50 p99 pmax
while IFS=$'\t' read -r name a b c; do p50[$name]=$a p99[$name]=$b pmax[$name]=$c; done <"$work/wake.txt"
{ [ -n "${p50[notify]:-}" ] && [ -n "${p50[read]:-}" ]; } || fail "the wake probe reported nothing"
say "wake: notify p50 ${p50[notify]} ms p99 ${p99[notify]} ms; read p50 ${p50[read]} ms p99 ${p99[read]} ms"
compare_rows=""
# By default, the client's side (clients/typescript/test/lines/0.58/bench-wake.mjs:
# memoryStream beside createStreamDurability, and 200 readers on 200 runs)
# when the client is built and its 0.58 line installed (test/run.sh does both).
client_line=$sb_top/clients/typescript/test/lines/0.58
# (Not in the smoke run, which checks this script's harness only.)
if [ "$smoke" != 1 ] && [ -z "${BENCH_RUNLOG_WAKE_COMPARE+set}" ] && command -v node >/dev/null 2>&1 &&
  [ -f "$sb_top/clients/typescript/dist/index.js" ] && [ -d "$client_line/node_modules/@tanstack/ai" ]; then
  BENCH_RUNLOG_WAKE_COMPARE="WAKE_ITERATIONS=500 WAKE_READERS=200 PGDATABASE=$db node '$client_line/bench-wake.mjs'"
fi
if [ -n "${BENCH_RUNLOG_WAKE_COMPARE:-}" ]; then
  compare_rows=$(bash -c "$BENCH_RUNLOG_WAKE_COMPARE" | awk -F'\t' 'NF >= 3 { printf "| %s | %s | %s | |\n", $1, $2, $3 }') ||
    fail "BENCH_RUNLOG_WAKE_COMPARE failed"
fi

# --- (c) the client's appends, watched and unwatched ----------------------------------

# bench/runlog-client.mjs through createStreamDurability, when the client
# is built (test/run.sh builds it); not in a smoke run.
client_rows=""
if [ "$smoke" != 1 ] && command -v node >/dev/null 2>&1 && [ -f "$sb_top/clients/typescript/dist/index.js" ] &&
  [ -d "$sb_top/clients/typescript/node_modules/pg" ]; then
  for edition in C SQL; do
    edb=$db; [ "$edition" = C ] || edb=$sqldb
    for sync in "${syncs[@]}"; do
      psql_db -c "ALTER DATABASE $edb SET synchronous_commit = $sync"
      CLIENTS=$clients SECONDS_PER_RUN=$secs REPEATS=$repeats PGDATABASE=$edb node "$here/runlog-client.mjs" \
        >"$work/client-$edition-$sync.txt" || fail "bench/runlog-client.mjs failed ($edition edition)"
      client_rows+=$(awk -F'\t' -v s="$sync" -v e="$edition" '$1 == "ratio" { printf "| %s | %s | %s | %s |\n", e, $2 == "watched" ? "notify false, woken after the commit (1.7.0)" : "notifying at its commit (before 1.7.0)", s, $3 }' \
        "$work/client-$edition-$sync.txt")$'\n'
      sed "s/^/$edition\t$sync\t/" "$work/client-$edition-$sync.txt" >>"$out/runlog-client.tsv"
    done
    psql_db -c "ALTER DATABASE $edb RESET synchronous_commit"
  done
fi

if [ -n "${fsync_set:-}" ]; then
  psql -X -q -d postgres -c "ALTER SYSTEM RESET fsync" -c "SELECT pg_reload_conf()" >/dev/null
fi

# --- report ----------------------------------------------------------------------------

{
  echo "### Run log: $(date -u '+%Y-%m-%d %H:%M UTC'), nproc=$(nproc), $(psql -X -At -d postgres -c 'SHOW server_version'), fsync=$fsync_now, synchronous_commit=$(psql -X -At -d postgres -c 'SHOW synchronous_commit')"
  echo
  [ "$smoke" != 1 ] || { echo "SMOKE RUN (20 transactions per client, $wake_iterations wake iterations): checks the harness, measures nothing."; echo; }
  echo "Append: one batch of 16 chunks (${chunk_bytes} bytes of JSON each) per transaction, $clients clients, each on a run of its own;"
  echo "median of $repeats side-by-side rounds of ${dur[*]} runs, tables emptied before each run. Goal: extension / bare >= 0.8,"
  echo "fenced append / hand-written (one statement: runs row FOR SHARE at the epoch, tail moved by 16, 16 rows) >= 1.0."
  echo
  echo "| workload | synchronous_commit | tps (batches/s) | chunks/s | latency (ms) | extension / bare | watched / unwatched | / hand-written |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  psql -X -At -d "$db" <<'SQL'
WITH m AS (
  SELECT workload, sync, percentile_cont(0.5) WITHIN GROUP (ORDER BY tps) AS tps,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY lat_ms) AS lat
    FROM runlog_runs GROUP BY workload, sync),
 o(workload, label, unwatched) AS (VALUES
  ('append_fenced', 'run_log_append, fenced (epoch)', NULL),
  ('append_statements', 'the same through statements (direct_reads, direct_inserts off)', NULL),
  ('append', 'run_log_append, no epoch', NULL),
  ('append_watched', 'run_log_append, fenced, watched: notifies at its commit', 'append_fenced'),
  ('append_woken', 'run_log_append, fenced, watched: notify false, run_log_wake after the commit', 'append_fenced'),
  ('sql_append_fenced', 'run_log_append, fenced, SQL edition', NULL),
  ('sql_append_watched', 'the same watched, notifying at its commit, SQL edition', 'sql_append_fenced'),
  ('sql_append_woken', 'the same watched, notify false and run_log_wake, SQL edition', 'sql_append_fenced'),
  ('hand_fenced', 'hand-written fenced append (one statement)', NULL),
  ('bare', 'bare INSERT of 16 rows', NULL))
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s |', o.label, m.sync,
              round(m.tps), round(16 * m.tps), round(m.lat::numeric, 3),
              CASE WHEN m.workload = 'bare' THEN '' ELSE
                round((m.tps / b.tps)::numeric, 2)::text
                || CASE WHEN m.tps / b.tps >= 0.8 THEN '' ELSE ' (below 0.8)' END END,
              CASE WHEN u.tps IS NULL THEN '' ELSE
                round((m.tps / u.tps)::numeric, 2)::text
                || CASE WHEN m.tps / u.tps >= 0.8 THEN '' ELSE ' (below 0.8)' END END,
              CASE WHEN h.tps IS NULL OR m.workload NOT IN ('append_fenced', 'append_statements', 'sql_append_fenced') THEN '' ELSE
                round((m.tps / h.tps)::numeric, 2)::text
                || CASE WHEN m.tps / h.tps >= 1.0 THEN '' ELSE ' (below 1.0)' END END)
  FROM o JOIN m ON m.workload = o.workload
  JOIN m b ON b.workload = 'bare' AND b.sync = m.sync
  LEFT JOIN m u ON u.workload = o.unwatched AND u.sync = m.sync
  LEFT JOIN m h ON h.workload = 'hand_fenced' AND h.sync = m.sync
 ORDER BY m.sync DESC, array_position(ARRAY['append_fenced', 'append_statements', 'append', 'append_watched', 'append_woken',
                                            'sql_append_fenced', 'sql_append_watched', 'sql_append_woken', 'hand_fenced', 'bare'], m.workload);
SQL
  echo
  echo "Wake: one writer appends a batch of $wake_chunks chunk(s) at a time, one reader LISTENs on sandbox_store_run_log"
  echo "and reads what is new (run_log_read after its last seq); $wake_iterations appends (after $wake_warmup untimed), idle server,"
  echo "from sending the append (ms):"
  echo
  echo "| | p50 | p99 | max |"
  echo "|---|---:|---:|---:|"
  echo "| PostgreSQL: the reader is woken (NOTIFY) | ${p50[notify]} | ${p99[notify]} | ${pmax[notify]} |"
  echo "| PostgreSQL: the reader has the entries (NOTIFY + run_log_read) | ${p50[read]} | ${p99[read]} | ${pmax[read]} |"
  echo "| PostgreSQL: the writer's append acknowledged (commit) | ${p50[ack]} | ${p99[ack]} | ${pmax[ack]} |"
  [ -z "$compare_rows" ] || echo "$compare_rows"
  echo
  if [ -n "$client_rows" ]; then
    echo "Through the client: $clients producers in one process append 16-chunk batches to runs of their own"
    echo "(createStreamDurability, one pool), watched (run_log_watch, one LISTEN connection) against unwatched;"
    echo "median of $repeats interleaved ${secs}-second rounds (bench/runlog-client.mjs; raw: runlog-client.tsv):"
    echo
    echo "| edition | watched append | synchronous_commit | watched / unwatched |"
    echo "|---|---|---|---:|"
    printf '%s' "$client_rows"
    echo
  fi
  echo "Compare with an in-process stream (e.g. @tanstack/ai's memoryStream): BENCH_RUNLOG_WAKE_COMPARE (bench/runlog.sh);"
  echo "raw samples in runlog-wake.tsv. Phase time: $((SECONDS - start)) s."
} >"$out/runlog.md"
cat "$out/runlog.md"

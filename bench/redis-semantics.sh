#!/usr/bin/env bash
# bench/redis-semantics.sh: what a Redis lock and record and sandbox_store do
# when things go wrong, shown on real servers with real kills (no mocks):
#
#   1. stall   a holder stalls past its TTL / lease; another client takes
#              the key and writes; then the stale holder writes.  Redis:
#              SET NX PX, HSET, compare-and-delete; also the token-checking
#              Lua write a careful user can add.  sandbox_store: lease mode
#              (fenced writes) and lock mode with
#              idle_in_transaction_session_timeout.
#   2. restart the server is killed right after 1,000 acknowledged writes
#              while a key is held: Redis killed with SIGKILL (AOF with
#              appendfsync always, everysec, and no AOF, Redis's default
#              config of RDB snapshots), PostgreSQL stopped in immediate
#              mode (synchronous_commit on and off; fsync on): how many
#              records, which locks and claims are there after the restart.
#   3. client  a client holding the key is killed (kill -9): how long until
#              the next client gets the key.
#
# Prints a transcript (commands and replies) as it goes, then a summary table
# of what was measured, also written to BENCH_OUT/redis-semantics.md.  Starts
# its own servers in a temp directory (Redis on Unix sockets, a PostgreSQL
# cluster of PG_CONFIG with fsync on, also on a Unix socket) and stops them at
# exit.  Called by bench/redis.sh, or alone (as root it re-runs itself as
# postgres on a copy of the tree, like with-cluster.sh).  About 30 seconds.
#
# Environment: REDIS_BENCH (bench/redis/redis-bench.c built; built here if
# unset), BENCH_OUT (bench/out).
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=redis-semantics
sb_as_postgres "$@"
sb_use_pg
trap 'sb_keep=1' ERR       # a failure keeps the work directory (server logs, session outputs)
trap '' PIPE               # a session whose psql has exited: the write fails, the script goes on
here=$sb_top/bench
out=${BENCH_OUT:-$here/out}
mkdir -p "$out"
sb_tempdir sandbox_store_redis_sem; work=$sb_dir
for tool in redis-server redis-cli cc psql pg_ctl; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found"
done
rb=${REDIS_BENCH:-}
if [ -z "$rb" ]; then
  rb=$work/redis-bench
  cc -O2 -Wall -Wextra -Werror -o "$rb" "$here/redis/redis-bench.c" -lhiredis -lpthread ||
    fail "could not build bench/redis/redis-bench.c"
fi
now_ms() { echo $(($(date +%s%N) / 1000000)); }
ms_since() { echo $(($(date +%s%N) / 1000000 - $1)); }
head1() { printf '\n=== %s\n' "$*"; }
note() { printf '    # %s\n' "$*"; }

# --- Redis: one server per configuration, killed and restarted at will ---------------

declare -A rpid
rsock=""
r_conf() { # name appendonly appendfsync
  mkdir -p "$work/r-$1"
  cat >"$work/r-$1/redis.conf" <<EOF
port 0
unixsocket $work/r-$1/redis.sock
unixsocketperm 700
dir $work/r-$1
logfile $work/r-$1/redis.log
daemonize no
appendonly $2
appendfsync $3
EOF
  # no AOF: Redis's default configuration, RDB snapshots (save 3600 1 300 100 60 10000)
  [ "$2" = yes ] && echo 'save ""' >>"$work/r-$1/redis.conf"
  return 0
}
r_start() { # name
  redis-server "$work/r-$1/redis.conf" &
  rpid[$1]=$!
  rsock=$work/r-$1/redis.sock
  for _ in $(seq 1 100); do
    [ "$(redis-cli -s "$rsock" PING 2>/dev/null)" = PONG ] && return 0
    sleep 0.05
  done
  fail "redis-server $1 did not start: $(tail -n 5 "$work/r-$1/redis.log")"
}
r_kill9() { # name
  kill -KILL "${rpid[$1]}"
  wait "${rpid[$1]}" 2>/dev/null || true
  rpid[$1]=""
}
r_stop_all() {
  local n
  for n in "${!rpid[@]}"; do
    [ -n "${rpid[$n]}" ] || continue
    kill -TERM "${rpid[$n]}" 2>/dev/null || true
    wait "${rpid[$n]}" 2>/dev/null || true
  done
}
sb_at_exit r_stop_all
R() { redis-cli --no-raw -s "$rsock" "$@"; }
Rq() { redis-cli --raw -s "$rsock" "$@"; }
rx() { # show a command and its reply
  local reply
  reply=$(R "$@")
  printf '  redis> %s\n    %s\n' "$*" "$reply" >&2
  printf '%s' "$reply"
}
release_lua="if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
checked_write_lua="if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('hset', KEYS[2], 'provider_sandbox_id', ARGV[2]) else return -1 end"

# --- PostgreSQL: a cluster of its own, fsync on -------------------------------------------

pdir=$work/pg
sb_cluster_init "$pdir" "fsync = on" "max_connections = 20" "shared_buffers = 32MB"
sb_cluster_start "$pdir"
pg() { psql -X -At -F ' | ' -v VERBOSITY=verbose -h "$pdir" -p 5432 -U postgres -d postgres "$@"; }
px() { # show a statement and its result (errors included, without LOCATION lines)
  local res
  res=$(pg -c "$1" 2>&1 | grep -v '^LOCATION:' || true)
  printf '  psql> %s\n' "$1" >&2
  printf '%s\n' "$res" | sed 's/^/    /' >&2
  printf '%s' "$res"
}
pg -q -c "CREATE EXTENSION sandbox_store" >/dev/null

# A psql session that stays open between statements (fed through a fifo).
declare -A sfd spid
s_open() { # name [PGOPTIONS]
  mkfifo "$work/$1.in"
  : >"$work/$1.out"
  PGOPTIONS=${2:-} psql -X -At -F ' | ' -v VERBOSITY=verbose -h "$pdir" -p 5432 -U postgres -d postgres \
    <"$work/$1.in" >>"$work/$1.out" 2>&1 &
  spid[$1]=$!
  local fd
  exec {fd}>"$work/$1.in"
  sfd[$1]=$fd
}
s_run() { # name sql: run it, wait for the answer, show both
  local mark="__done_$RANDOM$RANDOM" from rc=0
  from=$(wc -l <"$work/$1.out")
  if ! kill -0 "${spid[$1]}" 2>/dev/null; then
    wait "${spid[$1]}" || rc=$?
    printf '  psql(%s)> %s\n    (not sent: psql had exited with status %s; it printed:)\n' "$1" "$2" "$rc" >&2
    sed 's/^/    /' "$work/$1.out" >&2
    return 0
  fi
  printf '%s\n\\echo %s\n' "$2" "$mark" >&"${sfd[$1]}" || true
  # until the answer is there, or psql has exited (its connection was lost)
  for _ in $(seq 1 600); do
    grep -q "^$mark\$" "$work/$1.out" && break
    kill -0 "${spid[$1]}" 2>/dev/null || break
    sleep 0.05
  done
  grep -q "^$mark\$" "$work/$1.out" || kill -0 "${spid[$1]}" 2>/dev/null ||
    [ -n "$(tail -n +"$((from + 1))" "$work/$1.out")" ] || fail "session $1: no answer to: $2"
  printf '  psql(%s)> %s\n' "$1" "$2" >&2
  tail -n +"$((from + 1))" "$work/$1.out" | grep -v -e "^$mark\$" -e '^LOCATION:' | sed 's/^/    /' >&2
}
s_kill9() { # name
  local fd=${sfd[$1]}
  kill -KILL "${spid[$1]}" 2>/dev/null || true
  wait "${spid[$1]}" 2>/dev/null || true
  exec {fd}>&-
}

declare -A result

# === 1. a holder stalls past its TTL ========================================================

head1 "1. A holder stalls past its TTL / lease; B takes the key and records its sandbox; then A writes"

echo "--- Redis: SET NX PX 500, then a plain HSET (the usual pattern)"
r_conf stall yes everysec
r_start stall
rx SET lock:k tok-A NX PX 500 >/dev/null
note "A holds the lock (TTL 500 ms) and stalls for 700 ms (a GC pause, a slow provider call)"
sleep 0.7
rx SET lock:k tok-B NX PX 30000 >/dev/null
note "A's TTL ran out: B has the lock"
rx HSET rec:k provider_sandbox_id sbx-B latest_run_id run-B >/dev/null
rx EVAL "$release_lua" 1 lock:k tok-B >/dev/null
note "A wakes up and records its sandbox"
rx HSET rec:k provider_sandbox_id sbx-A latest_run_id run-A >/dev/null
a_rel=$(rx EVAL "$release_lua" 1 lock:k tok-A)
note "A's release returns 0: only now can A tell it had lost the lock, after its write"
final=$(Rq HGET rec:k provider_sandbox_id)
rx HGET rec:k provider_sandbox_id >/dev/null
if [ "$final" = sbx-A ]; then
  result[stall_redis]="**the stale write landed**: the record names A's sandbox, B's is orphaned (A's release returned ${a_rel#(integer) }, after the write)"
else
  result[stall_redis]="UNEXPECTED: the record names $final"
fi

echo "--- Redis: every write a Lua script that checks the lock token first (what a careful user can add)"
rx SET lock:k2 tok-A NX PX 500 >/dev/null
sleep 0.7
rx SET lock:k2 tok-B NX PX 30000 >/dev/null
rx EVAL "$checked_write_lua" 2 lock:k2 rec:k2 tok-B sbx-B >/dev/null
a_write=$(rx EVAL "$checked_write_lua" 2 lock:k2 rec:k2 tok-A sbx-A)
final=$(Rq HGET rec:k2 provider_sandbox_id)
rx HGET rec:k2 provider_sandbox_id >/dev/null
if [ "$final" = sbx-B ] && [ "$a_write" = "(integer) -1" ]; then
  result[stall_redis_lua]="refused (the script returned -1), record names B's sandbox: a token check on this one server, written into every write by the app"
else
  result[stall_redis_lua]="UNEXPECTED: the script returned $a_write, the record names $final"
fi
r_kill9 stall

echo "--- sandbox_store, lease mode: fenced writes"
fa=$(px "SELECT fence FROM sandbox_store.sandbox_ensure(key => 'k', run_id => 'run-A', lease => '500 milliseconds')")
note "A has the claim, fence $fa (lease 500 ms), and stalls for 700 ms"
sleep 0.7
fb=$(px "SELECT action, fence FROM sandbox_store.sandbox_ensure(key => 'k', run_id => 'run-B', lease => '30 seconds')")
fb=${fb##* | }
note "A's lease ran out: B took the key over with fence $fb"
px "SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert_release(key => 'k', fence => $fb, provider => 'e2b', provider_sandbox_id => 'sbx-B', thread_id => 't')" >/dev/null
note "A wakes up and records its sandbox with its fence"
a_err=$(px "SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert(key => 'k', provider => 'e2b', provider_sandbox_id => 'sbx-A', thread_id => 't', fence => $fa)")
final=$(px "SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('k')")
if [ "$final" = sbx-B ] && grep -q 'SB001' <<<"$a_err"; then
  result[stall_lease]="**refused with SB001** (\`claim on sandbox key \"k\" was lost\`), the record names B's sandbox"
else
  result[stall_lease]="UNEXPECTED: A got \"$a_err\", the record names $final"
fi

echo "--- sandbox_store, lock mode: no TTL; with idle_in_transaction_session_timeout = 500ms"
s_open A
s_run A "BEGIN; SET LOCAL idle_in_transaction_session_timeout = '500ms'; SELECT action FROM sandbox_store.sandbox_ensure(key => 'k2', run_id => 'run-A');"
note "A holds the key's lock (its transaction) and stalls for 700 ms"
sleep 0.7
px "BEGIN; SELECT action FROM sandbox_store.sandbox_ensure(key => 'k2', run_id => 'run-B'); SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert(key => 'k2', provider => 'e2b', provider_sandbox_id => 'sbx-B', thread_id => 't'); COMMIT;" >/dev/null
note "A wakes up and records its sandbox"
s_run A "SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert(key => 'k2', provider => 'e2b', provider_sandbox_id => 'sbx-A', thread_id => 't'); COMMIT;"
s_kill9 A
final=$(px "SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('k2')")
if [ "$final" = sbx-B ] && grep -q "idle-in-transaction timeout" "$work/A.out"; then
  result[stall_lock]="the server ended A's session at the timeout (its transaction rolled back, the lock released); A's write failed with the connection; the record names B's sandbox. Without the timeout nothing expires: B waits for A"
else
  result[stall_lock]="UNEXPECTED: the record names $final; A's session printed: $(tr '\n' ' ' <"$work/A.out")"
fi

# === 2. the server is killed =================================================================

head1 "2. The server is killed right after 1,000 acknowledged writes, while a client holds a key"

for cfg in always everysec noaof; do
  case $cfg in
    noaof) r_conf restart-$cfg no everysec; label="Redis, no AOF (RDB snapshots: Redis's default config)" ;;
    *) r_conf restart-$cfg yes $cfg; label="Redis, AOF, appendfsync $cfg" ;;
  esac
  echo "--- $label: SIGKILL"
  r_start restart-$cfg
  "$rb" -s "$rsock" -m load -n 1000 | sed 's/^/    /'
  rx SET lock:held tok-H NX PX 60000 >/dev/null
  note "1,000 records written (each acknowledged), lock:held taken with a 60 s TTL; kill -9 redis-server"
  r_kill9 restart-$cfg
  r_start restart-$cfg
  n=$(Rq EVAL "return #redis.call('keys', 'rec:*')" 0)
  rx EVAL "return #redis.call('keys', 'rec:*')" 0 >/dev/null
  ttl=$(Rq PTTL lock:held)
  rx PTTL lock:held >/dev/null
  if [ "$ttl" -gt 0 ]; then lk="lock kept (${ttl} ms of its TTL left)"; else lk="lock gone"; fi
  result[restart_$cfg]="$n of 1000 records; $lk"
  r_kill9 restart-$cfg
done

for sc in on off; do
  echo "--- sandbox_store, synchronous_commit $sc (fsync on): immediate stop"
  s_open "L$sc" "-c synchronous_commit=$sc"
  s_run "L$sc" "BEGIN; SELECT action FROM sandbox_store.sandbox_ensure(key => 'held-lock-$sc', run_id => 'run-L'); SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert(key => 'held-lock-$sc', provider => 'e2b', provider_sandbox_id => 'sbx-L', thread_id => 't');"
  fq=$(PGOPTIONS="-c synchronous_commit=$sc" px "SELECT fence FROM sandbox_store.sandbox_ensure(key => 'held-lease-$sc', run_id => 'run-Q', lease => '60 seconds')")
  note "lock mode: a transaction holds held-lock-$sc (its record written, not committed); lease mode: a claim on held-lease-$sc, fence $fq"
  for i in $(seq 1 1000); do
    echo "SELECT 1 FROM sandbox_store.sandbox_upsert(key => 'r-$sc-$i', provider => 'e2b', provider_sandbox_id => 'sbx-$i', thread_id => 't-$i');"
  done >"$work/writes.sql"
  PGOPTIONS="-c synchronous_commit=$sc" pg -q -v ON_ERROR_STOP=1 -f "$work/writes.sql" >/dev/null
  note "1,000 sandbox_upsert calls, autocommit, each acknowledged; pg_ctl stop -m immediate"
  "$sb_bindir/pg_ctl" -D "$pdir/data" -m immediate stop >/dev/null
  s_kill9 "L$sc"
  sb_cluster_start "$pdir"
  n=$(px "SELECT count(*) FROM sandbox_store.instances WHERE key LIKE 'r-$sc-%'")
  lrec=$(px "SELECT count(*) FROM sandbox_store.instances WHERE key = 'held-lock-$sc'")
  lfree=$(px "SELECT sandbox_store.sandbox_try_lock('held-lock-$sc')")
  claim=$(px "SELECT fence FROM sandbox_store.claims WHERE key = 'held-lease-$sc'")
  px "SELECT action FROM sandbox_store.sandbox_ensure(key => 'held-lease-$sc', run_id => 'run-X', lease => '1 minute', wait => '0')" >/dev/null
  if [ "$lfree" = t ]; then lk="lock-mode lock released (its uncommitted record: $lrec rows)"; else lk="lock-mode lock still held?"; fi
  if [ -n "$claim" ] && [ "$claim" = "$fq" ]; then cl="claim kept with fence $claim (until its lease runs out)"; else cl="claim: '${claim}'"; fi
  result[restart_pg_$sc]="$n of 1000 records; $lk; $cl"
done

# === 3. a client dies holding the key =========================================================

head1 "3. A client holding the key is killed (kill -9); how long until the next client gets the key"

echo "--- Redis: lock with a 2 s TTL"
r_conf dead yes everysec
r_start dead
"$rb" -s "$rsock" -m hold -k dead -t 2000 >"$work/hold.out" 2>&1 &
hold_pid=$!
for _ in $(seq 1 100); do grep -q '^held' "$work/hold.out" && break; sleep 0.02; done
grep -q '^held' "$work/hold.out" || fail "the Redis holder did not get the lock"
sleep 0.2
t0=$(now_ms)
{
  kill -KILL "$hold_pid"
  wait "$hold_pid" || true
} 2>/dev/null
note "holder (redis-bench -m hold, TTL 2000 ms) killed 200 ms after taking the lock; the next client tries with backoff"
got=$("$rb" -s "$rsock" -m acquire -k dead)
dt=$(ms_since "$t0")
echo "    $got"
result[dead_redis]="${dt} ms after the kill (the lock's 2000 ms TTL had to run out)"
r_kill9 dead

echo "--- sandbox_store, lock mode"
s_open H
s_run H "BEGIN; SELECT action FROM sandbox_store.sandbox_ensure(key => 'dead', run_id => 'run-H');"
(pg -c "BEGIN" -c "SELECT action FROM sandbox_store.sandbox_ensure(key => 'dead', run_id => 'run-W')" -c "COMMIT" \
  >"$work/waiter.out" 2>&1; now_ms >"$work/waiter.done") &
w_pid=$!
for _ in $(seq 1 200); do
  [ "$(pg -c "SELECT count(*) FROM sandbox_store.key_locks WHERE lock_id = sandbox_store.sandbox_lock_id('dead') AND NOT granted")" = 1 ] && break
  sleep 0.02
done
note "H holds the key (idle in its transaction, like an app creating a sandbox); W waits for it; kill -9 H's psql"
t0=$(now_ms)
s_kill9 H
wait "$w_pid"
dt=$(($(cat "$work/waiter.done") - t0))
sed 's/^/    W: /' "$work/waiter.out"
result[dead_lock]="${dt} ms after the kill (the backend saw its client's socket close and rolled back)"

echo "--- sandbox_store, lease mode: a 2 s lease"
s_open H2
s_run H2 "SELECT action, fence FROM sandbox_store.sandbox_ensure(key => 'dead2', run_id => 'run-H', lease => '2 seconds');"
sleep 0.2
t0=$(now_ms)
s_kill9 H2
note "H2 took a claim (lease 2 s) and was killed 200 ms later; W asks for the key with a lease of its own"
px "SELECT action, fence FROM sandbox_store.sandbox_ensure(key => 'dead2', run_id => 'run-W', lease => '30 seconds')" >/dev/null
dt=$(ms_since "$t0")
result[dead_lease]="${dt} ms after the kill (the claim's 2 s lease had to run out)"

# === summary ==================================================================================

{
  echo "### Why not Redis? What happens when things go wrong (bench/redis-semantics.sh, $(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), lock \`SET lock:k token NX PX ttl\`, release by a compare-and-delete script;"
  echo "PostgreSQL $(pg -c 'SHOW server_version' | cut -d' ' -f1) with fsync on, sandbox_store $(pg -c "SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'"). Measured on real servers, kills with SIGKILL."
  echo
  echo "| what happens | Redis | sandbox_store |"
  echo "|---|---|---|"
  echo "| a holder stalls past its TTL / lease (500 ms, stall 700 ms); B takes the key and records its sandbox; then the stale holder writes | plain \`HSET\`: ${result[stall_redis]}. Token-checking Lua write: ${result[stall_redis_lua]} | lease mode, fenced write: ${result[stall_lease]}. Lock mode: ${result[stall_lock]} |"
  echo "| server killed right after 1,000 acknowledged writes, a key held (Redis: SIGKILL; PostgreSQL: immediate stop) | AOF always: ${result[restart_always]}. AOF everysec: ${result[restart_everysec]}. No AOF: ${result[restart_noaof]} | synchronous_commit on: ${result[restart_pg_on]}. Off: ${result[restart_pg_off]} |"
  echo "| a client holding the key is killed (kill -9): the next client gets the key | ${result[dead_redis]} | lock mode: ${result[dead_lock]}. Lease mode: ${result[dead_lease]} |"
  echo
  echo "A process kill keeps what was written to the OS: Redis writes its AOF (everysec too) before it replies, PostgreSQL"
  echo "with synchronous_commit off may not have written the newest commits yet. Power loss or an OS crash, which this"
  echo "cannot show, also loses the unflushed tail of both: up to about a second of Redis everysec's acknowledged writes,"
  echo "up to 600 ms of PostgreSQL's with synchronous_commit off; nothing with appendfsync always or synchronous_commit on."
} >"$out/redis-semantics.md"
echo
cat "$out/redis-semantics.md"
if grep -q UNEXPECTED "$out/redis-semantics.md"; then
  fail "a scenario did not go as the summary expects (see above)"
fi

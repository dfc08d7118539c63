#!/usr/bin/env bash
# bench/browser.sh: a streamed answer in a real browser after a fault (phase
# browser of bench/run.sh; alone: test/scripts/with-cluster.sh bench/browser.sh,
# or make bench-browser).
#
# The chat-resume example as it is (clients/typescript/examples/chat-resume):
# two replicas of its server (dist/server.js, the route from
# createChatHandlers) on one database, its load balancer (dist/balancer.js)
# in front, and its page (@tanstack/ai-client 0.33.2 with stallFetch) in
# Debian's chromium, headless, driven by playwright-core (nothing downloads
# a browser).  bench/browser/run.mjs puts a question, waits until the page
# shows token BENCH_BROWSER_FAULT_AT of the counting model's answer, makes a
# fault, and times in the page's DOM when the answer goes on:
#
#   kill   (a) kill -9 of the replica that produces the answer
#   stop   (b) SIGSTOP of it (SIGCONT once the answer is complete)
#   cut    (c) the balancer closes every connection of the browser (SIGUSR2),
#              both replicas live
#   chain  (d) kill -9 of the producer A; once B took over, A starts again;
#              then SIGSTOP of B: two faults, timed each
#
# The time that counts ("new"): from the fault (the moment before the
# signal) to the page showing the first token produced after it: token L+1,
# L being the highest token whose chunk was produced at or before the fault
# (its timestamp in the run's log).  Tokens the dead producer stored that
# the page had not yet shown are replay and do not count; that time is
# reported too ("next": the page shows any token beyond what it showed),
# and when token L+1 was produced on the server ("produced").  Each trial
# checks the outcome: one assistant message holding every token once, in
# order, at every change of the DOM; the run recorded completed and its log
# holding each token once; nothing of a continued (SIGCONT) producer landing
# in the log.  A trial that fails a check is listed with what failed.
#
# Beside it, the same page on Vercel's resumable-stream 2.2.13 with Redis
# (Debian's redis-server on a Unix socket of its own), for the kill -9 of
# the producer (bench/browser/resumable-replica.mjs, two replicas behind the
# same balancer):
#
#   redis-kill    the reconnect uses resumeExistingStream (what the library
#                 offers); a route answers 500 when it throws
#   redis-second  when the resume throws, the replica starts a second
#                 producer for the same id (createNewResumableStream)
#   redis-two     no browser (bench/browser/two-producers.mjs): what the
#                 library does with a second producer for one id, its first
#                 alive, killed, or finished
#
# Settings (environment):
#   BENCH_BROWSER_SCENARIOS ("kill stop cut chain redis-kill redis-second redis-two")
#   BENCH_BROWSER_TRIALS (10)        trials per scenario
#   BENCH_BROWSER_LEASE_MS (3000), BENCH_BROWSER_HEARTBEAT_MS (500)  the replicas' LEASE_MS, HEARTBEAT_MS
#   BENCH_BROWSER_TOKENS (400), BENCH_BROWSER_TOKEN_MS (20)          the counting model's answer
#   BENCH_BROWSER_FAULT_AT (100)     the token the page shows before the fault (60 at most in the chain)
#   BENCH_CHROMIUM (/usr/bin/chromium)
#   BENCH_SMOKE (0)                  1: one trial of (a), to check the harness (skipped, and said so, without chromium)
#
# Runs against the server in PGHOST/PGPORT/PGUSER (a superuser, with
# sandbox_store 1.5 or later installed); creates and drops database
# bench_browser.  Installs what it needs with npm (the client's and the
# example's dependencies, and bench/browser's lock file: playwright-core,
# resumable-stream, redis) and builds the client and the example.  Writes to
# BENCH_OUT (default bench/out/): browser.md, browser.tsv (one line per
# fault), browser.log.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=bench-browser
here=$sb_top/bench
smoke=${BENCH_SMOKE:-0}
scenarios=${BENCH_BROWSER_SCENARIOS:-"kill stop cut chain redis-kill redis-second redis-two"}
trials=${BENCH_BROWSER_TRIALS:-10}
chromium=${BENCH_CHROMIUM:-/usr/bin/chromium}
out=${BENCH_OUT:-$here/out}
if [ "$smoke" = 1 ]; then
  scenarios=${BENCH_BROWSER_SCENARIOS:-kill} trials=1
fi
db=bench_browser
client=$sb_top/clients/typescript
example=$client/examples/chat-resume

mkdir -p "$out"
rm -f "$out"/browser.md "$out"/browser.tsv "$out"/browser.log
skip() {
  say "skipped: $1"
  printf '### A streamed answer in the browser after a fault\n\nskipped: %s\n' "$1" >"$out/browser.md"
  exit 0
}

for tool in node npm psql; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found"
done
# Without a browser there is nothing to measure: said so, not failed (make deps installs Debian's chromium).
[ -x "$chromium" ] || skip "no chromium at $chromium (apt-get install chromium: Debian's, nothing downloads a browser)"
if [[ " $scenarios " == *" redis-"* ]] && ! command -v redis-server >/dev/null 2>&1; then
  warn "redis-server not found: the resumable-stream scenarios are left out (apt-get install redis-server)"
  scenarios=$(tr ' ' '\n' <<<"$scenarios" | grep -v '^redis-' | tr '\n' ' ')
fi

sb_tempdir sandbox_store_browser; work=$sb_dir
# npm's cache lives in $HOME/.npm; a private one if HOME is not writable (as postgres).
if [ ! -w "${HOME:-/nonexistent}" ]; then
  npm_config_cache="${TMPDIR:-/tmp}/sandbox_store_npm_cache.$(id -u)"
  export npm_config_cache
fi
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
npmq() { npm "$@" --prefer-offline --no-audit --no-fund --loglevel=error >>"$work/npm.log" 2>&1 || {
  tail -n 30 "$work/npm.log" >&2
  fail "npm $* failed in $PWD"
}; }

# --- the example, built from this tree's client ------------------------------------------

start=$SECONDS
(
  cd "$client"
  [ -x node_modules/typescript/bin/tsc ] || npmq ci
  npmq run build
  cd "$example"
  # The example's copy of the client is a packed one: refreshed, so that it is this tree's.
  rm -rf node_modules/sandbox-store-client
  npmq install
  npmq run build
  cd "$here/browser"
  if [ ! -d node_modules/playwright-core ] || [ ! -d node_modules/resumable-stream ]; then npmq ci; fi
)
for f in dist/server.js dist/balancer.js dist/page.js public/index.html; do
  [ -f "$example/$f" ] || fail "the example has no $f after its build"
done
say "client, example and bench/browser ready ($((SECONDS - start)) s)"

# --- the database -------------------------------------------------------------------------

sb_fresh_db "$db"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION sandbox_store"
ext_version=$(psql -X -At -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'")
if [ "$(psql -X -At -d "$db" -c "SELECT count(*) FROM pg_proc
      WHERE pronamespace = 'sandbox_store'::regnamespace AND proname = 'run_log_append'")" = 0 ]; then
  skip "sandbox_store $ext_version has no run log (1.5)"
fi

# --- Redis, for the resumable-stream scenarios --------------------------------------------

redis_pid=""
redis_sock=""
redis_stop() {
  [ -n "$redis_pid" ] || return 0
  kill -TERM "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
  redis_pid=""
}
if [[ " $scenarios " == *" redis-"* ]]; then
  rdir=$work/redis
  redis_sock=$rdir/redis.sock
  mkdir -p "$rdir"
  # What resumable-stream needs: pub/sub and a few keys; nothing persisted.
  printf '%s\n' "port 0" "unixsocket $redis_sock" "unixsocketperm 700" "dir $rdir" "logfile $rdir/redis.log" \
    "daemonize no" 'save ""' "appendonly no" >"$rdir/redis.conf"
  sb_at_exit redis_stop
  redis-server "$rdir/redis.conf" &
  redis_pid=$!
  for _ in $(seq 1 50); do
    [ "$(redis-cli -s "$redis_sock" PING 2>/dev/null)" = PONG ] && break
    kill -0 "$redis_pid" 2>/dev/null || fail "redis-server exited: $(tail -n 5 "$rdir/redis.log")"
    sleep 0.1
  done
  [ "$(redis-cli -s "$redis_sock" PING 2>/dev/null)" = PONG ] || fail "redis-server did not start"
  redis_version=$(redis-cli -s "$redis_sock" INFO server | sed -n 's/^redis_version:\([^\r]*\).*/\1/p')
  say "redis-server $redis_version on $redis_sock"
fi

# --- the trials -----------------------------------------------------------------------------

say "scenarios: $scenarios; $trials trial(s) each; sandbox_store $ext_version, $(node --version), $("$chromium" --version 2>/dev/null | tail -n 1)"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
rc=0
BB_OUT=$out BB_EXAMPLE=$example BB_SCENARIOS=$scenarios BB_TRIALS=$trials BB_CHROMIUM=$chromium \
  BB_LEASE_MS=${BENCH_BROWSER_LEASE_MS:-3000} BB_HEARTBEAT_MS=${BENCH_BROWSER_HEARTBEAT_MS:-500} \
  BB_TOKENS=${BENCH_BROWSER_TOKENS:-400} BB_TOKEN_MS=${BENCH_BROWSER_TOKEN_MS:-20} \
  BB_FAULT_AT=${BENCH_BROWSER_FAULT_AT:-100} BB_REDIS_SOCKET=$redis_sock BB_SMOKE=$smoke \
  PGDATABASE=$db node "$here/browser/run.mjs" || rc=$?
redis_stop
[ -s "$out/browser.md" ] || fail "the browser driver wrote no browser.md (exit $rc; see $out/browser.log)"
{
  echo
  echo "nproc=$(nproc); load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; sandbox_store $ext_version;" \
    "$(node --version); $("$chromium" --version 2>/dev/null | tail -n 1)${redis_sock:+; Redis $redis_version}."
} >>"$out/browser.md"
cat "$out/browser.md"
[ $rc -eq 0 ] || fail "the browser driver failed (exit $rc): a trial's harness broke (see browser.md and browser.log)"
say "ok: outputs in $out (browser.md, browser.tsv, browser.log)"

# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034 # sb_top, fail, proxy_port come from the sourcing script, one_way and measured go to it
# bench/proxy.sh: the delay proxy of the round-trip benchmarks
# (bench/delay-proxy.c), shared by bench/rtt.sh and bench/redis.sh.  Sourced
# after test/scripts/lib.sh, never run.
#
#   proxy_build DIR       build the proxy into DIR/delay-proxy (cc -O2); stop
#                         it at exit.  Needs proxy_port (127.0.0.1 port).
#   proxy_start US UPSTREAM CHECK...
#                         a fresh proxy with a one-way delay of US
#                         microseconds, relaying to UPSTREAM (a Unix socket
#                         path or host:port); waits until the command CHECK
#                         succeeds through it
#   proxy_stop            stop it; proxy_cpu = the CPU seconds it used
#                         (user + system), 0 if none ran
#   proxy_calibrate DB TARGETS...
#                         per target round trip (ms), the one-way delay that
#                         gives it: one_way[T] (us) and measured[T] (ms, the
#                         round trip measured with it), and proxy_base (the
#                         latency at delay 0).  Measured with pgbench, SELECT
#                         1, one client, through the proxy to the server of
#                         PGHOST/PGPORT, minus the same at delay 0: a
#                         sleeping thread wakes late on a VM (tens of
#                         microseconds), so each target's delay is corrected
#                         once from a measurement.  proxy_calib_secs (2)
#                         seconds per measurement.

proxy_pid=""
proxy_cpu=0
proxy_calib_secs=${proxy_calib_secs:-2}
declare -A one_way measured

proxy_build() {
  proxy_dir=$1
  cc -O2 -Wall -Wextra -o "$proxy_dir/delay-proxy" "$sb_top/bench/delay-proxy.c" ||
    fail "could not build the delay proxy"
  sb_at_exit proxy_stop
}

# Stops the proxy (in this shell, which started it) and sets proxy_cpu.
proxy_stop() {
  proxy_cpu=0
  [ -n "$proxy_pid" ] || return 0
  kill -TERM "$proxy_pid" 2>/dev/null || true
  wait "$proxy_pid" 2>/dev/null || true
  proxy_pid=""
  proxy_cpu=$(awk '/^delay-proxy: [0-9.]+ s user/ { printf "%.2f\n", $2 + $5 }' "$proxy_dir/proxy.err")
  proxy_cpu=${proxy_cpu:-0}
}

proxy_start() {
  local us=$1 up=$2
  shift 2
  "$proxy_dir/delay-proxy" "$proxy_port" "$up" "$us" 2>"$proxy_dir/proxy.err" &
  proxy_pid=$!
  for _ in $(seq 1 50); do
    kill -0 "$proxy_pid" 2>/dev/null || fail "the delay proxy exited: $(cat "$proxy_dir/proxy.err")"
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "the delay proxy did not start on port $proxy_port"
}

proxy_calibrate() {
  local db=$1 t ow l
  shift
  local upstream="$PGHOST/.s.PGSQL.${PGPORT:-5432}"
  echo 'SELECT 1;' >"$proxy_dir/select1.sql"
  _proxy_lat_at() { # one-way us -> mean latency ms
    proxy_start "$1" "$upstream" psql -X -At -h 127.0.0.1 -p "$proxy_port" -d "$db" -c "SELECT 1"
    pgbench -n -M prepared -c 1 -T "$proxy_calib_secs" -h 127.0.0.1 -p "$proxy_port" \
      -f "$proxy_dir/select1.sql" "$db" 2>&1 | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p'
    proxy_stop
  }
  proxy_base=$(_proxy_lat_at 0)
  [ -n "$proxy_base" ] || fail "no latency through the proxy"
  for t in "$@"; do
    if awk -v t="$t" 'BEGIN { exit !(t == 0) }'; then
      one_way[$t]=0 measured[$t]=0
      continue
    fi
    ow=$(awk -v t="$t" 'BEGIN { printf "%d", t * 500 }')
    l=$(_proxy_lat_at "$ow")
    [ -n "$l" ] || fail "no latency through the proxy at $ow us"
    ow=$(awk -v t="$t" -v ow="$ow" -v l="$l" -v b="$proxy_base" \
      'BEGIN { x = ow - ((l - b) - t) * 500; if (x < 0) x = 0; printf "%d", x }')
    l=$(_proxy_lat_at "$ow")
    [ -n "$l" ] || fail "no latency through the proxy at $ow us"
    one_way[$t]=$ow
    measured[$t]=$(awk -v l="$l" -v b="$proxy_base" 'BEGIN { printf "%.3f", l - b }')
    say "round trip $t ms: one-way delay ${ow} us, measured ${measured[$t]} ms added (SELECT 1 at 1 client: $l ms, $proxy_base ms at 0)"
  done
}

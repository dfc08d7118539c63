#!/usr/bin/env bash
# test/memory/run.sh: memory safety of sandbox_store under AddressSanitizer
# and UndefinedBehaviorSanitizer.
#
#   test/scripts/with-cluster.sh test/memory/run.sh     (or as root: test/memory/run.sh)
#   test/memory/run.sh                                  (as a user initdb accepts)
#
# The system's installed extension is never touched:
#   1. builds the extension with -fsanitize=address,undefined from a copy of
#      src/ and sql/ in a temporary directory;
#   2. makes a private copy of the server's installation (bindir, sharedir,
#      pkglibdir, same layout, so the copied postgres finds its own share and
#      lib directories) and installs the sanitizer build into it (DESTDIR);
#   3. initdb's a throwaway cluster and starts that postgres with libasan
#      preloaded (the server itself is not instrumented; the runtime must be
#      loaded first), and asan_shim.c (without it the runtime hangs the
#      server at startup on Debian 12: see there); AddressSanitizer reports
#      go to files (log_path), UndefinedBehaviorSanitizer's to the server log;
#   4. proves the harness sees reports: a canary module (canary.c, built the
#      same way) commits a signed overflow and a heap overflow; both reports
#      must appear (they are then set aside), and a backend must have the
#      sanitizer build of sandbox_store.so mapped;
#   5. runs the regression and isolation suites (make regresscheck
#      isolationcheck) against that server, then the fuzzer of
#      test/fuzz/fuzz.sql (two workers, SB_MEMCHECK_FUZZ_CALLS calls each,
#      while a third session holds and claims keys), then
#      test/memory/growth.sh with SB_MEMCHECK_GROWTH_CALLS calls (default
#      100000; growth.sh's own default is 1,000,000);
#   6. fails if any suite fails, the server log shows a backend terminated by
#      a signal, or any AddressSanitizer or UndefinedBehaviorSanitizer report
#      was written (all are printed).
#
# Under with-cluster.sh the cluster it starts is not used: this script
# needs a server of its own.  SB_MEMCHECK_KEEP=1 keeps the work directory.
# As root it runs as postgres on a copy of the tree (lib.sh's sb_as_postgres),
# and the cluster is lib.sh's too (sb_cluster_init, then a postgres started
# here with the runtime preloaded).
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../scripts/lib.sh"
sb_name=memcheck
top=$sb_top
sb_as_postgres "$@"
sb_use_pg

fuzz_calls=${SB_MEMCHECK_FUZZ_CALLS:-3000}
growth_calls=${SB_MEMCHECK_GROWTH_CALLS:-100000}
seed=${SB_FUZZ_SEED:-20261129}
sanitize=('-fsanitize=address,undefined' -fno-omit-frame-pointer -fno-sanitize-recover=address)

bindir=$("$PG_CONFIG" --bindir)
sharedir=$("$PG_CONFIG" --sharedir)
pkglibdir=$("$PG_CONFIG" --pkglibdir)
includedir_server=$("$PG_CONFIG" --includedir-server)

sb_keep=${SB_MEMCHECK_KEEP:-}
sb_tempdir sb_memcheck; work=$sb_dir
inst=$work/inst
holder_pid=
kill_holder() { if [ -n "$holder_pid" ]; then kill "$holder_pid" 2>/dev/null || true; fi; }
sb_at_exit kill_holder
failures=()

# 1. The sanitizer build, out of the source tree.
say "building sandbox_store with ${sanitize[*]}"
# (the Makefile includes test/test.mk and bench/bench.mk)
mkdir -p "$work/build"
(cd "$top" && tar cf - Makefile sandbox_store.control META.json src test/test.mk test/sql-edition.mk bench/bench.mk release/release.mk) | tar xf - -C "$work/build"
rm -f "$work/build"/src/*.o "$work/build"/src/*.bc "$work/build"/*.so
make -C "$work/build" -s PG_CONFIG="$PG_CONFIG" with_llvm=no COPT="${sanitize[*]}" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "the sanitizer build failed"; }

# 2. A private installation with that build in it.
mkdir -p "$inst$bindir" "$inst$sharedir" "$inst$pkglibdir"
cp -a "$bindir/." "$inst$bindir/"
cp -a "$sharedir/." "$inst$sharedir/"
cp -a "$pkglibdir/." "$inst$pkglibdir/"
make -C "$work/build" -s PG_CONFIG="$PG_CONFIG" with_llvm=no COPT="${sanitize[*]}" DESTDIR="$inst" install \
  >>"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; fail "the sanitizer build did not install"; }
module=$inst$pkglibdir/sandbox_store.so
libasan=$(ldd "$module" | awk '/libasan/ { print $3 }')
if [ -z "$libasan" ] || [ ! -e "$libasan" ]; then fail "$module does not link libasan"; fi
gcc "${sanitize[@]}" -O1 -g -fPIC -shared -I "$includedir_server" -o "$work/canary.so" "$top/test/memory/canary.c"
gcc -O2 -fPIC -shared -nostdlib -o "$work/asan_shim.so" "$top/test/memory/asan_shim.c"

# 3. The server, with the sanitizer runtime preloaded: a cluster of the
# private installation's initdb, its postgres started here, not by pg_ctl
# (the runtime is for the server only).
sb_bindir=$inst$bindir
sb_cluster_init "$work" "max_connections = 50" "autovacuum_naptime = 1s"
sb_cluster_env "$work"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1:allocator_may_return_null=1:log_path=$work/asan"
LD_PRELOAD="$libasan $work/asan_shim.so" "$sb_bindir/postgres" -D "$work/data" >"$work/server.log" 2>&1 &
server_pid=$!
unset ASAN_OPTIONS
for _ in $(seq 1 100); do
  pg_isready -q && break
  sleep 0.2
done
pg_isready -q || { cat "$work/server.log" >&2; fail "the server did not start"; }
say "server $server_pid up (postgres of $sb_bindir, $libasan preloaded)"

# 4. The harness sees reports, and the sanitizer build is what runs.
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE sb_canary" >/dev/null
psql -X -q -d sb_canary -v ON_ERROR_STOP=1 \
  -c "CREATE FUNCTION sb_memcheck_canary(int) RETURNS int AS '$work/canary.so' LANGUAGE C STRICT" >/dev/null
psql -X -q -d sb_canary -c 'SELECT sb_memcheck_canary(1)' >/dev/null 2>&1 || true
psql -X -q -d sb_canary -c 'SELECT sb_memcheck_canary(2)' >/dev/null 2>&1 || true
sleep 0.5
mkdir -p "$work/canary-reports"
canary_ubsan=0 canary_asan=0
grep -q 'canary.c:.*runtime error: signed integer overflow' "$work/server.log" && canary_ubsan=1
for f in "$work"/asan.*; do
  [ -e "$f" ] || continue
  if grep -q 'canary.c' "$f"; then
    grep -q 'ERROR: AddressSanitizer: heap-buffer-overflow' "$f" && canary_asan=1
    mv "$f" "$work/canary-reports/"
  fi
done
if [ $canary_ubsan = 1 ] && [ $canary_asan = 1 ]; then
  say "canary: the signed overflow and the heap overflow were both reported"
else
  ls -l "$work" >&2
  fail "the canary's reports did not appear (ubsan $canary_ubsan, asan $canary_asan): the harness is blind"
fi
psql -X -q -c "DROP DATABASE sb_canary" >/dev/null
maps=$(psql -X -At -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION sandbox_store' \
  -c "SELECT sandbox_store.sandbox_lock_id('x') IS NOT NULL" -c "SELECT pg_read_file('/proc/self/maps')" \
  -c 'DROP EXTENSION sandbox_store')
if grep -qF "$module" <<<"$maps" && grep -q libasan <<<"$maps"; then
  say "a backend maps $module and libasan"
else
  fail "the backend does not run the sanitizer build"
fi

# 5. The suites.
cd "$top"
run() {
  local name=$1
  shift
  say "=== $name: $*"
  local start=$SECONDS
  if "$@"; then
    say "=== $name: ok ($((SECONDS - start)) s)"
  else
    say "=== $name: FAILED ($((SECONDS - start)) s)"
    failures+=("$name")
    for f in regression.diffs output_iso/regression.diffs; do
      if [ -s "$f" ]; then echo "--- $f"; head -200 "$f"; fi
    done
  fi
}
run regress make --no-print-directory PG_CONFIG="$PG_CONFIG" regresscheck
# Some specs depend on timing (a waiter polling a claim holds the key's lock
# for an instant; a step that arrives then shows as waiting), and the
# sanitizer build is slower: a failed spec gets one more run of its own.
isolation() {
  make --no-print-directory PG_CONFIG="$PG_CONFIG" isolationcheck && return 0
  local failed
  failed=$(grep -E '^(not ok|test ).*FAILED' output_iso/regression.out 2>/dev/null | awk '{ print $2 }' | tr '\n' ' ')
  [ -n "$failed" ] || failed=$(sed -n 's/^test \([^ ]*\) .*FAILED.*/\1/p' output_iso/regression.out | tr '\n' ' ')
  [ -n "$failed" ] || return 1
  say "isolation: $failed failed (diff above); running it again on its own"
  [ -s output_iso/regression.diffs ] && cat output_iso/regression.diffs
  make --no-print-directory PG_CONFIG="$PG_CONFIG" isolationcheck ISOLATION="$failed"
}
run isolation isolation

fuzz() {
  psql -X -q -v ON_ERROR_STOP=1 -d postgres -c 'CREATE EXTENSION IF NOT EXISTS sandbox_store' -f test/fuzz/fuzz.sql \
    -c "ALTER ROLE sbfuzz_app SET lock_timeout = '20ms'" >/dev/null
  local app="dbname=postgres user=sbfuzz_app"
  psql -X -q -d "$app" -c "SELECT sandbox_store.sandbox_upsert(k, 'e2b', 'sbx', 't') FROM unnest(ARRAY['k1', 'k2', 'k3', 'busy-1', 'busy-2', 'busy-3', 'claimed-1', 'claimed-2']) k" \
    -c "SELECT FROM sandbox_store.sandbox_ensure('claimed-1', 'holder', lease => '1 hour')" \
    -c "SELECT FROM sandbox_store.sandbox_ensure('claimed-2', 'holder', lease => '1 hour')" >/dev/null
  psql -X -q -d "$app" -c "BEGIN" -c "SELECT sandbox_store.sandbox_lock('busy-1'), sandbox_store.sandbox_lock('busy-2')" \
    -c "SELECT FROM sandbox_store.sandbox_ensure('busy-3', 'holder')" -c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
  holder_pid=$!
  local w1 w2 rc=0
  psql -X -q -d "$app" -c "CALL sbfuzz.run(1, $seed, $fuzz_calls, 60)" >/dev/null 2>"$work/fuzz1.err" &
  w1=$!
  psql -X -q -d "$app" -c "CALL sbfuzz.run(2, $seed, $fuzz_calls, 60)" >/dev/null 2>"$work/fuzz2.err" &
  w2=$!
  wait $w1 || rc=1
  wait $w2 || rc=1
  kill "$holder_pid" 2>/dev/null || true
  wait "$holder_pid" 2>/dev/null || true
  holder_pid=
  psql -X -At -c "SELECT 'worker ' || worker || ': ' || calls || ' calls in ' || seconds || ' s, '
                          || jsonb_array_length(bad) || ' outcomes 008_fuzz.pl would flag'
                     FROM sbfuzz.report ORDER BY worker"
  [ $rc = 0 ] || { cat "$work"/fuzz*.err | grep -v NOTICE | tail -5; return 1; }
}
run fuzz fuzz
run growth env SB_GROWTH_CALLS="$growth_calls" test/memory/growth.sh

# 6. What the sanitizers and the server said.
if sb_cluster_crashed "$work"; then
  failures+=("a backend crashed (server log above)")
fi
# AddressSanitizer writes asan.<pid> files; UndefinedBehaviorSanitizer writes
# to the server log ("runtime error:", then a stack trace).
reports=$(find "$work" -maxdepth 1 -name 'asan.*' | sort)
ubsan=$(grep -c 'runtime error:' "$work/server.log" || true)
ubsan=$((ubsan - canary_ubsan))
if [ -n "$reports" ]; then
  for f in $reports; do
    echo "----- $f"
    cat "$f"
  done
  failures+=("$(wc -l <<<"$reports") AddressSanitizer report(s)")
fi
if [ "$ubsan" -gt 0 ]; then
  echo "----- UndefinedBehaviorSanitizer, from $work/server.log"
  grep -v 'canary.c' "$work/server.log" | grep -A 25 'runtime error:'
  failures+=("$ubsan UndefinedBehaviorSanitizer report(s)")
fi
if [ -z "$reports" ] && [ "$ubsan" -le 0 ]; then
  say "no AddressSanitizer or UndefinedBehaviorSanitizer report"
fi

if [ ${#failures[@]} -gt 0 ]; then
  say "FAILED: ${failures[*]}"
  sb_keep=1
  exit 1
fi
say "ok"

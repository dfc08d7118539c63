#!/usr/bin/env bash
# Run every test suite against the cluster in PGHOST/PGPORT (see
# with-cluster.sh), go on past a failing suite, print what failed and a
# closing "N passed, N failed" line; exit non-zero if any suite failed.
set -uo pipefail

suites=(
  "lint:make --no-print-directory lint"
  "regress:make --no-print-directory regresscheck"
  "isolation:make --no-print-directory isolationcheck"
  "pgtap:make --no-print-directory pgtapcheck"
  "stress:make --no-print-directory stresscheck"
  "citus:make --no-print-directory citus-check"
  "tap:make --no-print-directory tapcheck"
  "client:make --no-print-directory clientcheck"
  "deb:test/scripts/release-test.sh deb"
  "pgxn:test/scripts/release-test.sh pgxn"
  "bench-smoke:env BENCH_SMOKE=1 bench/run.sh"
  "growth:make --no-print-directory growthcheck"
  "memory:make --no-print-directory memcheck"
)

passed=0 failed=0 failures=()
for entry in "${suites[@]}"; do
  name=${entry%%:*} cmd=${entry#*:}
  echo "=== suite $name: $cmd"
  start=$SECONDS
  if $cmd; then
    passed=$((passed + 1)); echo "=== suite $name: ok ($((SECONDS - start))s)"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "=== suite $name: FAILED ($((SECONDS - start))s)"
    for f in regression.diffs output_iso/regression.diffs; do
      [ -s "$f" ] && { echo "--- $f"; cat "$f"; }
    done
    # Later TAP suites start by removing tmp_check: keep this one's logs.
    [ -d tmp_check/log ] && cp -r tmp_check/log "log_of_failed_$name" &&
      echo "--- TAP logs kept in $(pwd)/log_of_failed_$name"
  fi
done

[ ${#failures[@]} -eq 0 ] || echo "failed suites: ${failures[*]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

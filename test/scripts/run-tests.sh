#!/usr/bin/env bash
# Run every test suite against the cluster in PGHOST/PGPORT (see
# with-cluster.sh), and the SQL edition's against clusters of their own (see
# with-sql-edition.sh), go on past a failing suite, print what failed and a
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
  # The SQL edition, as a non-superuser, on a cluster of its own
  # (with-sql-edition.sh; test/sql-edition.mk says what each leaves out).
  "pg_tle-regress:test/scripts/with-sql-edition.sh pg_tle make --no-print-directory regresscheck"
  "pg_tle-isolation:test/scripts/with-sql-edition.sh pg_tle make --no-print-directory isolationcheck"
  "pg_tle-pgtap:test/scripts/with-sql-edition.sh pg_tle make --no-print-directory pgtapcheck"
  "pg_tle-tap:test/scripts/with-sql-edition.sh pg_tle make --no-print-directory tapcheck"
  "pg_tle-client:test/scripts/with-sql-edition.sh pg_tle make --no-print-directory clientcheck"
  "plain-regress:test/scripts/with-sql-edition.sh plain make --no-print-directory regresscheck"
  "plain-isolation:test/scripts/with-sql-edition.sh plain make --no-print-directory isolationcheck"
  "plain-pgtap:test/scripts/with-sql-edition.sh plain make --no-print-directory pgtapcheck"
  "bench-smoke:env BENCH_SMOKE=1 bench/run.sh"
  "growth:make --no-print-directory growthcheck"
  "memory:make --no-print-directory memcheck"
)

passed=0 failed=0 failures=()
for entry in "${suites[@]}"; do
  name=${entry%%:*} cmd=${entry#*:}
  if [ -n "${SB_DRY_RUN:-}" ]; then
    # shellcheck disable=SC2086  # the command as the loop below runs it
    printf '%s:' "$name"; printf ' %q' $cmd; echo; continue
  fi
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

[ -z "${SB_DRY_RUN:-}" ] || exit 0
[ ${#failures[@]} -eq 0 ] || echo "failed suites: ${failures[*]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

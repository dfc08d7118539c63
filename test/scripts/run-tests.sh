#!/usr/bin/env bash
# Run every suite of make test's run on the server of PG_CONFIG (those of
# test/scripts/suites.sh that include "root", in its order) against the
# cluster in PGHOST/PGPORT (see with-cluster.sh), and the SQL edition's
# against clusters of their own (see with-sql-edition.sh); go on past a
# failing suite, print what failed and a closing "N passed, N failed" line;
# exit non-zero if any suite failed.
#
#   SB_SUITES   a space-separated list of suite names: only those
#   SB_DRY_RUN  set: print each suite ("NAME: COMMAND"), run nothing
set -uo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=test/scripts/suites.sh
. "$sb_top/test/scripts/suites.sh"

sb_suites root
if [ -n "${SB_DRY_RUN:-}" ]; then
  for i in "${sb_plan[@]}"; do sb_suite_line "$i"; done
  exit 0
fi

passed=0 failed=0 failures=()
for i in "${sb_plan[@]}"; do
  name=$(sb_suite_name "$i")
  sb_suite_cmd "$i"
  echo "=== suite $name: ${sb_cmd[*]}"
  start=$SECONDS
  if "${sb_cmd[@]}"; then
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

#!/usr/bin/env bash
# version-suites.sh: the suites make matrix runs on each PostgreSQL version
# (those of test/scripts/suites.sh that include "version", and with SB_CITUS
# set, the Citus version matrix.sh installed into this server, those of
# "version-citus"), against the cluster in PGHOST/PGPORT (see
# with-cluster.sh) and the server of PG_CONFIG.  Goes on past a failing
# suite; exits non-zero if any failed.  SB_SUITES and SB_DRY_RUN as in
# run-tests.sh.
set -uo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=test/scripts/suites.sh
. "$sb_top/test/scripts/suites.sh"

sb_suites "version${SB_CITUS:+ version-citus}"
plan=("${sb_plan[@]}")
if [ -n "${SB_DRY_RUN:-}" ]; then
  for i in "${plan[@]}"; do sb_suite_line "$i"; done
  exit 0
fi

failed=()
for i in "${plan[@]}"; do
  name=$(sb_suite_name "$i")
  sb_suite_cmd "$i"
  start=$SECONDS
  if "${sb_cmd[@]}"; then
    echo "version-suites: $name ok ($((SECONDS - start)) s)"
  else
    echo "version-suites: $name FAILED ($((SECONDS - start)) s)"
    failed+=("$name")
    for f in regression.diffs output_iso/regression.diffs; do
      [ -s "$f" ] && { echo "--- $f"; cat "$f"; }
    done
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "version-suites: failed: ${failed[*]}"; exit 1; }

#!/usr/bin/env bash
# version-suites.sh: the suites make matrix runs on each PostgreSQL version,
# against the cluster in PGHOST/PGPORT (see with-cluster.sh) and the server
# of PG_CONFIG: pg_regress, isolation, pgTAP, and the Perl TAP tests that
# need no package beyond the server (005 needs pgbouncer and 008 sqlsmith;
# make test runs both on 15), and with SB_CITUS set (the Citus version
# matrix.sh installed into this server) the citus suite.  Goes on past a
# failing suite; exits non-zero if any failed.
set -uo pipefail

tap=()
for t in test/t/*.pl; do
  case $t in
  */005_pgbouncer.pl | */008_fuzz.pl) ;;
  *) tap+=("$t") ;;
  esac
done

suites=(regresscheck isolationcheck pgtapcheck tapcheck)
[ -z "${SB_CITUS:-}" ] || suites+=(citus-check)

failed=()
for name in "${suites[@]}"; do
  start=$SECONDS
  args=()
  [ "$name" = tapcheck ] && args=(PROVE_TESTS="${tap[*]}")
  if [ -n "${SB_DRY_RUN:-}" ]; then
    label=${name%-check}; label=${label%check}
    printf '%s:' "$label"; printf ' %q' make --no-print-directory "$name" "${args[@]}"; echo; continue
  fi
  if make --no-print-directory "$name" "${args[@]}"; then
    echo "version-suites: $name ok ($((SECONDS - start)) s)"
  else
    echo "version-suites: $name FAILED ($((SECONDS - start)) s)"
    failed+=("$name")
    for f in regression.diffs output_iso/regression.diffs; do
      [ -s "$f" ] && { echo "--- $f"; cat "$f"; }
    done
  fi
done
[ -z "${SB_DRY_RUN:-}" ] || exit 0
[ ${#failed[@]} -eq 0 ] || { echo "version-suites: failed: ${failed[*]}"; exit 1; }

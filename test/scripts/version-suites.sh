#!/usr/bin/env bash
# version-suites.sh: the suites make matrix runs on each PostgreSQL version,
# against the cluster in PGHOST/PGPORT (see with-cluster.sh) and the server
# of PG_CONFIG: pg_regress, isolation, pgTAP, and the Perl TAP tests that
# need no package beyond the server (005 needs pgbouncer and 008 sqlsmith;
# make test runs both on 15).  Goes on past a failing suite; exits non-zero
# if any failed.
set -uo pipefail

tap=()
for t in test/t/*.pl; do
  case $t in
  */005_pgbouncer.pl | */008_fuzz.pl) ;;
  *) tap+=("$t") ;;
  esac
done

failed=()
for name in regresscheck isolationcheck pgtapcheck tapcheck; do
  start=$SECONDS
  if make --no-print-directory "$name" PROVE_TESTS="${tap[*]}"; then
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

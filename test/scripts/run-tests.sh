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
# (The loop is suites.sh's, shared with version-suites.sh.)
sb_run_suites --start '=== suite %s: %s' --ok '=== suite %s: ok (%ss)' --failed '=== suite %s: FAILED (%ss)' \
  --keep-tap-logs --failures 'failed suites: %s' --totals 'suites: %s passed, %s failed'

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
# (The loop is suites.sh's, shared with run-tests.sh.)
sb_run_suites --ok 'version-suites: %s ok (%s s)' --failed 'version-suites: %s FAILED (%s s)' \
  --failures 'version-suites: failed: %s'

#!/usr/bin/env bash
# with-cluster.sh COMMAND [ARG...]
#
# Run COMMAND (from the top of the source tree) against a throwaway
# PostgreSQL cluster: initdb into a temporary directory, start it on a
# private Unix socket (no TCP port, so nothing collides with another server),
# export PGHOST/PGPORT/PGUSER/PGDATABASE, put the bindir of PG_CONFIG first in
# PATH, run the command, stop and remove the cluster.  Fails if the server
# log shows a backend killed by a signal or a PANIC.  The command also gets
# SB_CLUSTER_DIR (the cluster's directory, for lib.sh's sb_cluster_restart)
# and SB_SERVER_LOG (its log).
#
# initdb refuses to run as root, so as root the script copies the tree to a
# temporary directory owned by the postgres user and runs there as postgres
# (the copy is kept, and named, if the command fails).  The extension must
# already be installed (make install).  Clusters, messages and the root
# re-run come from lib.sh.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
sb_name=with-cluster

sb_as_postgres "$@"
sb_use_pg
sb_tempdir sandbox_store_pg; dir=$sb_dir
sb_cluster_init "$dir" "max_connections = 100"
export SB_CLUSTER_DIR=$dir SB_SERVER_LOG=$dir/server.log
sb_cluster_env "$dir"
sb_cluster_start "$dir"

cd "$sb_top"
rc=0
"$@" || rc=$?

if sb_cluster_crashed "$dir"; then
  warn "a backend crashed (server log above)"
  rc=1
fi
exit $rc

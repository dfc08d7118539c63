#!/usr/bin/env bash
# with-cluster.sh COMMAND [ARG...]
#
# Run COMMAND (from the top of the source tree) against a throwaway
# PostgreSQL cluster: initdb into a temporary directory, start it on a
# private Unix socket (no TCP port, so nothing collides with another server),
# export PGHOST/PGPORT/PGUSER/PGDATABASE, run the command, stop and remove
# the cluster.  Fails if the server log shows a backend killed by a signal.
#
# initdb refuses to run as root, so as root the script copies the tree to a
# temporary directory owned by the postgres user and runs there as postgres.
# The extension must already be installed (make install).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
bindir=$("$PG_CONFIG" --bindir)

if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || { echo "with-cluster: no postgres user (install postgresql-15)" >&2; exit 1; }
  copy=$(mktemp -d /tmp/sandbox_store_run.XXXXXX)
  cp -a "$top/." "$copy/"
  chown -R postgres: "$copy"
  rc=0
  runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" PATH="/usr/local/bin:/usr/bin:/bin" \
    ${CI:+CI="$CI"} "$copy/test/scripts/with-cluster.sh" "$@" || rc=$?
  if [ $rc -eq 0 ]; then rm -rf "$copy"; else echo "with-cluster: failed (exit $rc); outputs kept in $copy" >&2; fi
  exit $rc
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/sandbox_store_pg.XXXXXX")
export PGHOST=$dir PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
export SB_SERVER_LOG=$dir/server.log
cleanup() {
  "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

"$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
  --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
port = 5432
max_connections = 100
fsync = off
log_line_prefix = '%m [%p] %q%a '
CONF
"$bindir/pg_ctl" -D "$dir/data" -l "$SB_SERVER_LOG" -w start >/dev/null

cd "$top"
rc=0
"$@" || rc=$?

if grep -E "terminated by signal|was terminated by exception" "$SB_SERVER_LOG"; then
  echo "with-cluster: a backend crashed (server log above)" >&2
  rc=1
fi
exit $rc

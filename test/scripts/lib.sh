# shellcheck shell=bash
# test/scripts/lib.sh: what the harness's shell scripts share (bash; sourced,
# never run).  A script sources it from wherever it lives, e.g.
#
#   . "$(dirname "$0")/../scripts/lib.sh"          (from test/stress/)
#   . "$(dirname "$0")/../test/scripts/lib.sh"     (from bench/)
#   sb_name=stress                                 (the prefix of its messages)
#
# and may then use:
#
#   messages   say MSG (stdout) and warn MSG (stderr) print "NAME: MSG";
#              fail MSG prints "NAME: FAIL: MSG" to stderr and exits 1.
#              sb_name is the script's prefix (default: its file name without
#              .sh; empty: no prefix); sb_fail the word before a failure
#              ("FAIL"; with an empty sb_name the whole lead-in).
#   at exit    sb_at_exit CMD [ARG...] runs CMD when the script exits, the
#              last registered first, and keeps the script's exit status.
#              The lib installs the EXIT trap: a script that sources it sets
#              no EXIT trap of its own.
#              sb_tempdir PREFIX: a new directory ${TMPDIR:-/tmp}/PREFIX.XXXXXX
#              in sb_dir, removed at exit (kept, and named, if sb_keep is set
#              by then).  sb_quiet CMD [ARG...]: CMD without output, never failing.
#   databases  sb_create_db DB: drop DB if it exists and create it, as the
#              superuser of PGHOST/PGPORT/PGUSER; sb_drop_db DB...: drop, at
#              most warn; sb_fresh_db DB: sb_create_db now, sb_drop_db at exit.
#   as root    sb_as_postgres [ARG...]: as root (initdb refuses root), copy
#              the tree to ${TMPDIR:-/tmp}/sandbox_store_run.XXXXXX, owned by postgres,
#              run this same script of the copy as postgres with ARGs, and
#              exit with its status (the copy is removed, or kept and named
#              if the script failed); as anyone else, return.  If set,
#              sb_results_from (a directory of the copy, relative to its
#              top) is first copied into sb_results_to.
#   cache      sb_pg_cache: sb_cache becomes the directory where servers and
#              Citus are built once per machine (SB_PG_CACHE, else
#              /var/cache/sandbox_store when writable, else
#              ~/.cache/sandbox_store), created if missing.
#              sb_cache_lock NAME: wait for and hold, until the script exits,
#              the lock of NAME in sb_cache (one build of a thing at a time:
#              make test builds the matrix's servers in the background while
#              the matrix may ask for the same one).
#   tree       sb_copy_tree DEST: copy the source tree to DEST without .git,
#              build and test outputs or the TypeScript client's
#              node_modules and dist (to build it for another server).
#   PostgreSQL sb_use_pg: PG_CONFIG becomes the absolute path of
#              ${PG_CONFIG:-pg_config}, sb_bindir its --bindir, which is put
#              first in PATH (psql, pgbench, pg_isready of that server).  Every
#              PostgreSQL path comes from PG_CONFIG; none is written out.
#   clusters   a throwaway cluster lives in a directory DIR: data in DIR/data,
#              its Unix socket in DIR, its log in DIR/server.log.
#              sb_cluster_init DIR [--port N] [--tcp ADDRESSES] [CONF-LINE...]:
#                initdb (the one of sb_bindir; superuser postgres, trust,
#                UTF8, C.UTF-8, no sync), then postgresql.conf: no TCP (unless
#                --tcp, e.g. 127.0.0.1), socket in DIR, port N (5432),
#                fsync off, a log_line_prefix, then each CONF-LINE (a later
#                line overrides an earlier one).  The cluster is stopped
#                (immediate) at exit.
#              sb_cluster_start DIR, sb_cluster_restart DIR (fast),
#              sb_cluster_stop DIR [MODE] (immediate, never fails; another
#                mode waits and fails if the server does not stop),
#              sb_cluster_env DIR [PORT]: export PGHOST, PGPORT, PGUSER and
#                PGDATABASE for it,
#              sb_cluster_crashed DIR: true (and prints the lines) if its
#                log shows a backend killed by a signal or a PANIC.

[ -n "${BASH_VERSION:-}" ] || { echo "lib.sh: needs bash" >&2; exit 1; }

sb_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
sb_self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
sb_name=$(basename "$0" .sh)
sb_fail=FAIL
sb_keep=
sb_exit_cmds=()

# --- messages -------------------------------------------------------------------

say() { printf '%s\n' "${sb_name:+$sb_name: }$*"; }
warn() { printf '%s\n' "${sb_name:+$sb_name: }$*" >&2; }
fail() {
  warn "${sb_fail:+$sb_fail: }$*"
  exit 1
}

# --- at exit --------------------------------------------------------------------

sb_at_exit() { sb_exit_cmds+=("$(printf '%q ' "$@")"); }
sb_on_exit() {
  local rc=$? i
  for ((i = ${#sb_exit_cmds[@]} - 1; i >= 0; i--)); do
    eval "${sb_exit_cmds[i]}" || true
  done
  exit "$rc"
}
trap sb_on_exit EXIT

sb_remove_dir() {
  if [ -n "$sb_keep" ]; then say "work directory kept: $1"; else rm -rf "$1"; fi
}
sb_tempdir() {
  sb_dir=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || fail "could not create a directory in ${TMPDIR:-/tmp}"
  sb_at_exit sb_remove_dir "$sb_dir"
}
sb_quiet() { "$@" >/dev/null 2>&1 || true; }

# --- databases ------------------------------------------------------------------

sb_create_db() {
  psql -X -q -v ON_ERROR_STOP=1 -d postgres -v db="$1" <<'SQL'
SET client_min_messages = warning;
DROP DATABASE IF EXISTS :"db";
CREATE DATABASE :"db";
SQL
}
sb_drop_db() {
  local db
  for db in "$@"; do
    psql -X -q -d postgres -v db="$db" >/dev/null 2>&1 <<<'DROP DATABASE IF EXISTS :"db";' ||
      warn "could not drop database $db"
  done
}
sb_fresh_db() {
  sb_create_db "$1"
  sb_at_exit sb_drop_db "$1"
}

# --- as root: the same script as postgres, on a copy of the tree ------------------

sb_as_postgres() {
  [ "$(id -u)" = 0 ] || return 0
  id postgres >/dev/null 2>&1 || fail "no postgres user (install postgresql-15)"
  local pgc copy rc=0
  pgc=$(command -v "${PG_CONFIG:-pg_config}") || fail "${PG_CONFIG:-pg_config} not found"
  copy=$(mktemp -d "${TMPDIR:-/tmp}/sandbox_store_run.XXXXXX")
  cp -a "$sb_top/." "$copy/"
  chown -R postgres: "$copy"
  # The environment passes through (runuser keeps it), but for PATH: root's
  # may hold directories postgres cannot read.
  runuser -u postgres -- env PG_CONFIG="$pgc" PATH="/usr/local/bin:/usr/bin:/bin" \
    "$copy/${sb_self#"$sb_top"/}" "$@" || rc=$?
  if [ -n "${sb_results_from:-}" ] && [ -d "$copy/$sb_results_from" ]; then
    mkdir -p "${sb_results_to:?}"
    cp -a "$copy/$sb_results_from/." "$sb_results_to/"
  fi
  if [ $rc -eq 0 ]; then rm -rf "$copy"; else warn "failed (exit $rc); outputs kept in $copy"; fi
  exit $rc
}

# --- the build cache and copies of the tree ------------------------------------

sb_pg_cache() {
  if [ -n "${SB_PG_CACHE:-}" ]; then
    sb_cache=$SB_PG_CACHE
  elif mkdir -p /var/cache/sandbox_store 2>/dev/null && [ -w /var/cache/sandbox_store ]; then
    sb_cache=/var/cache/sandbox_store
  else
    sb_cache=$HOME/.cache/sandbox_store
  fi
  mkdir -p "$sb_cache" || fail "could not create $sb_cache"
}
sb_cache_lock() {
  exec 9>>"$sb_cache/$1.lock" || fail "could not open $sb_cache/$1.lock"
  flock 9 || fail "could not lock $sb_cache/$1.lock"
}
sb_copy_tree() {
  mkdir -p "$1"
  (cd "$sb_top" && tar cf - --exclude=./.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
    --exclude=./results --exclude=./output_iso --exclude=./tmp_check \
    --exclude=./clients/typescript/node_modules --exclude=./clients/typescript/dist .) |
    tar xf - -C "$1"
}

# --- PostgreSQL -----------------------------------------------------------------

sb_use_pg() {
  PG_CONFIG=$(command -v "${PG_CONFIG:-pg_config}") || fail "${PG_CONFIG:-pg_config} not found"
  export PG_CONFIG
  sb_bindir=$("$PG_CONFIG" --bindir)
  export PATH="$sb_bindir:$PATH"
}

# --- throwaway clusters -----------------------------------------------------------

sb_cluster_init() {
  local dir=$1 port=5432 listen=
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --port) port=$2; shift 2 ;;
      --tcp) listen=$2; shift 2 ;;
      *) break ;;
    esac
  done
  [ -n "${sb_bindir:-}" ] || sb_use_pg
  mkdir -p "$dir"
  sb_at_exit sb_cluster_stop "$dir"
  "$sb_bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; fail "initdb of $dir/data failed"; }
  {
    echo "listen_addresses = '$listen'"
    echo "unix_socket_directories = '$dir'"
    echo "port = $port"
    echo "fsync = off"
    echo "log_line_prefix = '%m [%p] %q%a '"
    if [ $# -gt 0 ]; then printf '%s\n' "$@"; fi
  } >>"$dir/data/postgresql.conf"
}
sb_cluster_start() {
  "$sb_bindir/pg_ctl" -D "$1/data" -l "$1/server.log" -w start >/dev/null ||
    { tail -n 20 "$1/server.log" >&2; fail "the server of $1 did not start"; }
}
sb_cluster_restart() {
  "$sb_bindir/pg_ctl" -D "$1/data" -l "$1/server.log" -w -m fast restart >/dev/null ||
    { tail -n 20 "$1/server.log" >&2; fail "the server of $1 did not restart"; }
}
sb_cluster_stop() {
  if [ "${2:-immediate}" = immediate ]; then
    "$sb_bindir/pg_ctl" -D "$1/data" -m immediate stop >/dev/null 2>&1 || true
  else
    "$sb_bindir/pg_ctl" -D "$1/data" -m "$2" -w stop >/dev/null || fail "the server of $1 did not stop"
  fi
}
sb_cluster_env() {
  export PGHOST=$1 PGPORT=${2:-5432} PGUSER=postgres PGDATABASE=postgres
}
sb_cluster_crashed() {
  grep -E "terminated by signal|was terminated by exception|PANIC:" "$1/server.log"
}

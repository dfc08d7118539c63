#!/usr/bin/env bash
# build-pg_tle.sh [PG_CONFIG]
#
# Print the pg_config of a server for the SQL edition's tests: a copy of the
# server of PG_CONFIG (the argument, else $PG_CONFIG, else pg_config on
# PATH: Debian's 15 here; make matrix's 18 is build-server.sh's) without any
# file of sandbox_store's C edition, with pg_tle 1.5.2 built into it.
#
# Why a copy: pg_tle refuses to register an extension whose name a control
# file on the server's disk already uses, and the tests install the C
# edition into the server itself.  PostgreSQL finds its share/ and lib/
# relative to its binaries, so a copy of the directory that holds bin/ (and
# of the share and lib directories outside it, Debian's layout) is a server
# of its own; the headers stay where they are (a symbolic link).
#
# Built once per machine into the cache of build-server.sh (SB_PG_CACHE, else
# /var/cache/sandbox_store when writable, else ~/.cache/sandbox_store), as
# pg_tle-1.5.2-pgMAJOR-HASH (HASH: of the path of the server's pg_config),
# the build log beside it.  Reused while its stamp names the same tarball (by
# checksum) and the same server (path and version); anything else is rebuilt.
# A user that cannot write that cache (postgres, running the suites) uses a
# finished build there, else builds into its own.
# The source comes from SB_VENDOR_DIR (default: shared/vendor in the
# directory that holds the clone).  Takes about 10 s; needs flex (make deps).
# Progress goes to stderr, only the pg_config path to stdout.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
sb_name='build-pg_tle'

version=1.5.2
tarball=pg_tle-$version.tar.gz
pgc=$(command -v "${1:-${PG_CONFIG:-pg_config}}" || true)
[ -n "$pgc" ] || fail "${1:-${PG_CONFIG:-pg_config}} not found"
# Debian's /usr/bin/pg_config is a wrapper: the server's own is in its bindir.
bindir=$("$pgc" --bindir)
pgc=$bindir/pg_config
pgversion=$("$pgc" --version)
major=$(sed -E 's/^PostgreSQL ([0-9]+).*/\1/' <<<"$pgversion")
vendor=${SB_VENDOR_DIR:-$sb_top/../shared/vendor}

key=pg_tle-$version-pg$major-$(sha256sum <<<"$pgc" | cut -c1-8)
want=
[ -f "$vendor/$tarball" ] && want="$tarball $(sha256sum "$vendor/$tarball" | cut -d' ' -f1) $pgc $pgversion"

# A finished build of the same tarball and server, in the cache a root run
# made (/var/cache/sandbox_store: read-only to the postgres user the suites
# run as) or in this user's; without the source here, any finished build.
for cache in ${SB_PG_CACHE:-/var/cache/sandbox_store} "$HOME/.cache/sandbox_store"; do
  stamp=$cache/$key.build copy_pgc=$cache/$key$bindir/pg_config
  if [ -f "$stamp" ] && [ -x "$copy_pgc" ] && { [ -z "$want" ] || [ "$(cat "$stamp")" = "$want" ]; }; then
    echo "$copy_pgc"
    exit 0
  fi
done
[ -n "$want" ] || fail "$vendor/$tarball not found (set SB_VENDOR_DIR) and no cached build of it"

sb_pg_cache
root=$sb_cache/$key stamp=$sb_cache/$key.build log=$sb_cache/$key.log
copy_pgc=$root$bindir/pg_config

command -v flex >/dev/null || fail "flex not found (make deps installs it)"
rm -f "$stamp"
rm -rf "$root"
warn "copying $pgversion ($pgc) to $root and building pg_tle $version into it (log: $log)"
start=$SECONDS

# The directory that holds bin/, then every directory of the server outside
# it: share and lib are copied, the headers linked.
copied=()
inside() {
  local d
  for d in "${copied[@]}"; do
    case $1/ in "$d"/*) return 0 ;; esac
  done
  return 1
}
base=$(dirname "$bindir")
mkdir -p "$root$(dirname "$base")"
cp -a "$base" "$root$base"
copied+=("$base")
for what in sharedir pkglibdir; do
  d=$("$pgc" --$what)
  inside "$d" && continue
  mkdir -p "$root$(dirname "$d")"
  cp -a "$d" "$root$d"
  copied+=("$d")
done
for what in includedir pkgincludedir includedir-server; do
  d=$("$pgc" --$what)
  inside "$d" && continue
  mkdir -p "$root$(dirname "$d")"
  ln -s "$d" "$root$d"
  copied+=("$d")
done
[ "$("$copy_pgc" --bindir)" = "$root$bindir" ] || fail "the copy's pg_config does not find itself in $root"

# No file of the C edition.
sharedir=$("$copy_pgc" --sharedir) pkglibdir=$("$copy_pgc" --pkglibdir)
rm -rf "$sharedir"/extension/sandbox_store[.-]* "$pkglibdir"/sandbox_store.so \
  "$pkglibdir"/bitcode/sandbox_store "$pkglibdir"/bitcode/sandbox_store.index.bc

# pg_tle, with PGXS (a calling make's MAKELEVEL and MAKEFLAGS are not its:
# see build-server.sh).  (&&: in a list that ends with ||, errexit is off.)
unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES
sb_tempdir sb_pg_tle; build=$sb_dir
{
  tar xzf "$vendor/$tarball" -C "$build" --strip-components=1 &&
    cd "$build" &&
    make -j"$(nproc)" USE_PGXS=1 PG_CONFIG="$copy_pgc" &&
    make install USE_PGXS=1 PG_CONFIG="$copy_pgc"
} >"$log" 2>&1 || { tail -20 "$log" >&2; fail "build of pg_tle $version failed; last lines of $log above"; }
[ -f "$sharedir/extension/pg_tle.control" ] || fail "pg_tle.control is not in $sharedir/extension"
chmod -R a+rX "$root"
echo "$want" >"$stamp"
warn "pg_tle $version built into a copy of $pgversion in $((SECONDS - start)) s"
echo "$copy_pgc"

#!/usr/bin/env bash
# build-citus.sh [PG_CONFIG]
#
# Make sure the Citus that goes with the server of PG_CONFIG (the argument,
# else $PG_CONFIG, else pg_config on PATH: Debian's 15 here) is installed
# into that server, building it once from the vendored source when it is not.
#
#   PostgreSQL 15          Citus 13.2.2 (citus-13.2.2.tar.gz; the tarball
#                          carries one patch: have_createdb_privilege is
#                          exported by PostgreSQL 15.20 itself)
#   PostgreSQL 16, 17, 18  Citus 14.0.1 (citus-14.0.1.tar.gz, unpatched)
#   16.0-16.4, 17.0 and    none: Citus 14.0.1 calls
#   their betas (the       systable_inplace_update_begin/_finish, which
#   matrix's 16beta2 and   PostgreSQL added in 16.5 and 17.1: it does not
#   17beta2)               compile against the others (against 17beta2
#                          that is its one error; 16beta2 also lacks
#                          pgstat_get_local_beentry_by_index and has
#                          RangeVarCallbackMaintainsTable for
#                          RangeVarCallbackOwnsTable)
#   19                     none: no Citus release supports it
#
# Prints the Citus version now installed there on stdout, nothing when there
# is none; messages go to stderr.  "None" is not an error: the script says
# so and exits 0, and the citus suite skips a server without citus.control.
#
# Debian 12 has no Citus package, so the source comes from SB_VENDOR_DIR
# (default: shared/vendor in the directory that holds the clone).  Builds
# with --without-libcurl; needs root to install packages and the result (as
# anyone else, a Citus that is missing is reported and the suite skipped).
#
# A build is reused when citus.so and the citus.control of that version are
# in the server and its stamp in the cache names the same tarball (by
# checksum), server and configure options; anything else is rebuilt.  The
# cache is build-server.sh's (SB_PG_CACHE, else /var/cache/sandbox_store
# when writable, else ~/.cache/sandbox_store); the stamp is
# citus-VERSION-pgMAJOR-HASH.build in it, the build log
# citus-VERSION-pgMAJOR-HASH.log (HASH: of the path of pg_config).
# Takes about a minute (13.2.2) to a minute and a half (14.0.1) on two cores.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
sb_name='build-citus'

pgc=$(command -v "${1:-${PG_CONFIG:-pg_config}}" || true)
[ -n "$pgc" ] || fail "${1:-${PG_CONFIG:-pg_config}} not found"
pgversion=$("$pgc" --version)
major=$(sed -E 's/^PostgreSQL ([0-9]+).*/\1/' <<<"$pgversion")

# The minor release, or -1 for a beta, rc or devel stamp.
minor=$(sed -nE 's/^PostgreSQL [0-9]+\.([0-9]+).*/\1/p' <<<"$pgversion")
minor=${minor:--1}
case $major in
15) version=13.2.2 ;;
16 | 17 | 18) version=14.0.1 ;;
*)
  warn "no Citus for $pgversion (the vendored ones: 13.2.2 for 15, 14.0.1 for 16-18)"
  exit 0
  ;;
esac
if { [ "$major" = 16 ] && [ "$minor" -lt 5 ]; } || { [ "$major" = 17 ] && [ "$minor" -lt 1 ]; }; then
  warn "no Citus for $pgversion (Citus 14.0.1 needs systable_inplace_update_begin, added in 16.5 and 17.1)"
  exit 0
fi
tarball=citus-$version.tar.gz
configure_opts=(--without-libcurl "PG_CONFIG=$pgc")

# One stamp and log per server (a private copy of 15 is not Debian's).
key=citus-$version-pg$major-$(sha256sum <<<"$pgc" | cut -c1-8)
vendor=${SB_VENDOR_DIR:-$sb_top/../shared/vendor}

control=$("$pgc" --sharedir)/extension/citus.control
citus_installed() {
  [ -f "$control" ] && [ -f "$("$pgc" --pkglibdir)/citus.so" ] &&
    grep -q "default_version = '${version%.*}-" "$control"
}
installed=
citus_installed && installed=1

if [ "$(id -u)" != 0 ]; then
  # Cannot build or install here: use what is there, or skip the suite.
  if [ -n "$installed" ]; then echo "$version"; exit 0; fi
  warn "Citus $version is not installed in $pgversion and this is not root: the citus suite will be skipped"
  exit 0
fi

sb_pg_cache
stamp=$sb_cache/$key.build log=$sb_cache/$key.log
if [ -f "$vendor/$tarball" ]; then
  want="$tarball $(sha256sum "$vendor/$tarball" | cut -d' ' -f1) $pgc $pgversion ${configure_opts[*]}"
  if [ -n "$installed" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$version"
    exit 0
  fi
  # Another build of it may be under way (make test's build-matrix.sh):
  # wait for it, then take what it installed.
  sb_cache_lock "$key"
  if citus_installed && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$version"
    exit 0
  fi
elif [ -n "$installed" ]; then
  # No source here, but that Citus is installed: use it.
  echo "$version"
  exit 0
else
  fail "$vendor/$tarball not found (set SB_VENDOR_DIR)"
fi

missing=()
for p in libzstd-dev liblz4-dev libkrb5-dev libselinux1-dev libxslt1-dev libpam0g-dev libssl-dev libcurl4-openssl-dev; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  warn "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

rm -f "$stamp"
sb_tempdir sb_citus; build=$sb_dir
warn "building Citus $version for $pgversion (log: $log)"
start=$SECONDS
# A calling make's MAKELEVEL and MAKEFLAGS are not Citus's (see
# build-server.sh).  (&&: in a list that ends with ||, errexit is off; a
# failed step must stop the build.)
unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES
{
  tar xzf "$vendor/$tarball" -C "$build" --strip-components=1 &&
    cd "$build" &&
    ./configure "${configure_opts[@]}" &&
    make -j"$(nproc)" &&
    make install
} >"$log" 2>&1 || { tail -20 "$log" >&2; fail "build of Citus $version failed; last lines of $log above"; }
echo "$want" >"$stamp"
warn "Citus $version built and installed into $pgversion in $((SECONDS - start)) s"
echo "$version"

#!/usr/bin/env bash
# build-citus.sh: make sure Citus is installed into the PostgreSQL 15 of
# PG_CONFIG (default: pg_config on PATH, Debian's 15 here), building it once
# from the vendored source when it is not.
#
# Debian 12 has no Citus package, so the source comes from
# citus-13.2.2.tar.gz in SB_VENDOR_DIR (default: shared/vendor in the
# directory that holds the clone).  The tarball carries one patch
# (have_createdb_privilege is exported by PostgreSQL 15.20 itself).  Builds
# with --without-libcurl; needs root to install packages and the result.
# A build is skipped when citus.so and citus.control of 13.2.2 are there.
# Takes about a minute on two cores (54 s measured); the log goes to
# ${SB_PG_CACHE:-/var/cache/sandbox_store}/citus.log.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
pgc=$(command -v "${PG_CONFIG:-pg_config}" || true)
[ -n "$pgc" ] || { echo "build-citus: ${PG_CONFIG:-pg_config} not found" >&2; exit 1; }
version=13.2.2
tarball=citus-$version.tar.gz

control=$("$pgc" --sharedir)/extension/citus.control
if [ -f "$control" ] && [ -f "$("$pgc" --pkglibdir)/citus.so" ] &&
  grep -q "default_version = '${version%.*}" "$control"; then
  exit 0
fi

vendor=${SB_VENDOR_DIR:-$top/../shared/vendor}
[ -f "$vendor/$tarball" ] || { echo "build-citus: $vendor/$tarball not found (set SB_VENDOR_DIR)" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then
  echo "build-citus: citus is not installed and this is not root: the citus suite will be skipped" >&2
  exit 0
fi

missing=()
for p in libzstd-dev liblz4-dev libkrb5-dev libselinux1-dev libxslt1-dev libpam0g-dev libssl-dev libcurl4-openssl-dev; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "build-citus: installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cache=${SB_PG_CACHE:-/var/cache/sandbox_store}
mkdir -p "$cache"
log=$cache/citus.log
build=$(mktemp -d "${TMPDIR:-/tmp}/sb_citus.XXXXXX")
trap 'rm -rf "$build"' EXIT
echo "build-citus: building Citus $version for PostgreSQL 15 (log: $log)" >&2
start=$SECONDS
# A calling make's MAKELEVEL and MAKEFLAGS are not Citus's (see
# build-server.sh).  (&&: in a list that ends with ||, errexit is off; a
# failed step must stop the build.)
unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES
{
  tar xzf "$vendor/$tarball" -C "$build" --strip-components=1 &&
    cd "$build" &&
    ./configure --without-libcurl PG_CONFIG="$pgc" &&
    make -j"$(nproc)" &&
    make install
} >"$log" 2>&1 || { echo "build-citus: build failed; last lines of $log:" >&2; tail -20 "$log" >&2; exit 1; }
echo "build-citus: Citus $version built and installed in $((SECONDS - start)) s" >&2

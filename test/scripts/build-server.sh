#!/usr/bin/env bash
# build-server.sh MAJOR
#
# Print the pg_config of a PostgreSQL server of major version MAJOR, building
# the server first if it is not in the cache yet.
#
#   the major of PG_CONFIG (default: pg_config on PATH; Debian's 15 here)
#           that server itself, never built here
#   16..19  built from the source tarball (see sources below) into
#           $SB_PG_CACHE/pgMAJOR, once per machine: later runs reuse it
#
# A build is reused only if its stamp file names the same tarball (by
# checksum) and the same configure options; anything else is rebuilt.  The
# cache lives outside the clone so that fresh clones share it:
#
#   SB_PG_CACHE    cache directory (default /var/cache/sandbox_store when
#                  writable, else ~/.cache/sandbox_store)
#   SB_VENDOR_DIR  where the tarballs are (default: shared/vendor in the
#                  directory that holds the clone)
#
# Building takes 4-5 minutes per version on two cores.  Progress goes to
# stderr, the build log to $SB_PG_CACHE/pgMAJOR.log; only the pg_config path
# goes to stdout.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"

major=${1:?usage: build-server.sh MAJOR}
top=$sb_top

base=$(command -v "${PG_CONFIG:-pg_config}" || true)
[ -n "$base" ] || { echo "build-server: ${PG_CONFIG:-pg_config} not found (make deps installs postgresql-server-dev-15)" >&2; exit 1; }
base_major=$("$base" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
if [ "$major" = "$base_major" ]; then
  echo "$base"
  exit 0
fi

case $major in
16) tarball=postgresql-16beta2.tar.gz ;;
17) tarball=postgresql-17beta2.tar.gz ;;
18) tarball=postgresql-18.6.tar.bz2 ;;
19) tarball=postgresql-19beta1.tar.gz ;;
*) echo "build-server: no source for PostgreSQL $major (supported: 15 16 17 18 19)" >&2; exit 1 ;;
esac

sb_pg_cache
cache=$sb_cache

vendor=${SB_VENDOR_DIR:-$top/../shared/vendor}

prefix=$cache/pg$major
configure_opts=(--prefix="$prefix" --without-icu --with-openssl --with-lz4 --with-zstd --enable-tap-tests)
stamp=$prefix/.sandbox_store-build

if [ -n "$vendor" ] && [ -f "$vendor/$tarball" ]; then
  want="$tarball $(sha256sum "$vendor/$tarball" | cut -d' ' -f1) ${configure_opts[*]}"
elif [ -f "$stamp" ] && [ -x "$prefix/bin/pg_config" ]; then
  # No source here, but a finished build of it is: use that.
  echo "$prefix/bin/pg_config"
  exit 0
else
  echo "build-server: $tarball not found (set SB_VENDOR_DIR) and no cached build in $prefix" >&2
  exit 1
fi

built() { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$prefix/bin/pg_config" ]; }
if built; then
  echo "$prefix/bin/pg_config"
  exit 0
fi
# Another build of it may be under way (make test's build-matrix.sh): wait
# for it, then take what it built.
sb_cache_lock "pg$major"
if built; then
  echo "$prefix/bin/pg_config"
  exit 0
fi

# Build tools (bison and flex only matter for trees without generated files).
missing=()
for p in bison flex libssl-dev libzstd-dev liblz4-dev libreadline-dev zlib1g-dev libipc-run-perl; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "build-server: run as root to install ${missing[*]}" >&2; exit 1; }
  echo "build-server: installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Started from make (make test, make matrix), this script inherits MAKELEVEL
# and MAKEFLAGS.  PostgreSQL's build makes its generated headers (errcodes.h,
# ...) only in a make at MAKELEVEL 0, so the server's own make must not see
# them: with them, a build on a machine without a cache failed at once.
unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES

log=$cache/pg$major.log
sb_tempdir sb_pgbuild; build=$sb_dir
echo "build-server: building PostgreSQL $major from $tarball into $prefix (log: $log)" >&2
start=$SECONDS
rm -rf "$prefix"
# (&&: in a list that ends with ||, bash's errexit is off, and a failed step
# must stop the build where its error is, the last lines shown below.)
# Of contrib only amcheck, which the fuzz test runs on the indexes: no test
# uses another module, and building them all took a minute or two a version.
{
  tar xf "$vendor/$tarball" -C "$build" --strip-components=1 &&
    cd "$build" &&
    ./configure "${configure_opts[@]}" &&
    make -j"$(nproc)" &&
    make install &&
    make -C contrib/amcheck install &&
    make -C src/test/isolation install
} >"$log" 2>&1 || { echo "build-server: build of PostgreSQL $major failed; last lines of $log:" >&2; tail -20 "$log" >&2; exit 1; }
echo "$want" >"$stamp"
echo "build-server: PostgreSQL $major built in $((SECONDS - start)) s" >&2
echo "$prefix/bin/pg_config"

#!/usr/bin/env bash
# release/deb.sh OUTDIR: the Debian source and binary packages of the tree,
# built as Debian builds them (make deb: into dist/debian), then lintian.
#
#   1. the orig tarball: the tracked files (release/archive.sh) as
#      OUTDIR/sandbox-store_<upstream version>.orig.tar.gz, top directory
#      sandbox_store-<upstream version>/ (what the tag tarball of
#      debian/watch holds), unpacked in OUTDIR;
#   2. dpkg-buildpackage -us -uc there (unsigned; the build dependencies
#      must be installed: test/scripts/install-deps.sh): the source package
#      and postgresql-NN-sandbox-store (and its -dbgsym) for each PostgreSQL
#      version of debian/control.  The build-time tests (dh_pgxs_test) are
#      left out (nocheck): test/scripts/release-test.sh deb runs the suites
#      against the installed package instead;
#   3. lintian on the .changes (source and binaries): fails on an error, and
#      on a warning other than those release/README.md lists, and says why
#      (LINTIAN_ALLOWED below).
#
# OUTDIR is emptied first.  The build log is OUTDIR/build.log, lintian's
# report OUTDIR/lintian.log.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=deb

# Warnings that stay (release/README.md says why).
LINTIAN_ALLOWED=(initial-upload-closes-no-bugs no-debian-changes)

[ $# -eq 1 ] || fail "usage: release/deb.sh OUTDIR"
for tool in dpkg-buildpackage dh pg_buildext lintian; do
  command -v $tool >/dev/null || fail "$tool not found: run test/scripts/install-deps.sh (as root)"
done
rm -rf "$1"
mkdir -p "$1"
out=$(cd "$1" && pwd)

version=$(dpkg-parsechangelog -l "$sb_top/debian/changelog" -S Version)
upstream=${version%-*}
src=$out/sandbox_store-$upstream

"$sb_top/release/archive.sh" "$out/sandbox-store_$upstream.orig.tar.gz" "sandbox_store-$upstream"
tar xzf "$out/sandbox-store_$upstream.orig.tar.gz" -C "$out"

say "building sandbox-store $version (log: $out/build.log)"
(cd "$src" && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -us -uc -Pnocheck) >"$out/build.log" 2>&1 ||
  { tail -n 40 "$out/build.log" >&2; fail "dpkg-buildpackage failed (log: $out/build.log)"; }
changes=$out/sandbox-store_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).changes
[ -f "$changes" ] || fail "dpkg-buildpackage made no $(basename "$changes")"
for deb in "$out"/*.deb; do say "built $(basename "$deb")"; done

# lintian exits non-zero on an error; the warnings are checked here.
rc=0
lintian --display-info "$changes" >"$out/lintian.log" 2>&1 || rc=$?
sed 's/^/  /' "$out/lintian.log"
[ $rc -eq 0 ] || fail "lintian reports errors (exit $rc)"
unexpected=$(sed -n 's/^W: [^:]*: \([^ ]*\).*/\1/p' "$out/lintian.log" | sort -u |
  grep -vxF -f <(printf '%s\n' "${LINTIAN_ALLOWED[@]}") || true)
[ -z "$unexpected" ] ||
  fail "lintian warnings that release/README.md does not list: $(tr '\n' ' ' <<<"$unexpected"); fix them, or say there why they stay"
say "lintian: no errors$(grep -q '^W: ' "$out/lintian.log" && echo ", only the warnings release/README.md lists")"

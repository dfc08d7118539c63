#!/usr/bin/env bash
# build-matrix.sh [MAJOR...]
#
# Build what the matrix (matrix.sh) needs for each MAJOR (default: 16 17 18
# 19), one version after the other: the server (build-server.sh) and the
# Citus that goes with it (build-citus.sh; none on most versions).  The base
# server (the one of PG_CONFIG, Debian's 15 here) is never built.  A build
# already in the cache costs a stamp check.
#
# make test runs it in the background, at the lowest CPU priority, while the
# suites run on the base server: on a machine without the cache the servers
# are built while the suites wait on locks, leases and browsers.  matrix.sh
# starts when the suites are done and finds them in the cache, or waits for
# the one still being built (build-server.sh and build-citus.sh build a
# thing once at a time).  The suites come first (nice); they are written to
# pass on a loaded machine.
#
# One line per version on stderr; the build logs are in the cache
# (build-server.sh, build-citus.sh).  A failed build is reported and the
# others go on; matrix.sh then tries it again and fails that version with
# the build's last lines.  Exit status 1 if any build failed.
set -uo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
sb_name='build-matrix'

majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(16 17 18 19)
base_pgc=$(command -v "${PG_CONFIG:-pg_config}") || fail "${PG_CONFIG:-pg_config} not found"
base_major=$("$base_pgc" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')

failed=0
for major in "${majors[@]}"; do
  [ "$major" = "$base_major" ] && continue
  start=$SECONDS
  if ! pgc=$("$sb_top/test/scripts/build-server.sh" "$major" 2>/dev/null); then
    warn "PostgreSQL $major: build failed (matrix.sh tries again)"
    failed=1
    continue
  fi
  if ! citus=$("$sb_top/test/scripts/build-citus.sh" "$pgc" 2>/dev/null); then
    warn "PostgreSQL $major: Citus build failed (matrix.sh tries again)"
    failed=1
    continue
  fi
  warn "PostgreSQL $major${citus:+ and Citus $citus}: ready ($((SECONDS - start)) s)"
done
exit $failed

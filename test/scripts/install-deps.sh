#!/usr/bin/env bash
# Install, from Debian's packages, whatever the build, the tests and the demo
# need and this machine lacks.  Idempotent: with everything present it only
# checks.  Needs root (or sudo) when something is missing.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"

packages=(
  make gcc                          # build
  postgresql-15                     # server, initdb, pg_ctl, psql, pgbench
  postgresql-server-dev-15          # PGXS, pg_regress, pg_isolation_regress, Perl test modules
  postgresql-15-pgtap               # pgTAP
  postgresql-15-plpgsql-check       # plpgsql_check: the regression test plpgsql_check (16 and later: skipped)
  libtap-parser-sourcehandler-pgtap-perl  # pg_prove
  libipc-run-perl                   # PostgreSQL::Test::Cluster (Perl TAP)
  util-linux                        # runuser
  clang-format cppcheck shellcheck  # make lint
  pgbouncer                         # test/t/005_pgbouncer.pl
  sqlsmith                          # test/t/008_fuzz.pl
  libasan8 libubsan1                # make memcheck
  gnuplot-nox                       # make bench (the plot)
  redis-server libhiredis-dev       # make bench (the Redis comparison, bench/redis.sh)
  bison flex libssl-dev libzstd-dev liblz4-dev libreadline-dev zlib1g-dev  # make matrix: PostgreSQL 16-19 from source; flex: pg_tle (build-pg_tle.sh)
  libkrb5-dev libselinux1-dev libxslt1-dev libpam0g-dev libcurl4-openssl-dev  # citus from source (build-citus.sh)
  git unzip                         # make dist (git archive) and its test (release/check.sh)
  dpkg-dev debhelper postgresql-server-dev-all fakeroot lintian  # the Debian package (debian/) and its test
  chromium                          # the TypeScript client's browser tests (clients/typescript/test/browser: headless, through playwright-core)
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done
# The TypeScript client's tests need Node.js >= 18.17 and npm, from
# Debian's packages unless the machine already has them (from any source).
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  say "all packages present"
  exit 0
fi

say "installing ${missing[*]}"
sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { warn "run as root to install: ${missing[*]}"; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

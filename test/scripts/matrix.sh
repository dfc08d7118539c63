#!/usr/bin/env bash
# matrix.sh [MAJOR...]
#
# Build, install and test sandbox_store on every supported PostgreSQL major
# (default: 15 16 17 18 19).  For each version:
#
#   1. its server: Debian's for 15, else built once from the vendored source
#      into a cache outside the clone (build-server.sh);
#   2. the extension, built -Werror from a private copy of this tree and
#      installed into that server;
#   3. pgTAP's SQL files copied from Debian's postgresql-15-pgtap if that
#      server has none (pgTAP is plain SQL and PL/pgSQL);
#   4. for a version other than the base one (15; run-tests.sh runs the
#      citus suite there) that has a Citus (build-citus.sh: 14.0.1 on 18),
#      that Citus, built once into the server;
#   5. on a throwaway cluster of that version (with-cluster.sh):
#      pg_regress, isolation, pgTAP and the Perl TAP suites, and the citus
#      suite where step 4 installed Citus (version-suites.sh);
#   6. for 18: the SQL edition's pg_regress and isolation suites and its
#      crash TAP tests (fences flushed as on 17 and later), through pg_tle,
#      as a non-superuser (with-sql-edition.sh, on a copy of the server
#      without the C edition and with pg_tle: build-pg_tle.sh);
#   7. for 18 and 19: pg_upgrade and dump/restore from a 15 cluster
#      (test/upgrade/pg_upgrade.pl).
#
# One line per version, then "matrix: N passed, N failed"; exit status 1 if
# any version failed.  Outputs of a failed version are kept and named.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(15 16 17 18 19)
# The base server: the one of PG_CONFIG (Debian's 15 here); pg_upgrade
# starts from it, and pgTAP's SQL files come from it.
base_pgc=$(command -v "${PG_CONFIG:-pg_config}") || { echo "matrix: ${PG_CONFIG:-pg_config} not found" >&2; exit 1; }
base_bindir=$("$base_pgc" --bindir) base_sharedir=$("$base_pgc" --sharedir)
base_major=$("$base_pgc" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
as_postgres=()
[ "$(id -u)" = 0 ] && as_postgres=(runuser -u postgres --)

# The majors where the SQL edition's pg_regress and isolation suites run
# too, through pg_tle (run-tests.sh runs all of its suites on 15).
sql_edition_majors=(18)
passed=0 failed=0 lines=()
work=$(mktemp -d "${TMPDIR:-/tmp}/sb_matrix.XXXXXX")
chmod 755 "$work"

# The copies have no .git: TAP 018_update_pooled builds the 1.4 release's
# library from this tree's git history, which SB_GIT_DIR names for it.
if git_dir=$(git -C "$top" rev-parse --absolute-git-dir 2>/dev/null); then
  export SB_GIT_DIR=$git_dir
fi

# Copy the tree without build outputs, so each version compiles from scratch.
copy_tree() {
  mkdir -p "$1"
  (cd "$top" && tar cf - --exclude=./.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
    --exclude=./results --exclude=./output_iso --exclude=./tmp_check \
    --exclude=./clients/typescript/node_modules --exclude=./clients/typescript/dist .) |
    tar xf - -C "$1"
}

run_version() {
  local major=$1 dir=$work/pg$1 pgc bindir sharedir ver citus= tle_pgc
  pgc=$("$top/test/scripts/build-server.sh" "$major") || { echo "no server"; return 1; }
  bindir=$("$pgc" --bindir) sharedir=$("$pgc" --sharedir)
  ver=$("$pgc" --version)
  echo "matrix: $ver ($pgc)" >&2
  copy_tree "$dir"
  make -C "$dir" -s PG_CONFIG="$pgc" WERROR=1 all install >"$dir/build.log" 2>&1 ||
    { cat "$dir/build.log" >&2; echo "extension build failed"; return 1; }
  if [ ! -f "$sharedir/extension/pgtap.control" ]; then
    cp "$base_sharedir"/extension/pgtap* "$sharedir/extension/" ||
      { echo "no pgTAP to copy"; return 1; }
  fi
  if [ "$major" != "$base_major" ]; then
    citus=$("$top/test/scripts/build-citus.sh" "$pgc") || { echo "Citus build failed"; return 1; }
  fi
  SB_CITUS=$citus PG_CONFIG=$pgc "$dir/test/scripts/with-cluster.sh" test/scripts/version-suites.sh >&2 ||
    { echo "suites failed"; return 1; }
  if [[ " ${sql_edition_majors[*]} " == *" $major "* ]]; then
    # (The copy is made from here: the vendored tarball is found from the
    # clone.  make -k: the isolation suite runs even if pg_regress failed.)
    tle_pgc=$("$top/test/scripts/build-pg_tle.sh" "$pgc") || { echo "pg_tle build failed"; return 1; }
    PG_CONFIG=$tle_pgc "$dir/test/scripts/with-sql-edition.sh" pg_tle \
      make -k --no-print-directory regresscheck isolationcheck tapcheck >&2 ||
      { echo "SQL edition (pg_tle) suites failed"; return 1; }
  fi
  if [ "$major" -ge 18 ]; then
    chown -R postgres: "$dir" 2>/dev/null || true
    (cd "$dir" && "${as_postgres[@]}" env SB_OLD_BINDIR="$base_bindir" SB_NEW_BINDIR="$bindir" \
      make --no-print-directory tapcheck PG_CONFIG="$pgc" PROVE_TESTS=test/upgrade/pg_upgrade.pl) >&2 ||
      { echo "pg_upgrade from 15 failed"; return 1; }
  fi
  echo "$ver${citus:+, Citus $citus}"
}

# SB_DRY_RUN set: print each version's suites, run nothing (no server is
# built; the citus suite runs where build-citus.sh installs a Citus).
if [ -n "${SB_DRY_RUN:-}" ]; then
  for major in "${versions[@]}"; do
    citus=
    [ "$major" = "$base_major" ] || citus='(if build-citus.sh installs a Citus)'
    (cd "$top" && SB_CITUS=$citus test/scripts/version-suites.sh) |
      sed "s/^citus:/citus $citus:/; s/^/PostgreSQL $major: /"
    if [[ " ${sql_edition_majors[*]} " == *" $major "* ]]; then
      printf 'PostgreSQL %s: pg_tle:' "$major"
      printf ' %q' test/scripts/with-sql-edition.sh pg_tle make -k --no-print-directory regresscheck isolationcheck tapcheck; echo
    fi
    if [ "$major" -ge 18 ]; then
      printf 'PostgreSQL %s: pg_upgrade:' "$major"
      printf ' %q' make --no-print-directory tapcheck PG_CONFIG="\$pgc" PROVE_TESTS=test/upgrade/pg_upgrade.pl; echo
    fi
  done
  rmdir "$work"
  exit 0
fi

for major in "${versions[@]}"; do
  start=$SECONDS
  echo "=== matrix: PostgreSQL $major"
  if out=$(run_version "$major"); then
    passed=$((passed + 1))
    line="matrix: PostgreSQL $major: ok ($(echo "$out" | tail -1), $((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    line="matrix: PostgreSQL $major: FAILED: $(echo "$out" | tail -1) ($((SECONDS - start)) s; outputs in $work/pg$major)"
  fi
  echo "$line"
  lines+=("$line")
done

echo "=== matrix summary"
printf '%s\n' "${lines[@]}"
echo "matrix: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && rm -rf "$work"
[ "$failed" -eq 0 ]

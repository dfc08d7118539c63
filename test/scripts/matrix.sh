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
#      the suites of test/scripts/suites.sh's runs "version" (pg_regress,
#      isolation, pgTAP and the Perl TAP suites) and, where step 4 installed
#      Citus, "version-citus" (the citus suite) (version-suites.sh);
#   6. its "sql-edition" suites (on 18: the SQL edition's pg_regress and
#      isolation suites and its crash TAP tests, fences flushed as on 17
#      and later), through pg_tle, as a non-superuser (with-sql-edition.sh,
#      on a copy of the server without the C edition and with pg_tle:
#      build-pg_tle.sh);
#   7. its "upgrade" suites (on 18 and 19: pg_upgrade and dump/restore from
#      a 15 cluster, test/upgrade/pg_upgrade.pl).
#
# One line per version, then "matrix: N passed, N failed"; exit status 1 if
# any version failed.  Outputs of a failed version are kept and named.
# SB_SUITES as in run-tests.sh; SB_DRY_RUN set: print each version's suites
# ("PostgreSQL MAJOR: NAME: COMMAND"), build and run nothing.
# SB_MATRIX_SKIP_BASE set: leave out the base version (below).
set -uo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=test/scripts/suites.sh
. "$sb_top/test/scripts/suites.sh"
top=$sb_top
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(15 16 17 18 19)
# The base server: the one of PG_CONFIG (Debian's 15 here); pg_upgrade
# starts from it, and pgTAP's SQL files come from it.
base_pgc=$(command -v "${PG_CONFIG:-pg_config}") || { echo "matrix: ${PG_CONFIG:-pg_config} not found" >&2; exit 1; }
base_bindir=$("$base_pgc" --bindir) base_sharedir=$("$base_pgc" --sharedir)
base_major=$("$base_pgc" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
as_postgres=()
[ "$(id -u)" = 0 ] && as_postgres=(runuser -u postgres --)
# SB_MATRIX_SKIP_BASE set (make test, whose run-tests.sh has run every
# suite on the base server already): the base version is left out.
if [ -n "${SB_MATRIX_SKIP_BASE:-}" ]; then
  kept=()
  for major in "${versions[@]}"; do [ "$major" = "$base_major" ] || kept+=("$major"); done
  versions=("${kept[@]}")
fi

if [ -n "${SB_DRY_RUN:-}" ]; then
  # (No server is built: the citus suite runs where build-citus.sh installs
  # a Citus.)
  for major in "${versions[@]}"; do
    citus=
    [ "$major" = "$base_major" ] || citus='(if build-citus.sh installs a Citus)'
    (cd "$top" && SB_CITUS=$citus test/scripts/version-suites.sh) |
      sed "s/^citus:/citus $citus:/; s/^/PostgreSQL $major: /"
    sb_suites "sql-edition upgrade" "$major"
    for i in "${sb_plan[@]}"; do
      printf 'PostgreSQL %s: ' "$major"
      if sb_suite_in "${sb_suite_runs[i]}" upgrade "$major"; then
        sb_suite_line "$i" "PG_CONFIG=\$pgc"
      else
        sb_suite_line "$i"
      fi
    done
  done
  exit 0
fi

passed=0 failed=0 lines=()
work=$(mktemp -d "${TMPDIR:-/tmp}/sb_matrix.XXXXXX")
chmod 755 "$work"

# The copies have no .git: TAP 018_update_pooled builds the 1.4 release's
# library from this tree's git history, which SB_GIT_DIR names for it.
if git_dir=$(git -C "$top" rev-parse --absolute-git-dir 2>/dev/null); then
  export SB_GIT_DIR=$git_dir
fi

run_version() {
  local major=$1 dir=$work/pg$1 pgc bindir sharedir ver citus='' tle_pgc='' i
  pgc=$("$top/test/scripts/build-server.sh" "$major") || { echo "no server"; return 1; }
  bindir=$("$pgc" --bindir) sharedir=$("$pgc" --sharedir)
  ver=$("$pgc" --version)
  echo "matrix: $ver ($pgc)" >&2
  # Without build outputs, so each version compiles from scratch.
  sb_copy_tree "$dir"
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
  sb_suites "sql-edition upgrade" "$major"
  for i in "${sb_plan[@]}"; do
    sb_suite_cmd "$i"
    if sb_suite_in "${sb_suite_runs[i]}" sql-edition "$major"; then
      # (The copy is made from here: the vendored tarball is found from the
      # clone.)
      [ -n "$tle_pgc" ] || tle_pgc=$("$top/test/scripts/build-pg_tle.sh" "$pgc") ||
        { echo "pg_tle build failed"; return 1; }
      (cd "$dir" && PG_CONFIG=$tle_pgc "${sb_cmd[@]}") >&2 ||
        { echo "SQL edition (pg_tle) suites failed"; return 1; }
    else
      chown -R postgres: "$dir" 2>/dev/null || true
      (cd "$dir" && "${as_postgres[@]}" env SB_OLD_BINDIR="$base_bindir" SB_NEW_BINDIR="$bindir" \
        "${sb_cmd[@]}" PG_CONFIG="$pgc") >&2 ||
        { echo "pg_upgrade from $base_major failed"; return 1; }
    fi
  done
  echo "$ver${citus:+, Citus $citus}"
}

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

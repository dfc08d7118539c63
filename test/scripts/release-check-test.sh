#!/usr/bin/env bash
# test/scripts/release-check-test.sh: release/versions.sh (make release-check)
# refuses the install lines that name another release's files, and a
# released SQL edition update kept as its plain script (make lint runs it).
# On a copy of the files it reads: the tree as it is passes; a stale zip, a
# stale .deb, a stale client tarball and a plain script's header or BEGIN in
# the newest released update each fail, naming the file.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
sb_name=release-check-test
sb_tempdir sb_release_check; copy=$sb_dir

cd "$sb_top"
mkdir -p "$copy/debian" "$copy/clients/typescript" "$copy/src/sql"
mkdir -p "$copy/docs"
cp sandbox_store.control META.json CHANGELOG.md README.md "$copy/"
cp docs/reference.md "$copy/docs/"
cp debian/changelog "$copy/debian/"
cp -r clients/typescript/package.json clients/typescript/README.md clients/typescript/docs "$copy/clients/typescript/"
cp src/sql/build.sh "$copy/src/sql/"
mkdir -p "$copy/src/sql/released/sql-edition"
cp src/sql/released/sql-edition/*.sql "$copy/src/sql/released/sql-edition/"

check() { SB_RELEASE_TREE=$copy release/versions.sh 2>&1; }
check >/dev/null || fail "the tree as it is does not pass release/versions.sh"

# expect_refused FILE SED-EXPRESSION MESSAGE: the edit makes the check fail
# with MESSAGE; the file is put back after.
expect_refused() {
  local out rc=0
  cp "$copy/$1" "$copy/$1.orig"
  sed -i -E "$2" "$copy/$1"
  cmp -s "$copy/$1" "$copy/$1.orig" && fail "$1: '$2' changed nothing"
  out=$(check) || rc=$?
  [ "$rc" != 0 ] || fail "$1 with '$2': release/versions.sh passed"
  grep -qF "$3" <<<"$out" || fail "$1 with '$2': no '$3' in: $out"
  mv "$copy/$1.orig" "$copy/$1"
}
expect_refused README.md 's/sandbox_store-[0-9.]+[0-9]\.zip/sandbox_store-0.9.zip/' \
  "README.md names the release file sandbox_store-0.9"
expect_refused README.md 's/sandbox-store_[0-9][^_]*_amd64/sandbox-store_0.9-1_amd64/' \
  "README.md names the package of 0.9-1"
expect_refused clients/typescript/README.md 's/sandbox-store-client-[0-9.]+[0-9]\.tgz/sandbox-store-client-0.0.1.tgz/' \
  "names the tarball of 0.0.1"
updates=("$copy"/src/sql/released/sql-edition/*.sql)
released=${updates[-1]#"$copy/"}
expect_refused "$released" "1s/^/-- sandbox_store: the SQL edition's plain script, from X to Y.\n/" \
  "is the plain script"
expect_refused "$released" '0,/^CREATE/s/^CREATE/BEGIN;\nCREATE/' "is the plain script"
say "ok: release/versions.sh refuses stale release file names and a released update in plain-script form"

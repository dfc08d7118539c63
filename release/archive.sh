#!/usr/bin/env bash
# release/archive.sh OUT PREFIX: the tracked files of the tree as git
# archive writes them, into OUT (the format from its name: .zip, .tar.gz,
# .tgz or .tar), each path under PREFIX/.
#
# On a clean tree this is exactly `git archive HEAD` (what a release is
# made from).  With uncommitted changes to tracked files it archives the
# working tree's version of them instead, with a warning, so that the
# release tests (test/scripts/dist-check.sh, package-check.sh) test the
# tree as it is.  Untracked files are never archived.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=archive

[ $# -eq 2 ] || fail "usage: release/archive.sh OUT PREFIX"
prefix=$2
mkdir -p "$(dirname "$1")"
out=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

cd "$sb_top"
git rev-parse --verify -q HEAD >/dev/null ||
  fail "$sb_top is not a git checkout with a commit: the archive holds the tracked files of one"

if git diff --quiet HEAD --; then
  tree=HEAD
else
  warn "tracked files differ from HEAD: archiving the working tree (a release is made from a clean checkout)"
  # The working tree's tracked files, through a private copy of the index
  # (the real one, and HEAD, are left alone).
  sb_tempdir sandbox_store_archive
  cp "$(git rev-parse --git-path index)" "$sb_dir/index"
  GIT_INDEX_FILE=$sb_dir/index git add -u
  tree=$(GIT_INDEX_FILE=$sb_dir/index git write-tree)
fi
git archive --prefix="$prefix/" -o "$out" "$tree"

#!/usr/bin/env bash
# test/scripts/release-test.sh deb|pgxn: the release artifacts, installed
# and used as users install them, on the server of PG_CONFIG.
#
#   deb   the Debian package (release/deb.sh: built from an export of the
#         tracked files, lintian clean), installed with dpkg in place of
#         make install's files: the package holds the library, the control
#         file and every install and upgrade script of the export and
#         nothing else (but its docs); apt accepts it on this machine; the
#         regression and isolation suites pass against it (what
#         debian/tests/installcheck runs); once it is purged, no file of it
#         is left.
#   pgxn  the PGXN distribution (make dist, which also checks that the
#         versions agree, and remakes the tree's dist/):
#         dist/sandbox_store-<version>.zip holds exactly the tracked files
#         under sandbox_store-<version>/;
#         unpacked alone, with no pg_config (PG_CONFIG=/nonexistent), it
#         makes the SQL edition's two files, the same as make dist's;
#         unpacked alone in a temporary directory, it builds with PGXS,
#         installs, and passes make installcheck (the regression and
#         isolation suites).
#
# Neither touches the server's own installation: each installs into a copy
# of it (bindir, pkglibdir and sharedir, in the same layout; PostgreSQL
# finds its directories relative to its binaries) from which make install's
# sandbox_store files are removed first, and runs a throwaway cluster of
# that copy.  So later suites find make install's files as before, whatever
# happens here.  The package goes into the copy with dpkg --root under
# fakeroot, with a copy of this machine's dpkg database (its installed
# packages and their files), so dpkg checks the dependencies and file
# conflicts as on this machine; apt-get --simulate checks that apt would
# install it here.  The copy needs Debian's layout (lib in
# .../usr/lib/postgresql/NN, share in .../usr/share/postgresql/NN), as the
# package has.
#
# As root, it runs as postgres on a copy of the tree (initdb refuses root).
# The Perl TAP tests (make installcheck runs them too) are left out
# (TAP_TESTS=): they run in the tap suite, and need more than the archive.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
what=${1:-}
case $what in
  deb | pgxn) sb_name=release-$what ;;
  *) fail "usage: test/scripts/release-test.sh deb|pgxn" ;;
esac
top=$sb_top
sb_as_postgres "$@"
sb_use_pg

major=$("$PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
bindir=$("$PG_CONFIG" --bindir)
pkglibdir=$("$PG_CONFIG" --pkglibdir)
sharedir=$("$PG_CONFIG" --sharedir)
prefix=${bindir%/usr/lib/postgresql/"$major"/bin}
if [ "$bindir" != "$prefix/usr/lib/postgresql/$major/bin" ] ||
  [ "$pkglibdir" != "$prefix/usr/lib/postgresql/$major/lib" ] ||
  [ "$sharedir" != "$prefix/usr/share/postgresql/$major" ]; then
  fail "$PG_CONFIG is not laid out as Debian's PostgreSQL $major (bindir $bindir, pkglibdir $pkglibdir, sharedir $sharedir)"
fi

sb_tempdir "sandbox_store_release_$what"
work=$sb_dir
root=$work/root
lib=$root/usr/lib/postgresql/$major/lib
ext=$root/usr/share/postgresql/$major/extension

# A copy of the server's installation in $root, without sandbox_store.
server_copy() {
  mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql" "$root/usr/include"
  cp -a "$prefix/usr/lib/postgresql/$major" "$root/usr/lib/postgresql/"
  cp -a "$sharedir" "$root/usr/share/postgresql/"
  ln -s "$(cd "$("$PG_CONFIG" --includedir)" && pwd -P)" "$root/usr/include/postgresql"
  rm -rf "$lib"/sandbox_store* "$lib"/bitcode/sandbox_store* "$ext"/sandbox_store*
  PG_CONFIG=$root/usr/lib/postgresql/$major/bin/pg_config
  sb_use_pg
  if [ "$("$PG_CONFIG" --pkglibdir)" != "$lib" ] || [ "$("$PG_CONFIG" --sharedir)/extension" != "$ext" ]; then
    fail "the copy of the server in $root does not find its own directories"
  fi
}

# sandbox_store files in the copy's lib and extension directories.
leftovers() {
  find "$lib" "$ext" -name 'sandbox_store*' | sort
}

# The throwaway cluster of the copy, started once.
start_cluster() {
  sb_cluster_init "$work/cluster" "max_connections = 100"
  sb_cluster_env "$work/cluster"
  sb_cluster_start "$work/cluster"
}

# installcheck DIR: the regression and isolation suites of DIR (make
# installcheck, without the Perl TAP tests) against the cluster.
installcheck() {
  say "make installcheck in $1"
  if ! make -C "$1" --no-print-directory installcheck TAP_TESTS= PG_CONFIG="$PG_CONFIG" >"$work/installcheck.log" 2>&1; then
    cat "$work/installcheck.log"
    for f in "$1/regression.diffs" "$1/output_iso/regression.diffs"; do
      if [ -s "$f" ]; then echo "--- $f"; cat "$f"; fi
    done
    fail "make installcheck failed in $1"
  fi
  grep -E 'tests passed' "$work/installcheck.log" | sed 's/^[ =]*/  /; s/ *$//'
}

# not_available WHEN: CREATE EXTENSION sandbox_store fails, for want of the
# extension's files.
not_available() {
  local db=not_available_$RANDOM
  sb_create_db "$db"
  if psql -X -q -d "$db" -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION sandbox_store' >"$work/create.log" 2>&1; then
    fail "CREATE EXTENSION sandbox_store worked $1"
  fi
  grep -q 'extension "sandbox_store" is not available' "$work/create.log" ||
    { cat "$work/create.log"; fail "CREATE EXTENSION sandbox_store failed $1, but not for want of its files"; }
  sb_drop_db "$db"
}

# --- deb ----------------------------------------------------------------------

check_deb() {
  "$top/release/deb.sh" "$work/deb"
  local version upstream pkg deb src f listed expected missing unexpected before after
  version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
  upstream=${version%-*}
  pkg=postgresql-$major-sandbox-store
  deb=$work/deb/${pkg}_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb
  src=$work/deb/sandbox_store-$upstream
  [ -f "$deb" ] || fail "no $(basename "$deb") was built: is PostgreSQL $major in debian/control?"

  # What it holds: make install's files (the library, its bitcode, the
  # control file, every install and upgrade script of the export), its docs.
  listed=$(dpkg-deb --fsys-tarfile "$deb" | tar tf - | sed 's|^\./||; /\/$/d; /^$/d' | sort)
  expected=$(
    echo "usr/lib/postgresql/$major/lib/sandbox_store.so"
    echo "usr/share/postgresql/$major/extension/sandbox_store.control"
    for f in "$src"/src/sql/released/sandbox_store--*.sql; do echo "usr/share/postgresql/$major/extension/${f##*/}"; done
    # and the scripts the build puts together from src/sql/parts
    for f in "$src"/src/sql/sandbox_store--*.sql.in; do n=${f##*/}; echo "usr/share/postgresql/$major/extension/${n%.in}"; done
    echo "usr/share/postgresql/$major/extension/sandbox_store--$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$src/sandbox_store.control").sql"
  )
  missing=$(comm -13 <(echo "$listed") <(echo "$expected" | sort))
  [ -z "$missing" ] || fail "missing from $pkg: $(tr '\n' ' ' <<<"$missing")"
  unexpected=$(echo "$listed" | grep -vxF -f <(echo "$expected") |
    grep -vE "^usr/lib/postgresql/$major/lib/bitcode/sandbox_store(\.index\.bc|/src/[a-z_]+\.bc)$|^usr/share/doc/$pkg/" || true)
  [ -z "$unexpected" ] || fail "$pkg holds files that are not the extension's: $(tr '\n' ' ' <<<"$unexpected")"
  say "$pkg holds the library, the control file and $(echo "$expected" | grep -c '\.sql$') install and upgrade scripts, and docs"

  # apt would install it on this machine: its dependencies are met.
  LC_ALL=C apt-get install --simulate "$deb" >"$work/apt.log" 2>&1 ||
    { cat "$work/apt.log"; fail "apt-get install --simulate $deb failed"; }
  grep -q "^Inst $pkg ($version " "$work/apt.log" || { cat "$work/apt.log"; fail "apt would not install $pkg $version"; }
  say "apt-get install --simulate: apt would install $pkg $version here"

  server_copy
  mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
  cp /var/lib/dpkg/status "$root/var/lib/dpkg/status"
  cp /var/lib/dpkg/info/*.list "$root/var/lib/dpkg/info/"
  before=$(cd "$root" && find usr | sort)
  start_cluster
  not_available "before the package is installed"

  PATH=$PATH:/usr/sbin:/sbin fakeroot dpkg --root="$root" --log=/dev/null -i "$deb" >"$work/dpkg.log" 2>&1 ||
    { cat "$work/dpkg.log"; fail "dpkg -i $(basename "$deb") failed"; }
  say "installed $pkg $version with dpkg, in place of make install's files"
  installcheck "$src"

  PATH=$PATH:/usr/sbin:/sbin fakeroot dpkg --root="$root" --log=/dev/null --purge "$pkg" >"$work/dpkg.log" 2>&1 ||
    { cat "$work/dpkg.log"; fail "dpkg --purge $pkg failed"; }
  [ -z "$(leftovers)" ] || fail "left behind by dpkg --purge $pkg: $(leftovers | tr '\n' ' ')"
  after=$(cd "$root" && find usr | sort)
  [ "$before" = "$after" ] ||
    fail "dpkg --purge $pkg did not restore the installation: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | tr '\n' ' ')"
  not_available "after the package was purged"
  say "purged $pkg: nothing of it is left"
}

# --- pgxn ---------------------------------------------------------------------

check_pgxn() {
  local version name zip tracked archived dir
  version=$(perl -MJSON::PP -e 'local $/; print decode_json(<STDIN>)->{version}' <"$top/META.json")
  name=sandbox_store-$version
  make -C "$top" --no-print-directory dist
  zip=$top/dist/$name.zip
  [ -f "$zip" ] || fail "make dist made no dist/$name.zip"

  # Exactly the tracked files, under $name/.
  tracked=$(cd "$top" && git ls-files | while IFS= read -r f; do if [ -e "$f" ] || [ -L "$f" ]; then echo "$name/$f"; fi; done | sort)
  archived=$(unzip -Z1 "$zip" | grep -v '/$' | sort)
  [ "$tracked" = "$archived" ] ||
    fail "dist/$name.zip does not hold exactly the tracked files under $name/: $(diff <(echo "$tracked") <(echo "$archived") | grep '^[<>]' | head -n 20 | tr '\n' ' ')"
  say "dist/$name.zip holds the $(echo "$archived" | wc -l) tracked files under $name/"

  # The archive alone: unpacked in a directory of its own, built with PGXS.
  mkdir "$work/pgxn"
  (cd "$work/pgxn" && unzip -q "$zip")
  dir=$work/pgxn/$name
  [ "$(ls "$work/pgxn")" = "$name" ] || fail "dist/$name.zip has more than the top directory $name/"

  # The SQL edition's two files build from the archive with no pg_config (a
  # managed database's user has no server development files), the same as
  # make dist's.
  local ext_version f
  ext_version=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$top/sandbox_store.control")
  make -C "$dir" --no-print-directory sql-edition PG_CONFIG=/nonexistent >"$work/sql-edition.log" 2>&1 ||
    { cat "$work/sql-edition.log"; fail "make sql-edition PG_CONFIG=/nonexistent failed in the archive"; }
  for f in "sandbox_store-$ext_version.sql" "sandbox_store-$ext_version-pg_tle.sql"; do
    [ -f "$dir/dist/$f" ] || fail "make sql-edition PG_CONFIG=/nonexistent made no dist/$f"
    cmp -s "$dir/dist/$f" "$top/dist/$f" || fail "dist/$f made without pg_config differs from make dist's"
  done
  rm -r "$dir/dist"
  say "with no pg_config, make sql-edition makes the SQL edition's two files, the same as make dist's"
  server_copy
  start_cluster
  not_available "before the archive is installed"
  say "make && make install in $dir"
  { make -C "$dir" PG_CONFIG="$PG_CONFIG" && make -C "$dir" install PG_CONFIG="$PG_CONFIG"; } >"$work/build.log" 2>&1 ||
    { cat "$work/build.log"; fail "the archive did not build and install with PGXS"; }
  installcheck "$dir"
}

"check_$what"

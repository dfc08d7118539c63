#!/usr/bin/env bash
# release/versions.sh: the versions of a release agree (make release-check;
# make dist runs it first).  The release is the extension's default_version
# V (X.Y, or X.Y.Z for a release that fixes X.Y) in sandbox_store.control;
# then
#
#   src/sql/released/sandbox_store--V.sql
#                                    exists, or src/sql/build.sh that makes it
#   src/sql/released/sql-edition/    the updates as released (build.sh
#                                    expand), none a plain script
#   META.json                        version and provides.sandbox_store.version
#                                    are V as a semantic version (X.Y.0, or
#                                    X.Y.Z), and the file follows the PGXN
#                                    meta spec 1.0.0 (the fields it uses)
#   debian/changelog                 the newest entry is V-N (a Debian
#                                    revision N), not UNRELEASED, dated the
#                                    day of CHANGELOG.md's heading
#   CHANGELOG.md                     the newest heading is "## V (YYYY-MM-DD)"
#   clients/typescript/package.json  the client keeps its own semver; its
#                                    "sandboxStore" field says which extension
#                                    versions it works with ("extension":
#                                    ">=X.Y", which V satisfies) and which it
#                                    is tested with ("tested": V), and its
#                                    README says the same ("`sandbox_store`
#                                    X.Y or later (tested with V)")
#   README.md, the client's README   the release files they name are V's
#   and docs                         (sandbox_store-V.zip, -V.sql,
#                                    -V-pg_tle.sql, the .deb of V-N), and
#                                    the client's npm pack tarball is the
#                                    one of its package.json version
#
# Prints every disagreement and exits 1 if there is one.  Runs from any
# directory; SB_RELEASE_TREE=DIR checks another tree (a copy) instead.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=release-check
top=${SB_RELEASE_TREE:-$sb_top}
cd "$top"

problems=0
problem() {
  warn "$*"
  problems=$((problems + 1))
}

# json FILE KEY[.KEY...]: a value of a JSON file (nothing if it is missing).
json() {
  perl -MJSON::PP -e 'local $/; my $v = decode_json(<STDIN>);
    for (split /\./, $ARGV[0]) { $v = ref $v eq "HASH" ? $v->{$_} : undef }
    print $v if defined $v && !ref $v' "$2" <"$1"
}

# 1. The extension.
v=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" sandbox_store.control)
[[ $v =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || fail "sandbox_store.control: default_version '$v' is not X.Y or X.Y.Z"
# V as a semantic version: X.Y.0 for X.Y
semver=$v
[[ $v =~ ^[0-9]+\.[0-9]+$ ]] && semver=$v.0
# (kept as written, or put together from src/sql/parts by the build)
[ -f "src/sql/released/sandbox_store--$v.sql" ] || [ -x src/sql/build.sh ] ||
  problem "src/sql/released/sandbox_store--$v.sql (the install script of $v) is missing, and src/sql/build.sh that makes it"

# The SQL edition's released updates are kept in the form the pg_tle
# registration carries (src/sql/build.sh expand), not as the plain script
# made from it: that one opens a transaction of its own, which an update run
# through pg_tle may not.
for f in src/sql/released/sql-edition/*.sql; do
  [ -f "$f" ] || continue
  if grep -q "^-- sandbox_store: the SQL edition's plain script" "$f" || grep -qx 'BEGIN;' "$f"; then
    problem "$f is the plain script (src/sql/build.sh plain-update), not the update as released (src/sql/build.sh expand)"
  fi
done

# 2. CHANGELOG.md: its newest heading.
heading=$(grep -m1 '^## ' CHANGELOG.md || true)
date=
if [[ $heading =~ ^"## $v ("([0-9]{4}-[0-9]{2}-[0-9]{2})")"$ ]]; then
  date=${BASH_REMATCH[1]}
else
  problem "CHANGELOG.md: the newest heading is '$heading', not '## $v (YYYY-MM-DD)'"
fi

# 3. META.json: the versions, then the PGXN meta spec 1.0.0.
[ "$(json META.json version)" = "$semver" ] ||
  problem "META.json: version is '$(json META.json version)', not '$semver'"
[ "$(json META.json provides.sandbox_store.version)" = "$semver" ] ||
  problem "META.json: provides.sandbox_store.version is '$(json META.json provides.sandbox_store.version)', not '$semver'"
spec=$(perl -MJSON::PP -e '
  local $/; my $j = decode_json(<STDIN>); my @bad;
  my $semver = qr/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;
  my $term = qr/^[^\/\\\s[:cntrl:]]{2,}$/;
  my %license = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1 artistic_2 bsd freebsd
    gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1 lgpl_3_0 mit mozilla_1_0 mozilla_1_1 openssl perl_5
    postgresql qpl_1_0 ssleay sun zlib open_source restricted unrestricted unknown);
  for (qw(name version abstract maintainer license provides meta-spec)) { push @bad, "$_ is missing" unless exists $j->{$_} }
  my %known = map { $_ => 1 } qw(name version abstract maintainer license provides meta-spec description
    generated_by tags no_index prereqs release_status resources);
  for (sort keys %$j) { push @bad, "unknown key $_" unless $known{$_} || /^x_./i }
  push @bad, "name is not a term" unless ($j->{name} // "") =~ $term;
  push @bad, "version is not a semantic version" unless ($j->{version} // "") =~ $semver;
  push @bad, "meta-spec.version is not 1.0.x" unless (($j->{"meta-spec"} // {})->{version} // "") =~ /^1\.0\.\d+$/;
  my $l = $j->{license}; push @bad, "license is not one the spec names"
    unless !ref $l ? $license{$l // ""} : ref $l eq "ARRAY" ? @$l && !grep { !$license{$_} } @$l : ref $l eq "HASH" && %$l;
  my $m = $j->{maintainer}; push @bad, "maintainer is empty" unless ref $m ? @$m && !grep { !length } @$m : length($m // "");
  my $p = $j->{provides} // {}; push @bad, "provides is empty" unless ref $p eq "HASH" && %$p;
  for my $e (sort keys %$p) {
    push @bad, "provides: $e is not a term" unless $e =~ $term;
    for (sort keys %{$p->{$e}}) { push @bad, "provides.$e: unknown key $_" unless /^(file|version|abstract|docfile)$/ || /^x_./i }
    push @bad, "provides.$e.version is not a semantic version" unless ($p->{$e}{version} // "") =~ $semver;
    for my $f (qw(file docfile)) {
      next if $f eq "docfile" && !exists $p->{$e}{$f};
      push @bad, "provides.$e.$f: no file " . ($p->{$e}{$f} // "(missing)") unless -f ($p->{$e}{$f} // "");
    }
  }
  for my $phase (sort keys %{$j->{prereqs} // {}}) {
    push @bad, "prereqs: unknown phase $phase" unless $phase =~ /^(configure|build|test|runtime|develop)$/;
    for my $rel (sort keys %{$j->{prereqs}{$phase}}) {
      push @bad, "prereqs.$phase: unknown relationship $rel" unless $rel =~ /^(requires|recommends|suggests|conflicts)$/;
      for (sort keys %{$j->{prereqs}{$phase}{$rel}}) {
        my $r = $j->{prereqs}{$phase}{$rel}{$_};
        push @bad, "prereqs.$phase.$rel.$_: not a version range"
          unless $r eq "0" || !grep { !/^\s*(?:(?:[=!]=|[<>]=?)\s*)?(\d+\.\d+\.\d+\S*)\s*$/ } split /,/, $r;
      }
    }
  }
  push @bad, "release_status is not stable, testing or unstable"
    if exists $j->{release_status} && $j->{release_status} !~ /^(stable|testing|unstable)$/;
  for (@{$j->{tags} // []}) { push @bad, "tag \"$_\" is not 2-255 characters without / or \\" unless /^[^\/\\[:cntrl:]]{2,255}$/ }
  my $r = $j->{resources} // {};
  for (sort keys %$r) { push @bad, "resources: unknown key $_" unless /^(homepage|bugtracker|repository)$/ || /^x_./i }
  push @bad, "resources.repository needs url and type, or web"
    if $r->{repository} && !(($r->{repository}{url} && $r->{repository}{type}) || $r->{repository}{web});
  push @bad, "resources.bugtracker needs web or mailto" if $r->{bugtracker} && !($r->{bugtracker}{web} || $r->{bugtracker}{mailto});
  print "$_\n" for @bad;
' <META.json)
while IFS= read -r line; do [ -z "$line" ] || problem "META.json: $line"; done <<<"$spec"

# 4. debian/changelog: its newest entry.
read -r _ dversion dist _ < <(head -n1 debian/changelog)
dversion=${dversion#(} dversion=${dversion%)} dist=${dist%;}
[[ $dversion =~ ^$v-[0-9]+$ ]] || problem "debian/changelog: the newest entry is $dversion, not $v-N"
[ "$dist" != UNRELEASED ] || problem "debian/changelog: the newest entry is UNRELEASED"
trailer=$(grep -m1 '^ -- ' debian/changelog || true)
ddate=$(perl -e 'my %m; @m{qw(Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec)} = (1 .. 12);
  printf "%04d-%02d-%02d", $3, $m{$2}, $1 if $ARGV[0] =~ /, (\d{1,2}) (\w{3}) (\d{4}) /' "$trailer")
[ -z "$date" ] || [ "$ddate" = "$date" ] ||
  problem "debian/changelog: the newest entry is dated ${ddate:-(no date)}, CHANGELOG.md's $date"

# 5. The TypeScript client.
client=clients/typescript
[[ $(json $client/package.json version) =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] ||
  problem "$client/package.json: version is not a semantic version"
tested=$(json $client/package.json sandboxStore.tested)
range=$(json $client/package.json sandboxStore.extension)
[ "$tested" = "$v" ] || problem "$client/package.json: sandboxStore.tested is '$tested', not '$v'"
if [[ $range =~ ^\>=\ *([0-9]+)\.([0-9]+)$ ]]; then
  minor=${v#*.}
  min=$((BASH_REMATCH[1] * 1000 + BASH_REMATCH[2])) rel=$((${v%%.*} * 1000 + ${minor%%.*}))
  [ "$rel" -ge "$min" ] || problem "$client/package.json: sandboxStore.extension '$range' excludes $v"
else
  problem "$client/package.json: sandboxStore.extension is '$range', not '>=X.Y'"
fi
said="\`sandbox_store\` ${range#>=} or later (tested with $v)"
tr -s ' \n' '  ' <$client/README.md | grep -qF "$said" ||
  problem "$client/README.md does not say what package.json says: '$said'"

# 6. The install lines of the READMEs (and the client's docs) name this
# release's files: sandbox_store-V.zip, -V.sql, -V-pg_tle.sql and the
# Debian package of debian/changelog's newest entry.
for f in README.md "$client"/README.md "$client"/docs/*.md; do
  [ -f "$f" ] || continue
  while read -r named; do
    [ "$named" = "$v" ] || problem "$f names the release file sandbox_store-$named..., not $v's"
  done < <(grep -oE 'sandbox_store-[0-9]+\.[0-9]+(\.[0-9]+)?[.-]' "$f" | sed -E 's/^sandbox_store-//; s/[.-]$//' | sort -u)
  while read -r named; do
    [ "$named" = "$dversion" ] || problem "$f names the package of $named, not $dversion"
  done < <(grep -oE 'sandbox-store_[0-9][^_]*_' "$f" | sed -E 's/^sandbox-store_//; s/_$//' | sort -u)
done
cversion=$(json $client/package.json version)
while read -r named; do
  [ "$named" = "$cversion" ] || problem "$client/README.md names the tarball of $named, not $cversion (package.json)"
done < <(grep -ohE 'sandbox-store-client-[0-9][^ ]*\.tgz' "$client"/README.md "$client"/docs/*.md |
  sed -E 's/^sandbox-store-client-//; s/\.tgz$//' | sort -u)

if [ "$problems" -gt 0 ]; then
  fail "$problems problem(s) with the release $v"
fi
say "release $v: sandbox_store.control, META.json, debian/changelog, CHANGELOG.md, the client and the READMEs agree"

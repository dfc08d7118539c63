# 014_editions.pl
#
# The two editions on one server, and moving between them
# (docs/reference.md, "Editions"):
#
#   * one database holds one edition: the plain script refuses a database
#     that has the extension, CREATE EXTENSION refuses a database that has
#     the plain script's schema, each saying which is there (42710);
#   * moving from the C edition to the SQL edition (plain script) and back,
#     the documented way (pg_dump --data-only of instances, leases and
#     fence_seq, restored after installing the other edition, by the role
#     that owns it, not a superuser), keeps every record, every claim (a
#     live claim's holder renews and writes with its token and fence; a
#     released claim's fence stays dead) and the fences (a new claim gets a
#     fence above every fence handed out before).
#
# The edition installed as an extension is the C edition, or, when the
# suites run against the SQL edition through pg_tle (SB_EDITION=pg_tle, on a
# server with pg_tle and without the C edition), the SQL edition registered
# with pg_tle as a role that has pgtle_admin: then the moves are between
# pg_tle and the plain script, as from Amazon RDS to Neon.  The plain
# script (make sql-edition) needs nothing from the server.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreTest;
use Test::More;

my $root = "$FindBin::RealBin/../..";
# (dist/sandbox_store--FROM--TO.sql are the plain script's updates)
my ($plain) = grep { !/pg_tle/ } glob("$root/dist/sandbox_store-[0-9]*.sql");
BAIL_OUT('no plain script in dist/: run make sql-edition') unless defined $plain;

my $tle = ($ENV{SB_EDITION} // 'c') eq 'pg_tle';
my ($tle_script) = grep { /pg_tle/ } glob("$root/dist/sandbox_store-[0-9]*.sql");
my ($ext_edition, $ext_words) = $tle ? ('pg_tle', 'the SQL edition, through pg_tle') : ('c', 'the C edition');

my $node = PostgreSQL::Test::Cluster->new('editions');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_tle'") if $tle;
$node->start;

# The owner of each install: not a superuser.
$node->safe_psql('postgres', q{
CREATE ROLE owner LOGIN;
CREATE DATABASE c1 OWNER owner;
CREATE DATABASE plain1 OWNER owner;
CREATE DATABASE c2 OWNER owner;
});

sub plain_install
{
	my ($db) = @_;
	return $node->psql($db, undef,
		extra_params => [ '-U', 'owner', '-v', 'ON_ERROR_STOP=1', '-f', $plain ]);
}

# The extension: the C edition (CREATE EXTENSION needs a superuser: it
# loads C), or the SQL edition through pg_tle (registered and created by
# owner, who has pgtle_admin).
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tle; GRANT pgtle_admin TO owner') if $tle;
sub extension_install
{
	my ($db) = @_;
	if (!$tle)
	{
		$node->safe_psql($db, 'CREATE EXTENSION sandbox_store');
		return;
	}
	$node->safe_psql($db, 'CREATE EXTENSION IF NOT EXISTS pg_tle');
	my ($r, $o, $e) = $node->psql($db, undef,
		extra_params => [ '-U', 'owner', '-v', 'ON_ERROR_STOP=1', '-f', $tle_script ]);
	die "registration in $db failed: $e" if $r;
	$node->safe_psql($db, 'SET ROLE owner; CREATE EXTENSION sandbox_store');
	return;
}
extension_install('c1');
is($node->safe_psql('c1', 'SELECT edition FROM sandbox_store.edition()'), $ext_edition,
	"c1 has the $ext_edition edition");

# One edition per database, each way.
my $objects = q{SELECT count(*) FROM pg_proc WHERE pronamespace = 'sandbox_store'::regnamespace};
my $objects_before = $node->safe_psql('c1', $objects);
my ($ret, $out, $err) = plain_install('c1');
isnt($ret, 0, 'the plain script refuses a database that has the extension');
like($err, qr/sandbox_store is already installed in this database/, '... saying sandbox_store is installed');
like($err, qr/Extension sandbox_store 1\.\d+(\.\d+)? is installed \(\Q$ext_words\E\)/, '... and which edition');
is($node->safe_psql('c1', $objects), $objects_before, '... and left nothing behind');

($ret, $out, $err) = plain_install('plain1');
is($ret, 0, 'the plain script installs as a role that is not a superuser') or diag $err;
my ($version) = $plain =~ /sandbox_store-([0-9.]+)\.sql$/;
is($node->safe_psql('plain1', 'SELECT edition || \' \' || version FROM sandbox_store.edition()'),
	"plain $version", "edition() says plain $version");
if ($tle)
{
	$node->safe_psql('plain1', 'CREATE EXTENSION pg_tle');
	($ret, $out, $err) = $node->psql('plain1', undef,
		extra_params => [ '-U', 'owner', '-v', 'ON_ERROR_STOP=1', '-f', $tle_script ]);
	is($ret, 0, 'the registration with pg_tle works beside the plain script') or diag $err;
}
($ret, $out, $err) = $node->psql('plain1', ($tle ? 'SET ROLE owner; ' : '') . 'CREATE EXTENSION sandbox_store');
isnt($ret, 0, 'CREATE EXTENSION refuses a database that has the plain script');
like($err, qr/sandbox_store is already installed in this database/, '... saying sandbox_store is installed');
like($err, qr/plain edition, version 1\.4/, '... and which edition');
($ret, $out, $err) = plain_install('plain1');
isnt($ret, 0, 'the plain script refuses to run twice');
like($err, qr/plain edition, version 1\.4/, '... naming what is there');

# State worth moving: records, a live claim, a released claim, an expired
# one.
$node->safe_psql('c1', q{
SELECT count(*) FROM generate_series(1, 20) i,
  sandbox_store.sandbox_upsert('key-' || i, 'prov', 'sbx-' || i, 'thread-' || (i % 3),
    updated_at => '2026-01-01 00:00:00.123456+00'::timestamptz + i * interval '1 minute');
SELECT fence FROM sandbox_store.sandbox_claim('live', '1 hour');
SELECT fence FROM sandbox_store.sandbox_claim('released', '1 hour');
SELECT sandbox_store.sandbox_release('released',
  (SELECT owner_token FROM sandbox_store.claims WHERE key = 'released'));
SELECT fence FROM sandbox_store.sandbox_claim('expired', '1 millisecond');
});

# Move the state from database $from to database $to (which has the other
# edition), as the documentation says: data only, restored by the role that
# installed the edition there (owner for the plain script, a superuser for
# the C edition).  Calls are made as that role too.
sub role_of
{
	my ($db) = @_;
	return $db =~ /^plain/ || $tle ? 'owner' : $node->safe_psql('postgres', 'SELECT current_user');
}

sub move
{
	my ($from, $to) = @_;
	my $file = $node->basedir . "/$from.sql";
	$node->command_ok(
		[
			'pg_dump', '--data-only', '--table=sandbox_store.instances',
			'--table=sandbox_store.leases', '--table=sandbox_store.fence_seq',
			'-f', $file, '-d', $node->connstr($from)
		],
		"pg_dump --data-only of $from");
	my ($r, $o, $e) = $node->psql($to, undef,
		extra_params => [ '-U', role_of($to), '-v', 'ON_ERROR_STOP=1', '-f', $file ]);
	is($r, 0, "restored into $to by the role that installed it") or diag $e;
	return;
}

sub check_moved
{
	my ($from, $to, $live_token, $live_fence) = @_;
	is($node->safe_psql($to, $RECORDS_QUERY), $node->safe_psql($from, $RECORDS_QUERY),
		"$to has every record of $from");
	is($node->safe_psql($to, $LEASES_QUERY), $node->safe_psql($from, $LEASES_QUERY),
		"$to has every claim and fence of $from");
	my $max_fence = $node->safe_psql($from, 'SELECT max(fence) FROM sandbox_store.leases');

	# The live claim still holds the key and its holder keeps working.
	is(sqlstate_on($to, q{SELECT sandbox_store.sandbox_claim('live', '1 min', wait => '0')}),
		'55P03', "$to: the live claim still holds its key");
	is(sqlstate_on($to, "SELECT sandbox_store.sandbox_renew('live', '$live_token', '1 hour')"),
		'ok', "$to: its holder renews with its token");
	is(sqlstate_on($to,
		"SELECT sandbox_store.sandbox_upsert('live', 'prov', 'sbx-live', 'thread-live', fence => $live_fence)"),
		'ok', "$to: its holder writes with its fence");
	# A released claim's fence stays dead; fences go on above the moved ones.
	my $released = $node->safe_psql($from, q{SELECT fence FROM sandbox_store.leases WHERE key = 'released'});
	is(sqlstate_on($to,
		"SELECT sandbox_store.sandbox_upsert('released', 'prov', 'x', 't', fence => $released)"),
		'SB001', "$to: the released claim's fence is refused");
	my $new = $node->safe_psql($to, qq{SET ROLE "} . role_of($to) . qq{"; SELECT fence FROM sandbox_store.sandbox_claim('new-$to', '1 hour')});
	cmp_ok($new, '>', $max_fence, "$to: a new claim's fence is above every fence of $from");
	return;
}

sub sqlstate_on
{
	my ($db, $sql) = @_;
	my $role = role_of($db);
	my ($r, $o, $e) = $node->psql($db, "\\set VERBOSITY verbose\nSET ROLE \"$role\";\n$sql");
	return 'ok' if $r == 0;
	return $e =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : "no SQLSTATE in: $e";
}

my ($token, $fence) = split /\|/,
  $node->safe_psql('c1', q{SELECT owner_token, fence FROM sandbox_store.leases WHERE key = 'live'});

# The extension -> SQL edition (plain).  (The target is a fresh database
# with the plain script: plain1 above was only for the refusals.)
$node->safe_psql('postgres', 'CREATE DATABASE plain2 OWNER owner');
($ret, $out, $err) = plain_install('plain2');
is($ret, 0, 'plain script into plain2') or diag $err;
move('c1', 'plain2');
check_moved('c1', 'plain2', $token, $fence);

# SQL edition (plain) -> the extension.
extension_install('c2');
($token, $fence) = split /\|/,
  $node->safe_psql('plain2', q{SELECT owner_token, fence FROM sandbox_store.leases WHERE key = 'live'});
move('plain2', 'c2');
check_moved('plain2', 'c2', $token, $fence);

$node->stop;
done_testing();

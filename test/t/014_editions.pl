# 014_editions.pl
#
# The two editions on one server, and moving between them
# (docs/reference.md, "Editions"):
#
#   * one database holds one edition: the plain script refuses a database
#     that has the extension, CREATE EXTENSION refuses a database that has
#     the plain script's schema, each saying which is there (42710);
#   * moving from the C edition to the SQL edition (plain script) and back,
#     the documented way (pg_dump --data-only --schema=sandbox_store: the
#     data of every table and sequence of the schema, which the test checks
#     is exactly what the dump holds; restored after installing the other
#     edition, by the role that owns it, not a superuser), keeps every
#     record, every claim (a live claim's holder renews and writes with its
#     token and fence; a released claim's fence stays dead), the fences (a
#     new claim gets a fence above every fence handed out before) and the
#     checkpoints: each thread's list, head and checkpoints by id, the blob
#     references, and the checkpoint writers (a live writer appends on the
#     moved head with its token and fence; a new writer's fence is above
#     every earlier one);
#   * the same moves within one database, both ways: DROP EXTENSION and
#     DROP SCHEMA sandbox_store (the empty schema CREATE EXTENSION made,
#     which the plain script, as the database owner, cannot create in: it
#     says so and how to go on), or DROP SCHEMA sandbox_store,
#     sandbox_store_internal CASCADE, then the other edition.
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
my $plain = edition_script('plain');
BAIL_OUT('no plain script in dist/: run make sql-edition') unless defined $plain;

my $tle = ($ENV{SB_EDITION} // 'c') eq 'pg_tle';
my $tle_script = edition_script('pg_tle');
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

# A role without CREATE on the database is told what it lacks, before
# anything is made.
$node->safe_psql('postgres', 'CREATE ROLE no_create LOGIN');
($ret, $out, $err) = $node->psql('plain1', undef,
	extra_params => [ '-U', 'no_create', '-v', 'ON_ERROR_STOP=1', '-f', $plain ]);
isnt($ret, 0, 'the plain script refuses a role without CREATE on the database');
like($err, qr/role no_create cannot create schemas in database plain1.*HINT:\s+Run it as the database owner/s,
	'... saying what it lacks and who can run it');
is($node->safe_psql('plain1', q{SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'sandbox_store%'}),
	'0', '... and left nothing behind');

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
like($err, qr/plain edition, version \Q$version\E\b/, '... and which edition');
($ret, $out, $err) = plain_install('plain1');
isnt($ret, 0, 'the plain script refuses to run twice');
like($err, qr/plain edition, version \Q$version\E\b/, '... naming what is there');

# State worth moving: records, a live claim, a released claim, an expired
# one; checkpoints of three threads (a chain whose head was deleted once, a
# root, a fork), their heads and blob references, a live checkpoint writer
# and released ones.
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

# A checkpoint (JSON) with a blob shared by every checkpoint and one of its
# own.
sub cp
{
	my ($id, $thread, $parent, $created) = @_;
	my $own = unpack('H*', $id) . ('0' x 64);
	return lit(
		qq({"id": "$id", "threadId": "$thread", "parentCheckpointId": )
		  . (defined $parent ? qq("$parent") : 'null')
		  . qq(, "createdAt": $created, "reason": "automatic", )
		  . qq("conversation": [{"role": "user", "content": "at $id"}], )
		  . qq("files": [{"path": "shared", "kind": "file", "size": 1, "blobKey": "sandbox-files/sha256/)
		  . ('a' x 64)
		  . qq("}, {"path": "own", "kind": "file", "size": 2, "blobKey": "sandbox-files/sha256/)
		  . substr($own, 0, 64)
		  . qq("}], "artifacts": []})) . '::jsonb';
}

$node->safe_psql('c1', q{
CREATE TEMP TABLE w AS SELECT 'th-a' AS thread, * FROM sandbox_store.checkpoint_acquire_writer('th-a', 3600000);
INSERT INTO w SELECT 'th-b', * FROM sandbox_store.checkpoint_acquire_writer('th-b', 3600000);
INSERT INTO w SELECT 'th-c', * FROM sandbox_store.checkpoint_acquire_writer('th-c', 3600000);
}
	  . 'SELECT sandbox_store.checkpoint_append(' . cp('a1', 'th-a', undef, 1000) . ", NULL, 'th-a', owner_token, fence) FROM w WHERE thread = 'th-a';"
	  . 'SELECT sandbox_store.checkpoint_append(' . cp('a2', 'th-a', 'a1', 2000) . ", 'a1', 'th-a', owner_token, fence) FROM w WHERE thread = 'th-a';"
	  . 'SELECT sandbox_store.checkpoint_append(' . cp('a3', 'th-a', 'a2', 3000) . ", 'a2', 'th-a', owner_token, fence) FROM w WHERE thread = 'th-a';"
	  . q{SELECT sandbox_store.checkpoint_delete_head('th-a', 'a3', 'th-a', owner_token, fence) FROM w WHERE thread = 'th-a';}
	  . 'SELECT sandbox_store.checkpoint_append(' . cp('b1', 'th-b', undef, 1500) . ", NULL, 'th-b', owner_token, fence) FROM w WHERE thread = 'th-b';"
	  . q{SELECT sandbox_store.checkpoint_fork('th-a', 'a1', 'th-c', 'c1', 4000, 'th-c', owner_token, fence) FROM w WHERE thread = 'th-c';
SELECT sandbox_store.checkpoint_release_writer(thread, owner_token, fence) FROM w WHERE thread IN ('th-b', 'th-c');
});

# What a move must carry, read through the interface: every record and
# lease row, each thread's head and list, each listed checkpoint by
# checkpoint_get, and the blob references.
my @STATE_QUERIES = (
	[ records => $RECORDS_QUERY ],
	[ 'claims and fences' => sub { claims_query($node, $_[0]) } ],
	[
		'checkpoint heads, lists and get' => q{
SELECT t, sandbox_store.checkpoint_head(t), l.n, l.c ->> 'id', sandbox_store.checkpoint_get(l.c ->> 'id') = l.c
  FROM unnest(ARRAY['th-a', 'th-b', 'th-c']) t
  LEFT JOIN LATERAL sandbox_store.checkpoint_list(t) WITH ORDINALITY AS l(c, n) ON true
 ORDER BY t, l.n}
	],
	[ 'checkpoints' => q{SELECT c FROM unnest(ARRAY['th-a', 'th-b', 'th-c']) t, sandbox_store.checkpoint_list(t) c} ],
	[ 'blob references' => q{SELECT * FROM sandbox_store.checkpoint_blob_references()} ]);

sub state_of
{
	my ($db) = @_;
	return { map { $_->[0] => $node->safe_psql($db, ref $_->[1] ? $_->[1]->($db) : $_->[1]) } @STATE_QUERIES };
}

my $before = state_of('c1');
is($node->safe_psql('c1', q{SELECT sandbox_store.checkpoint_head('th-a') || ' ' || sandbox_store.checkpoint_head('th-c')
  || ' ' || (SELECT count(*) FROM sandbox_store.checkpoint_blob_references())}),
	'a2 c1 4', 'c1 has checkpoints, heads and blob references to move');

# Calls are made as the role that installed the edition there: owner for
# the plain script and pg_tle, a superuser for the C edition.
sub role_of
{
	my ($db) = @_;
	return 'owner' if $tle || $node->safe_psql($db, 'SELECT edition FROM sandbox_store.edition()') ne 'c';
	return $node->safe_psql('postgres', 'SELECT current_user');
}

sub sqlstate_on
{
	my ($db, $sql) = @_;
	my $role = role_of($db);
	my ($r, $o, $e) = $node->psql($db, "\\set VERBOSITY verbose\nSET ROLE \"$role\";\n$sql");
	return 'ok' if $r == 0;
	return $e =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : "no SQLSTATE in: $e";
}

sub as_role_on
{
	my ($db, $sql) = @_;
	return $node->safe_psql($db, 'SET ROLE "' . role_of($db) . qq{";\n$sql});
}

# Step 2 of the documentation, the one dump command: the data of every
# table and sequence of schema sandbox_store, whichever edition holds it.
my $saves = 0;
sub save
{
	my ($db) = @_;
	my $file = $node->basedir . "/$db-" . ++$saves . '.sql';
	$node->command_ok([ 'pg_dump', '--data-only', '--schema=sandbox_store', '-f', $file, '-d', $node->connstr($db) ],
		"pg_dump --data-only --schema=sandbox_store of $db");
	# It holds the data of exactly the tables and sequences of the schema.
	my $dump = slurp_file($file);
	my @dumped = sort(($dump =~ /^COPY ([\w.]+) /mg), ($dump =~ /^SELECT pg_catalog\.setval\('([\w.]+)'/mg));
	my @relations = split /\n/, $node->safe_psql($db, q{
SELECT 'sandbox_store.' || relname FROM pg_class
 WHERE relnamespace = 'sandbox_store'::regnamespace AND relkind IN ('r', 'p', 'S')});
	is(join(' ', @dumped), join(' ', sort @relations), "... which holds the data of every table and sequence of the schema, no other");
	return $file;
}

sub load
{
	my ($db, $file) = @_;
	my $role = role_of($db);
	my ($r, $o, $e) = $node->psql($db, undef, extra_params => [ '-U', $role, '-v', 'ON_ERROR_STOP=1', '-f', $file ]);
	is($r, 0, "loaded into $db by the role that installed it ($role)") or diag $e;
	return;
}

# After a move into $to of the state $was (state_of before the move): all
# of it is there, and every holder goes on.
sub check_moved
{
	my ($label, $to, $was) = @_;
	my $now = state_of($to);
	is($now->{ $_->[0] }, $was->{ $_->[0] }, "$label: every one of the $_->[0]") for @STATE_QUERIES;
	my $max_fence = $node->safe_psql($to,
		'SELECT GREATEST((SELECT max(fence) FROM sandbox_store.leases), (SELECT max(fence) FROM sandbox_store.checkpoint_writers))');
	my ($token, $fence) = split /\|/, $node->safe_psql($to, q{SELECT owner_token, fence FROM sandbox_store.leases WHERE key = 'live'});
	my ($wtoken, $wfence) = split /\|/, $node->safe_psql($to, q{SELECT owner_token, fence FROM sandbox_store.checkpoint_writers
  WHERE thread_id = 'th-a'});

	# The live claim still holds the key and its holder keeps working.
	is(sqlstate_on($to, q{SELECT sandbox_store.sandbox_claim('live', '1 min', wait => '0')}),
		'55P03', "$label: the live claim still holds its key");
	is(sqlstate_on($to, "SELECT sandbox_store.sandbox_renew('live', '$token', '1 hour')"),
		'ok', "$label: its holder renews with its token");
	is(sqlstate_on($to,
		"SELECT sandbox_store.sandbox_upsert('live', 'prov', 'sbx-live', 'thread-live', fence => $fence)"),
		'ok', "$label: its holder writes with its fence");
	# A released claim's fence stays dead; fences go on above the moved ones.
	my $released = $node->safe_psql($to, q{SELECT fence FROM sandbox_store.leases WHERE key = 'released'});
	is(sqlstate_on($to,
		"SELECT sandbox_store.sandbox_upsert('released', 'prov', 'x', 't', fence => $released)"),
		'SB001', "$label: the released claim's fence is refused");
	my $new = as_role_on($to, qq{SELECT fence FROM sandbox_store.sandbox_claim('new-' || md5(random()::text), '1 hour')});
	cmp_ok($new, '>', $max_fence, "$label: a new claim's fence is above every moved fence");

	# The live checkpoint writer still holds its thread and appends on the
	# moved head; a thread whose writer was released gets a new one with a
	# fence above every moved fence.
	is(sqlstate_on($to, q{SELECT sandbox_store.checkpoint_acquire_writer('th-a', 1000)}),
		'SBC05', "$label: the live checkpoint writer still holds its thread");
	my $head = $node->safe_psql($to, q{SELECT sandbox_store.checkpoint_head('th-a')});
	my $id = 'a-' . ($label =~ s/\W+/-/gr);
	is(as_role_on($to, 'SELECT sandbox_store.checkpoint_append(' . cp($id, 'th-a', $head, 5000)
		  . ", '$head', 'th-a', '$wtoken', $wfence)"), $id,
		"$label: the checkpoint writer appends on the moved head with its token and fence");
	is(sqlstate_on($to, 'SELECT sandbox_store.checkpoint_append(' . cp("$id-x", 'th-a', $id, 5000)
		  . ", '$id', 'th-a', '$wtoken', " . ($wfence - 1) . ')'),
		'SB001', "$label: an older fence of the writer's thread is refused");
	my ($bfence, $btoken) = split /\|/, as_role_on($to, q{SELECT fence, owner_token FROM sandbox_store.checkpoint_acquire_writer('th-b', 60000)});
	cmp_ok($bfence, '>', $max_fence, "$label: a new checkpoint writer's fence is above every moved fence");
	ok(as_role_on($to, "SELECT sandbox_store.checkpoint_release_writer('th-b', '$btoken', $bfence)") eq 't',
		"$label: ... and it releases");
	return;
}

# The extension -> SQL edition (plain), between two databases.  (The
# target is a fresh database with the plain script: plain1 above was only
# for the refusals.)
$node->safe_psql('postgres', 'CREATE DATABASE plain2 OWNER owner');
($ret, $out, $err) = plain_install('plain2');
is($ret, 0, 'plain script into plain2') or diag $err;
load('plain2', save('c1'));
check_moved("$ext_edition c1 -> plain plain2", 'plain2', $before);

# SQL edition (plain) -> the extension, between two databases.
extension_install('c2');
$before = state_of('plain2');
load('c2', save('plain2'));
check_moved("plain plain2 -> $ext_edition c2", 'c2', $before);

# Within one database (c2), as the documentation says: the extension ->
# plain: save, DROP EXTENSION, drop the empty schema sandbox_store that
# CREATE EXTENSION made (it belongs to the role that created the
# extension), the plain script, load.
$before = state_of('c2');
my $file = save('c2');
my $installer = role_of('c2');
$node->safe_psql('c2', qq{SET ROLE "$installer"; DROP EXTENSION sandbox_store});
if (!$tle)
{
	# Left in place, that schema belongs to the superuser: the plain script
	# says so, and how to go on, rather than fail on its first CREATE.
	($ret, $out, $err) = plain_install('c2');
	isnt($ret, 0, 'the plain script refuses a schema sandbox_store it cannot create in');
	like($err, qr/ERROR:  schema sandbox_store already exists and role owner cannot create in it/,
		'... saying so');
	like($err, qr/HINT:  .*DROP SCHEMA sandbox_store/, '... and how to go on');
	is($node->safe_psql('c2', q{SELECT count(*) FROM pg_class WHERE relnamespace = 'sandbox_store'::regnamespace}),
		'0', '... leaving the schema empty');
}
$node->safe_psql('c2', qq{SET ROLE "$installer"; DROP SCHEMA sandbox_store});
($ret, $out, $err) = plain_install('c2');
is($ret, 0, 'the plain script installs into c2 after DROP EXTENSION and DROP SCHEMA') or diag $err;
load('c2', $file);
check_moved("$ext_edition -> plain within c2", 'c2', $before);

# And back within c2: save, drop both schemas of the plain script,
# CREATE EXTENSION, load.
$before = state_of('c2');
$file = save('c2');
$node->safe_psql('c2', 'SET ROLE owner; DROP SCHEMA sandbox_store, sandbox_store_internal CASCADE');
extension_install('c2');
is($node->safe_psql('c2', 'SELECT edition FROM sandbox_store.edition()'), $ext_edition, "c2 has the $ext_edition edition again");
load('c2', $file);
check_moved("plain -> $ext_edition within c2", 'c2', $before);

$node->stop;
done_testing();

# 017_sql_edition_update.pl
#
# The SQL edition's update from 1.4 (to 1.4.1, and on to the current
# version), with data, as a role that is
# not a superuser (docs/upgrading.md):
#
#   * through pg_tle (when the suites run with SB_EDITION=pg_tle, on a server
#     with pg_tle and without the C edition): 1.4 registered from its
#     released file (test/upgrade/sql-edition-1.4/) and created, then the
#     current registration (make sql-edition) and ALTER EXTENSION sandbox_store
#     UPDATE;
#   * the plain script (on any server): 1.4's released plain script, then
#     dist/sandbox_store--1.4--1.4.1.sql and the later updates with psql;
#     the update script from 1.4 run a
#     second time, or on a fresh install of the current version, is refused and changes nothing.
#
# Each keeps every record, the live claim (its holder renews and writes
# with its token and fence), the checkpoints (lists, heads, checkpoints by
# id, blob references) and the live checkpoint writer (it appends on the
# head with its token and fence); edition() says 1.4.1; no function whose
# name starts with an underscore is left in schema sandbox_store; and an app
# role that was granted EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store
# before the update still calls every interface function it had, and no
# helper.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreTest;
use Test::More;

my $root = "$FindBin::RealBin/../..";
my $old = "$root/test/upgrade/sql-edition-1.4";
my $plain = edition_script('plain');
my $tle_script = edition_script('pg_tle');
my $plain_update = "$root/dist/sandbox_store--1.4--1.4.1.sql";
# (then the updates from 1.4.1 on to the current version, one after the
# other: each one's target is the next one's source)
my @later_updates;
for (my $from = '1.4.1'; my ($next) = glob("$root/dist/sandbox_store--$from--*.sql");)
{
	push @later_updates, $next;
	($from) = $next =~ /--\Q$from\E--([0-9.]+)\.sql$/;
}
BAIL_OUT('no SQL edition in dist/: run make sql-edition')
  unless defined $plain && defined $tle_script && -f $plain_update;
my ($version) = $plain =~ /sandbox_store-([0-9.]+)\.sql$/;

my $tle = ($ENV{SB_EDITION} // 'c') eq 'pg_tle';

my $node = PostgreSQL::Test::Cluster->new('sql_edition_update');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_tle'") if $tle;
$node->start;
$node->safe_psql('postgres', q{
CREATE ROLE owner LOGIN;
CREATE ROLE app LOGIN;
});
$node->safe_psql('postgres', 'CREATE EXTENSION pg_tle; GRANT pgtle_admin TO owner') if $tle;

# psql -f FILE in $db as owner: (exit code, stderr).
sub run_file
{
	my ($db, $file) = @_;
	my ($r, $o, $e) = $node->psql($db, undef,
		extra_params => [ '-U', 'owner', '-v', 'ON_ERROR_STOP=1', '-f', $file ]);
	return ($r, $e);
}

sub as_owner { my ($db, $sql) = @_; return $node->safe_psql($db, "SET ROLE owner;\n$sql"); }
sub as_app { my ($db, $sql) = @_; return $node->safe_psql($db, "SET ROLE app;\n$sql"); }

sub sqlstate_as
{
	my ($db, $role, $sql) = @_;
	my ($r, $o, $e) = $node->psql($db, "\\set VERBOSITY verbose\nSET ROLE $role;\n$sql");
	return 'ok' if $r == 0;
	return $e =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : "no SQLSTATE in: $e";
}

# A checkpoint of thread t (JSON), with a blob shared by all and one of its own.
sub cp
{
	my ($id, $parent, $created) = @_;
	return lit(
		qq({"id": "$id", "threadId": "t", "parentCheckpointId": )
		  . (defined $parent ? qq("$parent") : 'null')
		  . qq(, "createdAt": $created, "reason": "automatic", "conversation": [{"role": "user", "content": "at $id"}], )
		  . qq("files": [{"path": "shared", "kind": "file", "size": 1, "blobKey": "sandbox-files/sha256/)
		  . ('a' x 64)
		  . qq("}, {"path": "own", "kind": "file", "size": 2, "blobKey": "sandbox-files/sha256/)
		  . (unpack('H*', $id) . ('0' x 64)) =~ s/^(.{64}).*/$1/r
		  . qq("}], "artifacts": []})) . '::jsonb';
}

# What the update must keep, read through the interface.
my @STATE_QUERIES = (
	[ records => $RECORDS_QUERY ],
	[ 'claims and fences' => sub { claims_query($node, $_[0]) } ],
	[
		'checkpoint lists, heads and get' => q{
SELECT t, sandbox_store.checkpoint_head(t), l.n, l.c, sandbox_store.checkpoint_get(l.c ->> 'id') = l.c
  FROM unnest(ARRAY['t', 'u']) t LEFT JOIN LATERAL sandbox_store.checkpoint_list(t) WITH ORDINALITY AS l(c, n) ON true
 ORDER BY t, l.n}
	],
	[ 'blob references' => 'SELECT * FROM sandbox_store.checkpoint_blob_references()' ]);

sub state_of
{
	my ($db) = @_;
	return { map { $_->[0] => $node->safe_psql($db, ref $_->[1] ? $_->[1]->($db) : $_->[1]) } @STATE_QUERIES };
}

# Data of 1.4 in $db, written as owner; the app role gets every function of
# the schema, as the 1.4 documentation said.
sub write_data
{
	my ($db) = @_;
	as_owner($db, q{
SELECT count(*) FROM generate_series(1, 10) i,
  sandbox_store.sandbox_upsert('key-' || i, 'prov', 'sbx-' || i, 'thread-' || (i % 3),
    updated_at => '2026-01-01 00:00:00.123456+00'::timestamptz + i * interval '1 minute');
SELECT fence FROM sandbox_store.sandbox_claim('live', '1 hour');
SELECT fence FROM sandbox_store.sandbox_claim('released', '1 hour');
SELECT sandbox_store.sandbox_release('released',
  (SELECT owner_token FROM sandbox_store.claims WHERE key = 'released'));
GRANT USAGE ON SCHEMA sandbox_store TO app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO app;
});
	my ($fence, $token) = split /\|/, as_owner($db, q{SELECT fence, owner_token FROM sandbox_store.checkpoint_acquire_writer('t', 3600000)});
	as_owner($db, 'SELECT sandbox_store.checkpoint_append(' . cp('t1', undef, 1000) . ", NULL, 't', '$token', $fence)");
	as_owner($db, 'SELECT sandbox_store.checkpoint_append(' . cp('t2', 't1', 2000) . ", 't1', 't', '$token', $fence)");
	my ($ufence, $utoken) = split /\|/, as_owner($db, q{SELECT fence, owner_token FROM sandbox_store.checkpoint_acquire_writer('u', 3600000)});
	as_owner($db, "SELECT sandbox_store.checkpoint_fork('t', 't1', 'u', 'u1', 3000, 'u', '$utoken', $ufence)");
	as_owner($db, "SELECT sandbox_store.checkpoint_release_writer('u', '$utoken', $ufence)");
	is(as_owner($db, q{SELECT edition || ' ' || version FROM sandbox_store.edition()}),
		($tle && $db eq 'tle' ? 'pg_tle' : 'plain') . ' 1.4', "$db: 1.4 installed");
	is($node->safe_psql($db, q{SELECT count(*) FROM sandbox_store.checkpoint_blob_references()}), '3',
		"$db: checkpoints with blob references to keep");
	return;
}

# The interface functions the app role may execute.
my $APP_FUNCTIONS = q{
SELECT p.oid::regprocedure FROM pg_proc p
 WHERE p.pronamespace = 'sandbox_store'::regnamespace AND has_function_privilege('app', p.oid, 'EXECUTE')
 ORDER BY p.oid::regprocedure::text COLLATE "C"};

sub check_updated
{
	my ($db, $edition, $was, $app_functions) = @_;
	my $now = state_of($db);
	is($now->{ $_->[0] }, $was->{ $_->[0] }, "$db: every one of the $_->[0] is kept") for @STATE_QUERIES;
	is(as_owner($db, q{SELECT edition || ' ' || version FROM sandbox_store.edition()}), "$edition $version",
		"$db: edition() says $edition $version");
	is($node->safe_psql($db, q{SELECT count(*) FROM pg_proc
  WHERE pronamespace = 'sandbox_store'::regnamespace AND proname LIKE '\_%'}),
		'0', "$db: no function whose name starts with an underscore is left in schema sandbox_store");
	cmp_ok($node->safe_psql($db, q{SELECT count(*) FROM pg_proc WHERE pronamespace = 'sandbox_store_internal'::regnamespace}),
		'>', 0, "$db: the helpers are in schema sandbox_store_internal");

	# The live claim's holder goes on.
	my ($token, $fence) = split /\|/, $node->safe_psql($db, q{SELECT owner_token, fence FROM sandbox_store.leases WHERE key = 'live'});
	is(sqlstate_as($db, 'owner', q{SELECT sandbox_store.sandbox_claim('live', '1 min', wait => '0')}),
		'55P03', "$db: the live claim still holds its key");
	is(sqlstate_as($db, 'owner', "SELECT sandbox_store.sandbox_renew('live', '$token', '1 hour')"),
		'ok', "$db: its holder renews with its token");
	is(sqlstate_as($db, 'owner', "SELECT sandbox_store.sandbox_upsert('live', 'prov', 'sbx-live', 't', fence => $fence)"),
		'ok', "$db: its holder writes with its fence");
	my $released = $node->safe_psql($db, q{SELECT fence FROM sandbox_store.leases WHERE key = 'released'});
	is(sqlstate_as($db, 'owner', "SELECT sandbox_store.sandbox_upsert('released', 'prov', 'x', 't', fence => $released)"),
		'SB001', "$db: the released claim's fence stays dead");

	# The live checkpoint writer goes on.
	my ($wtoken, $wfence) = split /\|/, $node->safe_psql($db, q{SELECT owner_token, fence FROM sandbox_store.checkpoint_writers
  WHERE thread_id = 't'});
	is(sqlstate_as($db, 'owner', q{SELECT sandbox_store.checkpoint_acquire_writer('t', 1000)}),
		'SBC05', "$db: the checkpoint writer still holds its thread");
	is(as_owner($db, 'SELECT sandbox_store.checkpoint_append(' . cp('t3', 't2', 4000) . ", 't2', 't', '$wtoken', $wfence)"),
		't3', "$db: the checkpoint writer appends on the head with its token and fence");
	my $max = $node->safe_psql($db,
		'SELECT GREATEST((SELECT max(fence) FROM sandbox_store.leases), (SELECT max(fence) FROM sandbox_store.checkpoint_writers))');
	cmp_ok(as_owner($db, q{SELECT fence FROM sandbox_store.checkpoint_acquire_writer('u', 1000)}), '>', $max,
		"$db: a new checkpoint writer's fence is above every earlier one");

	# The app role: the interface it had, and no helper.
	is($node->safe_psql($db, $APP_FUNCTIONS), $app_functions,
		"$db: the app role may still execute every interface function it was granted");
	is(sqlstate_as($db, 'app', q{SELECT sandbox_store.sandbox_get('key-1')}), 'ok', "$db: the app role calls sandbox_get");
	is(sqlstate_as($db, 'app', q{SELECT sandbox_store.sandbox_claim('app-key', '1 min')}), 'ok',
		"$db: the app role calls sandbox_claim");
	is(sqlstate_as($db, 'app', q{SELECT sandbox_store.checkpoint_head('t')}), 'ok', "$db: the app role calls checkpoint_head");
	is($node->safe_psql($db, q{SELECT count(*) FROM pg_proc
  WHERE pronamespace = 'sandbox_store_internal'::regnamespace AND has_function_privilege('app', oid, 'EXECUTE')}),
		'0', "$db: the app role may execute no helper");
	is($node->safe_psql($db, q{SELECT has_schema_privilege('app', 'sandbox_store_internal', 'USAGE')}),
		'f', "$db: ... nor use their schema");
	is(sqlstate_as($db, 'app', q{SELECT sandbox_store_internal._draw_claim_fence(0)}), '42501',
		"$db: the app role's call of a helper is refused");
	return;
}

# Through pg_tle.
SKIP:
{
	skip 'the update through pg_tle runs in the SQL edition\'s suites through pg_tle (SB_EDITION=pg_tle)', 1
	  unless $tle;
	$node->safe_psql('postgres', 'CREATE DATABASE tle OWNER owner');
	$node->safe_psql('tle', 'CREATE EXTENSION pg_tle');
	my ($r, $e) = run_file('tle', "$old/sandbox_store-1.4-pg_tle.sql");
	is($r, 0, 'tle: the 1.4 registration') or diag $e;
	as_owner('tle', 'CREATE EXTENSION sandbox_store');
	write_data('tle');
	my $was = state_of('tle');
	my $app_functions = $node->safe_psql('tle', $APP_FUNCTIONS);
	like($app_functions, qr/_draw_claim_fence/, 'tle: 1.4 gave the app role the helpers (what 1.4.1 ends)');
	$app_functions = join("\n", grep { !/^sandbox_store\._/ } split /\n/, $app_functions);

	($r, $e) = run_file('tle', $tle_script);
	is($r, 0, "tle: the $version registration") or diag $e;
	is($node->safe_psql('tle', q{SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'}), '1.4',
		'tle: ... changes nothing installed');
	is(sqlstate_as('tle', 'owner', 'ALTER EXTENSION sandbox_store UPDATE'), 'ok', 'tle: ALTER EXTENSION sandbox_store UPDATE');
	is($node->safe_psql('tle', q{SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'}), $version,
		"tle: the extension is at $version");
	check_updated('tle', 'pg_tle', $was, $app_functions);
}

# The plain script.
$node->safe_psql('postgres', 'CREATE DATABASE plain OWNER owner');
my ($r, $e) = run_file('plain', "$old/sandbox_store-1.4.sql");
is($r, 0, 'plain: the 1.4 plain script') or diag $e;
write_data('plain');
my $was = state_of('plain');
my $app_functions = join("\n", grep { !/^sandbox_store\._/ } split /\n/, $node->safe_psql('plain', $APP_FUNCTIONS));
($r, $e) = run_file('plain', $plain_update);
is($r, 0, "plain: the update script to 1.4.1") or diag $e;
for my $later (@later_updates)
{
	($r, $e) = run_file('plain', $later);
	is($r, 0, "plain: then $later") or diag $e;
}
check_updated('plain', 'plain', $was, $app_functions);

# Refused cleanly: a second run, and on a fresh 1.4.1.
my $catalog = q{SELECT count(*), md5(string_agg(p.oid::regprocedure::text || p.prosrc, ',' ORDER BY p.oid))
  FROM pg_proc p WHERE p.pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace)};
my $before = $node->safe_psql('plain', $catalog);
($r, $e) = run_file('plain', $plain_update);
isnt($r, 0, 'plain: the update script refuses to run a second time');
like($e, qr/this script updates sandbox_store from 1\.4, but the database has \Q$version\E/, '... saying what is there');
is($node->safe_psql('plain', $catalog), $before, '... and changes nothing');

$node->safe_psql('postgres', 'CREATE DATABASE fresh OWNER owner');
($r, $e) = run_file('fresh', $plain);
is($r, 0, "fresh: the $version plain script") or diag $e;
$before = $node->safe_psql('fresh', $catalog);
($r, $e) = run_file('fresh', $plain_update);
isnt($r, 0, "fresh: the update script refuses a fresh $version");
like($e, qr/this script updates sandbox_store from 1\.4, but the database has \Q$version\E/, '... saying what is there');
is($node->safe_psql('fresh', $catalog), $before, '... and changes nothing');

$node->stop;
done_testing();

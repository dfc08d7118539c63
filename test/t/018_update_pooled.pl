# 018_update_pooled.pl
#
# An update must not leave old rules running in a connection that a pool
# kept open across it (docs/upgrading.md, "Connections opened before an
# update").  Each part keeps a BackgroundPsql session open across the update,
# as an app server's pool keeps its connections:
#
#   C edition, 1.4 -> 1.4.1 (SB_EDITION unset): the released 1.4 library is
#     built from git (the 1.4 release commit) with the pg_config on PATH and
#     put into a private copy of the server, where a pooled session loads it.
#     The 1.4.1 library is then installed (a new file, as make install does)
#     and serves the database still at 1.4 by 1.4's rules (a released fence
#     gets SB001) in new sessions; ALTER EXTENSION ... UPDATE TO '1.4.1';
#     a claim is taken and released in a new session, whose fence a new
#     session cannot write with (SB001); the pooled session, still running
#     the 1.4 library, cannot either: every C function of 1.4.1 is bound to
#     a symbol the 1.4 library does not have (42883, could not find
#     function), and nothing is stored.  A new session works.
#   C edition, the 1.4.1 library's own check: a pooled session of the 1.4.1
#     library, the installed version made newer than the library (the
#     catalog edited, as a newer update would leave it): the next call is
#     refused with SB002, in a new transaction and within an open one (after
#     the update replaced a function); the same version again and it works.
#   C edition, 1.5.2 -> 1.6.0: the 1.5.2 library, built from git (the last
#     commit of 1.5.2) into the same private copy of the server; a run is
#     claimed and a pooled session of that library appends to its log, then
#     this tree's library is installed and another session runs ALTER
#     EXTENSION ... UPDATE TO '1.6.0'.  The driver's epoch is still current
#     (a new session appends with it) and max_driver_epoch holds it.  The
#     pooled session's next calls of C code are refused: run_log_append with
#     42883 (1.6.0 binds it to sandbox_run_log_append_v1_6_0, which the
#     1.5.2 library does not have), the others by the library's own check
#     (SB002), run_claim and checkpoint_acquire_writer included, whose
#     PL/pgSQL bodies call C helpers; nothing is appended, claimed or
#     stored.  The run functions that are PL/pgSQL and call no C function
#     run 1.6.0's bodies: run_update clears driverEpoch (1.5.2 refused it),
#     after which the old epoch is refused.  A new session, and the pooled
#     one reconnected, work by 1.6.0's rules: an append without an epoch is
#     refused, the next claim is above the cleared epoch.
#   SQL edition (plain script in every run; pg_tle too when SB_EDITION is
#     pg_tle): a pooled session that ran the 1.4 functions (their plans
#     cached) calls them after the 1.4 -> 1.4.1 update: the bodies are
#     1.4.1's (edition() says 1.4.1, the checkpoint functions call the moved
#     helpers), and the released fence is refused (SB001).  The same for
#     1.5.2 -> 1.6.0 with the run functions (the scripts of 1.5.2 as
#     released, test/upgrade/sql-edition-1.5.2): the pooled session claims
#     a run and appends at 1.5.2, where a clear of driverEpoch is refused;
#     after the update its edition() says 1.6.0, its epoch is still current
#     (it appends on; max_driver_epoch holds the epoch), an append without
#     an epoch is refused, a clear is accepted and then the old epoch is
#     refused (SB001), and its next claim is above the cleared epoch.

use strict;
use warnings FATAL => 'all';

use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Path qw(make_path);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreTest;
use Test::More;

my $root = "$FindBin::RealBin/../..";
# The tree's version (its library's): the library's own check (SB002) is
# shown against a version newer than it.
my ($tree_version) = slurp_file("$root/sandbox_store.control") =~ /^default_version = '([^']+)'/m;
my $newer_version = "$tree_version.1";
my $edition = $ENV{SB_EDITION} // 'c';

# The commit of the 1.4 release, and the last commit of 1.5.2.
my $release_1_4 = 'a198ec5bc1fdbb137821009909677a99e306b249';
my $release_1_5_2 = '08fd0fccbf501b8edfc66a352c6f4c90c4e859e1';

# git only reads the repository here: let it read a clone that another user
# owns (the suites run as postgres on a copy that root made).
$ENV{GIT_CONFIG_COUNT} = 1;
$ENV{GIT_CONFIG_KEY_0} = 'safe.directory';
$ENV{GIT_CONFIG_VALUE_0} = '*';

# The 1.4 library comes from git history: this tree's, or the repository
# SB_GIT_DIR names (make matrix tests copies of the tree, without .git); a
# tree without it (a release archive) cannot build it.
my $git = defined $ENV{SB_GIT_DIR} ? "git --git-dir='$ENV{SB_GIT_DIR}'" : "git -C '$root'";
plan skip_all => "no git history with the 1.4 release commit in $root"
  if system("$git cat-file -e '$release_1_4^{commit}' >/dev/null 2>&1") != 0;

# ($stderr, $stdout) of $sql in BackgroundPsql session $h, with SQLSTATEs.
sub bg_run
{
	my ($h, $sql) = @_;
	$h->{stderr} = '';
	my $out = $h->query("\\set VERBOSITY verbose\n$sql");
	return ($h->{stderr}, $out);
}

sub sqlstate_in
{
	my ($err) = @_;
	return $err eq '' ? 'ok' : ($err =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : "no SQLSTATE in: $err");
}

# A claim taken and released in a session of its own: its fence.
sub released_fence
{
	my ($node, $db, $key) = @_;
	return $node->safe_psql(
		$db, qq{
SELECT fence FROM sandbox_store.sandbox_claim('$key', '1 minute') \\gset
SELECT sandbox_store.sandbox_release('$key', owner_token) FROM sandbox_store.claims WHERE key = '$key' \\g /dev/null
SELECT :fence});
}

my $upsert = q{SELECT key FROM sandbox_store.sandbox_upsert('%s', 'prov', 'sbx-%s', 'thread-1', fence => %s)};

# The C edition's parts share one private copy of the server of the
# pg_config on PATH (each directory at the same path under $inst: the
# server finds its lib and share directories relative to its binaries),
# with this tree's files as make install left them: install_path (for
# PostgreSQL::Test::Cluster), tree_lib (a copy of this tree's library),
# install_lib->(file) (installs file as the server's library, as make
# install does: a new file under the library's name, never written over the
# file a running backend has mapped) and release_lib->(commit, version)
# (that release's library, built from git).
my $private_server;

sub private_server
{
	return $private_server if $private_server;
	my $pg_config = 'pg_config';
	my %dir = map { $_ => scalar(`$pg_config --$_`) } qw(bindir pkglibdir sharedir);
	chomp(%dir);
	die "pg_config on PATH answers nothing" unless $dir{bindir};
	my $tmp = PostgreSQL::Test::Utils::tempdir();
	my $inst = "$tmp/inst";
	for my $d (values %dir)
	{
		make_path("$inst$d");
		system_or_bail('cp', '-a', "$d/.", "$inst$d");
	}
	my $lib = "$inst$dir{pkglibdir}/sandbox_store.so";
	my $tree_lib = "$tmp/sandbox_store-tree.so";
	copy($lib, $tree_lib) or die "copy $lib: $!";
	$private_server = {
		install_path => dirname($dir{bindir}) =~ s{^}{$inst}r,
		tree_lib => $tree_lib,
		install_lib => sub {
			my ($from) = @_;
			copy($from, "$lib.new") or die "copy $from: $!";
			rename("$lib.new", $lib) or die "rename to $lib: $!";
		},
		release_lib => sub {
			my ($commit, $version) = @_;
			my $src = "$tmp/src-$version";
			make_path($src);
			system_or_bail("$git archive --format=tar $commit | tar -x -C '$src'");
			system_or_bail('make', '-s', '-C', $src, "PG_CONFIG=$pg_config", 'sandbox_store.so');
			return "$src/sandbox_store.so";
		},
	};
	return $private_server;
}

sub c_edition
{
	my $server = private_server();
	my $install_lib = $server->{install_lib};
	my $new_lib = $server->{tree_lib};

	# The 1.4 library, built from the release commit.
	$install_lib->($server->{release_lib}->($release_1_4, '1.4'));

	my $node = PostgreSQL::Test::Cluster->new('pooled_c', install_path => $server->{install_path});
	$node->init;
	$node->start;
	$node->safe_psql('postgres', "CREATE EXTENSION sandbox_store VERSION '1.4'");

	# (1) A pooled connection loads the 1.4 library.
	my $pooled = $node->background_psql('postgres', on_error_stop => 0);
	$pooled->query_safe(q{SELECT count(*) FROM sandbox_store.sandbox_get('k')});

	# (2) The 1.4.1 library is installed: it serves the database still at
	# 1.4 by 1.4's rules, in a new session.
	$install_lib->($new_lib);
	my $fence = released_fence($node, 'postgres', 'before-update');
	is(sqlstate_of($node, sprintf($upsert, 'before-update', 'x', $fence)),
		'SB001', 'the 1.4.1 library at 1.4: a released fence is refused (SB001)');
	my $live = $node->safe_psql('postgres', q{SELECT fence FROM sandbox_store.sandbox_claim('live-1.4', '1 minute')});
	is(sqlstate_of($node, sprintf($upsert, 'live-1.4', 'a', $live)),
		'ok', 'the 1.4.1 library at 1.4: a live claim\'s fence writes');
	is( $node->safe_psql('postgres', q{SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('live-1.4')}),
		'sbx-a', 'the 1.4.1 library at 1.4: the record was stored');

	# A second pooled session loads the 1.4.1 library at 1.4.
	my $pooled_new = $node->background_psql('postgres', on_error_stop => 0);
	$pooled_new->query_safe(q{SELECT count(*) FROM sandbox_store.sandbox_get('k')});

	$node->safe_psql('postgres', q{ALTER EXTENSION sandbox_store UPDATE TO '1.4.1'});
	is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'}),
		'1.4.1', 'updated to 1.4.1');

	# (3) A claim taken and released in a new session; a new session
	# writing with its fence gets SB001.
	$fence = released_fence($node, 'postgres', 'released');
	is(sqlstate_of($node, sprintf($upsert, 'released', 'new', $fence)),
		'SB001', 'a new session cannot write with the released fence (SB001)');

	# (4) The pooled session of the 1.4 library cannot either.
	my ($err) = bg_run($pooled, sprintf($upsert, 'released', 'old', $fence));
	is(sqlstate_in($err), '42883', 'the 1.4 library\'s session: the fenced upsert fails (42883)');
	like($err, qr/could not find function "sandbox_upsert_1_1_v1_4_1" in file/,
		'... because 1.4.1 binds a symbol the 1.4 library does not have');
	($err) = bg_run($pooled, q{SELECT count(*) FROM sandbox_store.sandbox_get('released')});
	is(sqlstate_in($err), '42883', 'the 1.4 library\'s session: a read fails too (42883)');
	($err) = bg_run($pooled,
		q{SELECT count(*) FROM sandbox_store.checkpoint_acquire_writer('thread-1', 60000)});
	like($err, qr/could not find function "sandbox_\w+_v1_4_1" in file/,
		'the 1.4 library\'s session: checkpoint_acquire_writer fails the same way');
	is($node->safe_psql('postgres', q{SELECT count(*) FROM sandbox_store.instances WHERE key = 'released'}),
		'0', 'nothing was stored with the released fence');

	# The 1.4.1 library's session goes on across the update, by 1.4.1's rules.
	($err) = bg_run($pooled_new, sprintf($upsert, 'released', 'pooled-new', $fence));
	is(sqlstate_in($err), 'SB001', 'the 1.4.1 library\'s pooled session: the released fence is refused (SB001)');
	($err) = bg_run($pooled_new, sprintf($upsert, 'live-1.4', 'b', $live));
	is(sqlstate_in($err), 'ok', 'the 1.4.1 library\'s pooled session: a live fence writes');

	# Reconnecting is the way out.
	$pooled->quit;
	$pooled = $node->background_psql('postgres', on_error_stop => 0);
	($err) = bg_run($pooled, sprintf($upsert, 'released', 'reconnected', $fence));
	is(sqlstate_in($err), 'SB001', 'reconnected: the released fence is refused (SB001)');

	# This tree's library's own check (from 1.4.1 on): the installed version newer than the
	# library, as the next update will leave it: a new extversion, and the C
	# functions made again (as every update script makes them).
	my $set_version = sub {
		my ($v) = @_;
		$node->safe_psql(
			'postgres', qq{
BEGIN;
UPDATE pg_catalog.pg_extension SET extversion = '$v' WHERE extname = 'sandbox_store';
DO \$\$
DECLARE f oid;
BEGIN
  FOR f IN SELECT p.oid FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
            WHERE p.pronamespace = 'sandbox_store'::regnamespace AND l.lanname = 'c' LOOP
    EXECUTE pg_catalog.pg_get_functiondef(f);
  END LOOP;
END
\$\$;
COMMIT;});
	};
	$set_version->($newer_version);
	($err) = bg_run($pooled_new, sprintf($upsert, 'live-1.4', 'c', $live));
	is(sqlstate_in($err), 'SB002', "installed $newer_version, library $tree_version: the next transaction's write is refused (SB002)");
	like(
		$err,
		qr/the sandbox_store library loaded in this session is older than the installed extension.*DETAIL:.*library of sandbox_store \Q$tree_version\E.*version \Q$newer_version\E.*HINT:\s+Reconnect/s,
		'... with the versions and the hint to reconnect');
	for my $call (
		q{SELECT count(*) FROM sandbox_store.sandbox_get('live-1.4')},
		q{SELECT sandbox_store.sandbox_lock_id('live-1.4')},
		q{SELECT count(*) FROM sandbox_store.checkpoint_acquire_writer('thread-2', 60000)})
	{
		($err) = bg_run($pooled_new, $call);
		is(sqlstate_in($err), 'SB002', "installed $newer_version, library $tree_version: refused: $call");
	}
	is(sqlstate_of($node, q{SELECT count(*) FROM sandbox_store.sandbox_get('live-1.4')}),
		'SB002', 'a new session of the 1.4.1 library is refused as well');

	# Within a transaction that was open when the update committed: the
	# update replaced a function, and the next call sees it.
	$set_version->($tree_version);
	($err) = bg_run($pooled_new, q{BEGIN; SELECT count(*) FROM sandbox_store.sandbox_get('live-1.4');});
	is(sqlstate_in($err), 'ok', 'library and extension at the same version again: calls work');
	$node->safe_psql('postgres', qq{
BEGIN;
UPDATE pg_catalog.pg_extension SET extversion = '$newer_version' WHERE extname = 'sandbox_store';
ALTER FUNCTION sandbox_store.sandbox_get(text) ROWS 2;
COMMIT;});
	($err) = bg_run($pooled_new, sprintf($upsert, 'live-1.4', 'd', $live));
	is(sqlstate_in($err), 'SB002', 'an update committed during an open transaction: its next call is refused (SB002)');
	bg_run($pooled_new, 'ROLLBACK');
	$set_version->($tree_version);
	($err) = bg_run($pooled_new, sprintf($upsert, 'live-1.4', 'e', $live));
	is(sqlstate_in($err), 'ok', 'the same version again: the pooled session writes');
	is( $node->safe_psql('postgres', q{SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('live-1.4')}),
		'sbx-e', 'the write landed');

	$pooled->quit;
	$pooled_new->quit;
	$node->stop;
	return;
}

# The C edition, 1.5.2 -> 1.6.0: a pooled session of the 1.5.2 library
# (built from its last commit) across ALTER EXTENSION ... UPDATE TO '1.6.0'
# run in another session.
sub c_edition_1_5_2
{
	my $server = private_server();
	$server->{install_lib}->($server->{release_lib}->($release_1_5_2, '1.5.2'));
	my $node = PostgreSQL::Test::Cluster->new('pooled_c_1_5_2', install_path => $server->{install_path});
	$node->init;
	$node->start;
	$node->safe_psql('postgres', "CREATE EXTENSION sandbox_store VERSION '1.5.2'");
	$node->safe_psql('postgres', q{SELECT sandbox_store.run_create_or_resume('run-1', 'thread-1', 1000)});
	my $epoch = $node->safe_psql('postgres', q{SELECT sandbox_store.run_claim('run-1')});

	# (1) A pooled connection loads the 1.5.2 library and calls the run
	# functions (run_log_append is C there, the others PL/pgSQL).
	my $pooled = $node->background_psql('postgres', on_error_stop => 0);
	my ($err, $out) = bg_run($pooled, qq{SELECT sandbox_store.run_log_append('run-1', '[{"a": 1}]', $epoch)});
	is("$err$out", '{1}', '1.5.2 library: the pooled session appends (seq 1)');
	($err, $out) = bg_run($pooled, q{SELECT count(*) FROM sandbox_store.sandbox_get('k')});
	is("$err$out", '0', '1.5.2 library: the pooled session reads a record');
	($err) = bg_run($pooled, qq{SELECT sandbox_store.run_update('run-1', '{"driverEpoch": null}', $epoch)});
	is(sqlstate_in($err), 'SB001', '1.5.2 library: a clear of driverEpoch is refused (SB001)');

	# (2) This tree's library is installed, and another session updates.
	$server->{install_lib}->($server->{tree_lib});
	$node->safe_psql('postgres', q{ALTER EXTENSION sandbox_store UPDATE TO '1.6.0'});
	is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'}),
		'1.6.0', 'updated to 1.6.0');
	is( $node->safe_psql('postgres',
			q{SELECT driver_epoch || ' ' || max_driver_epoch FROM sandbox_store.runs WHERE run_id = 'run-1'}),
		"$epoch $epoch", 'the run keeps its epoch across the update, and max_driver_epoch holds it');
	is( $node->safe_psql('postgres', qq{SELECT sandbox_store.run_log_append('run-1', '[{"a": 2}]', $epoch)}),
		'{2}', 'a new session: the driver\'s epoch is still current (seq 2)');
	is(sqlstate_of($node, q{SELECT sandbox_store.run_log_append('run-1', '[{"a": 0}]')}),
		'SB001', 'a new session: an append without an epoch is refused (SB001)');

	# (3) The pooled session, still running the 1.5.2 library: its C
	# functions refuse.  run_log_append is bound to a symbol of 1.6.0, which
	# the 1.5.2 library does not have (42883); the others by the library's
	# own check (SB002).
	($err) = bg_run($pooled, qq{SELECT sandbox_store.run_log_append('run-1', '[{"b": 1}]', $epoch)});
	is(sqlstate_in($err), '42883', 'the 1.5.2 library\'s session: run_log_append fails (42883)');
	like($err, qr/could not find function "sandbox_run_log_append_v1_6_0" in file/,
		'... because 1.6.0 binds a symbol the 1.5.2 library does not have');
	($err) = bg_run($pooled, q{SELECT count(*) FROM sandbox_store.sandbox_get('k')});
	is(sqlstate_in($err), 'SB002', 'the 1.5.2 library\'s session: sandbox_get is refused (SB002)');
	like(
		$err,
		qr/the sandbox_store library loaded in this session is older than the installed extension.*DETAIL:.*library of sandbox_store 1\.5\.2, and the extension in this database is at version 1\.6\.0/s,
		'... naming the library 1.5.2 and the installed 1.6.0');
	for my $call (
		q{SELECT fence FROM sandbox_store.sandbox_claim('k', '1 minute')},
		q{SELECT count(*) FROM sandbox_store.checkpoint_acquire_writer('thread-1', 60000)},
		q{SELECT sandbox_store.run_claim('run-1')})
	{
		($err) = bg_run($pooled, $call);
		is(sqlstate_in($err), 'SB002', "the 1.5.2 library's session: refused (SB002): $call");
	}
	is( $node->safe_psql('postgres',
			q{SELECT (SELECT last_seq FROM sandbox_store.run_logs WHERE run_id = 'run-1') || ' '
			  || (sandbox_store.run_get('run-1') ->> 'driverEpoch') || ' '
			  || (SELECT count(*) FROM sandbox_store.leases)}),
		"2 $epoch 0", 'nothing was appended, claimed or stored by the refused calls');

	# The run functions that are PL/pgSQL and call no C function are not
	# refused: they run 1.6.0's bodies (no rule of 1.5.2 is applied): a
	# clear of driverEpoch is accepted, and the old epoch is then refused.
	($err, $out) = bg_run($pooled, qq{SELECT sandbox_store.run_update('run-1', '{"cancelRequested": true}', $epoch)});
	is("$err$out", 't', 'the 1.5.2 library\'s session: run_update (PL/pgSQL) writes with the current epoch');
	($err, $out) = bg_run($pooled, qq{SELECT sandbox_store.run_update('run-1', '{"driverEpoch": null}', $epoch)});
	is("$err$out", 't', 'the 1.5.2 library\'s session: run_update runs 1.6.0\'s body (a clear of driverEpoch is accepted)');
	($err, $out) = bg_run($pooled, qq{SELECT sandbox_store.run_update('run-1', '{"usage": {"n": 1}}', $epoch)});
	is(sqlstate_in($err), 'SB001', 'the 1.5.2 library\'s session: after the clear its epoch is refused (SB001)');
	($err, $out) = bg_run($pooled, q{SELECT version FROM sandbox_store.edition()});
	is("$err$out", '1.6.0', 'the 1.5.2 library\'s session: edition() says 1.6.0');
	is( $node->safe_psql('postgres',
			q{SELECT (sandbox_store.run_get('run-1') - 'runId' - 'threadId' - 'startedAt')::text
			  || ' ' || max_driver_epoch FROM sandbox_store.runs WHERE run_id = 'run-1'}),
		qq[{"status": "running", "cancelRequested": true} $epoch],
		'... the record has no driverEpoch, and the run keeps the highest it had');

	# A new session works, by 1.6.0's rules; so does the pooled one once
	# reconnected.
	is(sqlstate_of($node, qq{SELECT sandbox_store.run_log_append('run-1', '[{"c": 0}]', $epoch)}),
		'SB001', 'a new session: the cleared epoch gets SB001');
	is(sqlstate_of($node, q{SELECT sandbox_store.run_log_append('run-1', '[{"c": 0}]')}),
		'SB001', 'a new session: so does an append without an epoch');
	my $new_epoch = $node->safe_psql('postgres', q{SELECT sandbox_store.run_claim('run-1')});
	cmp_ok($new_epoch, '>', $epoch, "a new session claims run-1: a new epoch ($new_epoch) above the cleared $epoch");
	$pooled->quit;
	$pooled = $node->background_psql('postgres', on_error_stop => 0);
	($err, $out) = bg_run($pooled, qq{SELECT sandbox_store.run_log_append('run-1', '[{"c": 1}]', $new_epoch)});
	is("$err$out", '{3}', 'reconnected: the pooled session appends with the new epoch (seq 3)');
	$pooled->quit;
	$node->stop;
	return;
}

# The SQL edition: $install runs the 1.4 script(s) in $db, $update the
# 1.4 -> 1.4.1 update; $psql_as connects as the installing role.
sub sql_edition
{
	my ($node, $db, $how, $install, $update) = @_;
	$install->();
	my $pooled = $node->background_psql($db, on_error_stop => 0);
	my ($err, $out) = bg_run($pooled, q{SELECT version FROM sandbox_store.edition()});
	is($out, '1.4', "$how: the pooled session runs 1.4");
	# Plans of the 1.4 functions cached in the session, the checkpoint
	# functions' included.
	my $live = $node->safe_psql($db, q{SELECT fence FROM sandbox_store.sandbox_claim('live', '1 minute')});
	for (1 .. 2)
	{
		($err) = bg_run($pooled, sprintf($upsert, 'live', 'a', $live));
		is(sqlstate_in($err), 'ok', "$how: the pooled session writes at 1.4");
		($err) = bg_run($pooled,
			sprintf(q{SELECT count(*) FROM sandbox_store.checkpoint_acquire_writer('thread-%s', 60000)}, "old-$_"));
		is(sqlstate_in($err), 'ok', "$how: the pooled session takes the checkpoint writer at 1.4");
	}

	$update->();
	my $fence = released_fence($node, $db, 'released');
	is(sqlstate_of_db($node, $db, sprintf($upsert, 'released', 'new', $fence)),
		'SB001', "$how: a new session cannot write with the released fence (SB001)");

	($err, $out) = bg_run($pooled, q{SELECT version FROM sandbox_store.edition()});
	is($out, '1.4.1', "$how: the pooled session runs 1.4.1's bodies after the update");
	($err) = bg_run($pooled, sprintf($upsert, 'released', 'old', $fence));
	is(sqlstate_in($err), 'SB001', "$how: the pooled session cannot write with the released fence (SB001)");
	($err) = bg_run($pooled,
		q{SELECT count(*) FROM sandbox_store.checkpoint_acquire_writer('thread-new', 60000)});
	is(sqlstate_in($err), 'ok',
		"$how: the pooled session's checkpoint_acquire_writer runs 1.4.1's body (the moved helpers)");
	is( $node->safe_psql(
			$db,
			q{SELECT count(*) FROM pg_proc WHERE pronamespace = 'sandbox_store'::regnamespace AND proname LIKE '\_%'}),
		'0', "$how: no helper is left in schema sandbox_store");
	($err) = bg_run($pooled, sprintf($upsert, 'live', 'b', $live));
	is(sqlstate_in($err), 'ok', "$how: the pooled session writes with a live fence");
	$pooled->quit;
	return;
}

# The SQL edition, 1.5.2 -> 1.6.0: $install runs 1.5.2's script(s) in $db,
# $update the update to 1.6.0.  A pooled session that ran 1.5.2's run
# functions (their plans cached) calls them after the update: it gets 1.6.0's
# behaviour, and the run's epoch fence is kept.
sub sql_edition_runs
{
	my ($node, $db, $how, $install, $update) = @_;
	$install->();
	my $pooled = $node->background_psql($db, on_error_stop => 0);
	my ($err, $out) = bg_run($pooled, q{SELECT version FROM sandbox_store.edition()});
	is($out, '1.5.2', "$how: the pooled session runs 1.5.2");
	($err) = bg_run($pooled, q{SELECT sandbox_store.run_create_or_resume('run-1', 'thread-1', 1000)});
	is(sqlstate_in($err), 'ok', "$how: the pooled session creates a run at 1.5.2");
	($err, my $epoch) = bg_run($pooled, q{SELECT sandbox_store.run_claim('run-1')});
	is(sqlstate_in($err), 'ok', "$how: the pooled session claims it at 1.5.2 (epoch $epoch)");
	# Plans of the 1.5.2 run functions cached in the session.
	for my $i (1 .. 2)
	{
		($err, $out) = bg_run($pooled, qq{SELECT sandbox_store.run_log_append('run-1', '[{"a": $i}]', $epoch)});
		is("$err$out", "{$i}", "$how: the pooled session appends at 1.5.2 (seq $i)");
	}
	($err) = bg_run($pooled, qq{SELECT sandbox_store.run_update('run-1', '{"driverEpoch": null}', $epoch)});
	is(sqlstate_in($err), 'SB001', "$how: at 1.5.2 a clear of driverEpoch is refused (SB001)");

	$update->();
	is($node->safe_psql($db, q{SELECT version FROM sandbox_store.edition()}), '1.6.0', "$how: updated to 1.6.0");
	is($node->safe_psql($db, q{SELECT driver_epoch || ' ' || max_driver_epoch FROM sandbox_store.runs}),
		"$epoch $epoch", "$how: the run keeps its epoch, and max_driver_epoch holds it");

	# The pooled session's next calls run 1.6.0's bodies, under the same
	# fence.
	($err, $out) = bg_run($pooled, q{SELECT version FROM sandbox_store.edition()});
	is($out, '1.6.0', "$how: the pooled session's edition() says 1.6.0");
	($err, $out) = bg_run($pooled, qq{SELECT sandbox_store.run_log_append('run-1', '[{"a": 3}]', $epoch)});
	is("$err$out", '{3}', "$how: the pooled session's epoch is still current: it appends on (seq 3)");
	($err) = bg_run($pooled, q{SELECT sandbox_store.run_log_append('run-1', '[{"a": 0}]')});
	is(sqlstate_in($err), 'SB001', "$how: the pooled session's append without an epoch is refused (SB001)");
	($err, $out) = bg_run($pooled, qq{SELECT sandbox_store.run_update('run-1', '{"driverEpoch": null}', $epoch)});
	is("$err$out", 't', "$how: the pooled session's run_update clears driverEpoch (1.6.0's body)");
	($err) = bg_run($pooled, qq{SELECT sandbox_store.run_log_append('run-1', '[{"b": 0}]', $epoch)});
	is(sqlstate_in($err), 'SB001', "$how: the pooled session's append with the cleared epoch gets SB001");
	($err) = bg_run($pooled, q{SELECT sandbox_store.run_log_append('run-1', '[{"b": 0}]')});
	is(sqlstate_in($err), 'SB001', "$how: so does one without an epoch");
	($err, my $new_epoch) = bg_run($pooled, q{SELECT sandbox_store.run_claim('run-1')});
	is(sqlstate_in($err), 'ok', "$how: the pooled session claims the run again");
	cmp_ok($new_epoch, '>', $epoch, "$how: its new epoch ($new_epoch) is above the cleared one ($epoch)");
	($err, $out) = bg_run($pooled, qq{SELECT sandbox_store.run_log_append('run-1', '[{"b": 1}]', $new_epoch)});
	is("$err$out", '{4}', "$how: and one with the new epoch goes on after the last seq (4)");
	$pooled->quit;
	return;
}

sub sqlstate_of_db
{
	my ($node, $db, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, "\\set VERBOSITY verbose\n$sql");
	return 'ok' if $ret == 0;
	return $err =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : "no SQLSTATE in: $err";
}

if ($edition eq 'c')
{
	if (system("$git cat-file -e $release_1_4^{commit} 2>/dev/null") != 0)
	{
		# A tree without its history (the release archive): only the SQL
		# edition's part can run.
		note "no git history: the C edition's part is skipped";
	}
	else
	{
		c_edition();
		c_edition_1_5_2();
	}
}

# The SQL edition: the plain script in every run, pg_tle when SB_EDITION is
# pg_tle.
my $node = PostgreSQL::Test::Cluster->new('pooled_sql');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_tle'") if $edition eq 'pg_tle';
$node->start;
$node->safe_psql('postgres', q{CREATE ROLE owner LOGIN; CREATE DATABASE plain OWNER owner;});
my $old = "$root/test/upgrade/sql-edition-1.4";
my ($plain_update) = glob("$root/dist/sandbox_store--1.4--1.4.1.sql");
BAIL_OUT('no plain update script in dist/: run make sql-edition') unless defined $plain_update;
my $run_file = sub {
	my ($db, $file) = @_;
	my ($r, $o, $e) = $node->psql($db, undef,
		extra_params => [ '-U', 'owner', '-v', 'ON_ERROR_STOP=1', '-f', $file ]);
	die "$file in $db failed: $e" if $r;
};
{
	local $ENV{PGUSER} = 'owner';
	sql_edition(
		$node, 'plain', 'plain',
		sub { $run_file->('plain', "$old/sandbox_store-1.4.sql") },
		sub { $run_file->('plain', $plain_update) });
}
if ($edition eq 'pg_tle')
{
	my $tle_script = edition_script('pg_tle');
	$node->safe_psql('postgres', q{CREATE DATABASE tle OWNER owner});
	$node->safe_psql('tle', 'CREATE EXTENSION pg_tle; GRANT pgtle_admin TO owner');
	local $ENV{PGUSER} = 'owner';
	sql_edition(
		$node, 'tle', 'pg_tle',
		sub {
			$run_file->('tle', "$old/sandbox_store-1.4-pg_tle.sql");
			$node->safe_psql('tle', 'CREATE EXTENSION sandbox_store');
		},
		sub {
			$run_file->('tle', $tle_script);
			$node->safe_psql('tle', q{ALTER EXTENSION sandbox_store UPDATE TO '1.4.1'});
		});
}

# 1.5.2 -> 1.6.0, in databases of their own.
my $old_1_5_2 = "$root/test/upgrade/sql-edition-1.5.2";
my ($plain_update_1_6_0) = glob("$root/dist/sandbox_store--1.5.2--1.6.0.sql");
BAIL_OUT('no plain update script to 1.6.0 in dist/: run make sql-edition') unless defined $plain_update_1_6_0;
$node->safe_psql('postgres', q{CREATE DATABASE plain_runs OWNER owner});
{
	local $ENV{PGUSER} = 'owner';
	sql_edition_runs(
		$node, 'plain_runs', 'plain, 1.5.2 -> 1.6.0',
		sub { $run_file->('plain_runs', "$old_1_5_2/sandbox_store-1.5.2.sql") },
		sub { $run_file->('plain_runs', $plain_update_1_6_0) });
}
if ($edition eq 'pg_tle')
{
	my $tle_script = edition_script('pg_tle');
	$node->safe_psql('postgres', q{CREATE DATABASE tle_runs OWNER owner});
	$node->safe_psql('tle_runs', 'CREATE EXTENSION pg_tle');
	local $ENV{PGUSER} = 'owner';
	sql_edition_runs(
		$node, 'tle_runs', 'pg_tle, 1.5.2 -> 1.6.0',
		sub {
			$run_file->('tle_runs', "$old_1_5_2/sandbox_store-1.5.2-pg_tle.sql");
			$node->safe_psql('tle_runs', 'CREATE EXTENSION sandbox_store');
		},
		sub {
			$run_file->('tle_runs', $tle_script);
			$node->safe_psql('tle_runs', q{ALTER EXTENSION sandbox_store UPDATE TO '1.6.0'});
		});
}
$node->stop;

done_testing();

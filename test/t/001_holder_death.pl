# 001_holder_death.pl
#
# A sandbox_ensure lock holder whose backend dies releases the key's lock at
# once, and nothing it did not commit is visible to the waiter that gets the
# key next (docs/reference.md, invariants: "A lock holder that commits, rolls back, errors, or whose
# connection dies releases the lock at once; nothing it did not commit is
# visible"; "No leaked locks").
#
# Three ways to die, each with a waiter blocked on the key beforehand:
#   1. the holder took the key (ensure -> create) and its backend is
#      terminated (pg_terminate_backend);
#   2. the holder also upserted a record, then its backend is terminated
#      before COMMIT;
#   3. the holder upserted a record, then its client (the app server) is
#      killed: the backend sees the connection drop and exits.
# In each case the waiter must get "create" promptly, there must be no
# record, and pg_locks must show no lock of the extension afterwards.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SandboxStoreTest;

# The extension's advisory locks carry this in pg_locks.objsubid ("SB").
# "At once": the waiter must have its answer this soon after the holder dies.
my $PROMPT_SECONDS = 10;

my $node = PostgreSQL::Test::Cluster->new('holder_death');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION sandbox_store');

# SQL literal of a string.

# sandbox_store.key_locks rows of the lock on $key: "pid:granted" lines.
sub key_lock_rows
{
	my ($key) = @_;
	my $k = lit($key);
	return $node->safe_psql(
		'postgres', qq{
		SELECT string_agg(pid || ':' || granted, ' ' ORDER BY granted DESC, pid)
		  FROM sandbox_store.key_locks
		 WHERE lock_id = sandbox_store.sandbox_lock_id($k)});
}

# The keys of the three cases have a positive (T1) and negative (T2, T3)
# sandbox_lock_id, so the lock_id arithmetic of sandbox_store.key_locks is
# checked for both signs.

# A session that BEGINs, takes $key with sandbox_ensure (which must say
# create) and, if $upsert, records a sandbox; its transaction stays open.
sub start_holder
{
	my ($name, $key, $upsert) = @_;
	my $k = lit($key);
	my $h = $node->background_psql('postgres');
	my $pid = $h->query_safe('SELECT pg_backend_pid()');
	$h->query_safe('BEGIN');
	is( $h->query_safe(
			"SELECT action FROM sandbox_store.sandbox_ensure(key => $k, run_id => 'run-holder')"
		),
		'create',
		"$name: holder's ensure of a new key says create");
	if ($upsert)
	{
		$h->query_safe(
			"SELECT sandbox_store.sandbox_upsert(key => $k, provider => 'provider-x',
			        provider_sandbox_id => 'sbx-uncommitted', thread_id => 'thread-1',
			        latest_run_id => 'run-holder')");
		is( $h->query_safe(
				"SELECT provider_sandbox_id FROM sandbox_store.sandbox_get($k)"),
			'sbx-uncommitted',
			"$name: holder sees its own uncommitted record");
	}
	is(key_lock_rows($key), "$pid:true",
		"$name: pg_locks shows the holder (pid $pid) holding the key");
	return ($h, $pid);
}

# A second session that BEGINs and calls sandbox_ensure on $key; returns
# once pg_stat_activity shows it waiting on a lock, blocked by $holder_pid.
sub start_waiter
{
	my ($name, $key, $holder_pid) = @_;
	my $k = lit($key);
	my $w = $node->background_psql('postgres');
	my $pid = $w->query_safe('SELECT pg_backend_pid()');
	$w->query_safe('BEGIN');
	$w->query_until(
		qr/calling ensure/, qq{\\echo calling ensure
SELECT action || ':' || coalesce(provider_sandbox_id, '<no record>')
  FROM sandbox_store.sandbox_ensure(key => $k, run_id => 'run-waiter');
\\echo ensure returned
});
	ok( $node->poll_query_until(
			'postgres',
			"SELECT wait_event_type = 'Lock' AND pg_blocking_pids(pid) = ARRAY[$holder_pid]
			   FROM pg_catalog.pg_stat_activity WHERE pid = $pid"),
		"$name: waiter (pid $pid) waits for the lock held by $holder_pid");
	is( key_lock_rows($key),
		"$holder_pid:true $pid:false",
		"$name: pg_locks shows holder granted, waiter not granted");
	# Nothing came back yet: the waiter is still inside sandbox_ensure.
	$w->{run}->pump_nb;
	is($w->{stdout}, '', "$name: waiter's ensure has not returned");
	return ($w, $pid);
}

# The waiter's answer, "action:provider_sandbox_id" (waits for it), and how
# many seconds it took from $since.
sub waiter_answer
{
	my ($w, $since) = @_;
	my $out = eval { $w->query_until(qr/ensure returned\n/, '') };
	my $elapsed = time() - $since;
	if (!defined $out)
	{
		fail("the waiter's sandbox_ensure returned (it did not: $@)");
		die "waiter hung: the holder's lock was not released";
	}
	$out =~ s/ensure returned\n//;
	chomp $out;
	return ($out, $elapsed);
}

# After the holder died: the waiter has create and holds the key; once it
# ends its transaction no lock of the extension is left and no record exists.
sub check_after_death
{
	my ($name, $key, $holder_pid, $w, $waiter_pid, $since) = @_;
	my $k = lit($key);

	my ($answer, $elapsed) = waiter_answer($w, $since);
	is($answer, 'create:<no record>',
		"$name: waiter gets create and no record once the holder is gone");
	cmp_ok($elapsed, '<', $PROMPT_SECONDS,
		"$name: waiter answered promptly after the holder died");
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) = 0 FROM pg_catalog.pg_stat_activity WHERE pid = $holder_pid"),
		"$name: holder backend $holder_pid is gone");
	is(key_lock_rows($key), "$waiter_pid:true",
		"$name: pg_locks shows only the waiter holding the key now");
	is($node->safe_psql('postgres', "SELECT count(*) FROM sandbox_store.sandbox_get($k)"),
		'0', "$name: no record is visible to another session");
	is($w->query_safe("SELECT count(*) FROM sandbox_store.sandbox_get($k)"),
		'0', "$name: no record is visible to the waiter");
	$w->query_safe('ROLLBACK');
	is($node->safe_psql('postgres', $EXT_LOCKS),
		'0', "$name: no lock of the extension is left in pg_locks");
	$w->quit;
}

# Case 1: the holder took the key and its backend is terminated.
{
	my $name = 'terminated holder';
	my $key = 'tenant-1/thread-T1/default/provider-x';
	my ($h, $hpid) = start_holder($name, $key, 0);
	my ($w, $wpid) = start_waiter($name, $key, $hpid);
	my $since = time();
	is($node->safe_psql('postgres', "SELECT pg_terminate_backend($hpid)"),
		't', "$name: pg_terminate_backend($hpid)");
	check_after_death($name, $key, $hpid, $w, $wpid, $since);
	$h->{run}->kill_kill;
}

# Case 2: the holder upserted a record, then its backend is terminated
# before COMMIT.
{
	my $name = 'terminated holder after upsert';
	my $key = 'tenant-1/thread-T2/default/provider-x';
	my ($h, $hpid) = start_holder($name, $key, 1);
	my ($w, $wpid) = start_waiter($name, $key, $hpid);
	my $since = time();
	is($node->safe_psql('postgres', "SELECT pg_terminate_backend($hpid)"),
		't', "$name: pg_terminate_backend($hpid)");
	check_after_death($name, $key, $hpid, $w, $wpid, $since);
	$h->{run}->kill_kill;
}

# Case 3: the holder upserted a record, then its client (the app server)
# dies: the backend sees the connection drop, aborts and exits.
{
	my $name = 'holder whose client died';
	my $key = 'tenant-1/thread-T3/default/provider-x';
	my ($h, $hpid) = start_holder($name, $key, 1);
	my ($w, $wpid) = start_waiter($name, $key, $hpid);
	my $since = time();
	$h->{run}->kill_kill;    # SIGTERM, then SIGKILL, to the psql client
	check_after_death($name, $key, $hpid, $w, $wpid, $since);
}

# The cluster is sane: a fresh ensure of a case's key, in a transaction that
# commits a record, then resumes it; and the server log shows no crash.
{
	my $k = lit('tenant-1/thread-T1/default/provider-x');
	$node->safe_psql(
		'postgres', qq{
		BEGIN;
		SELECT action FROM sandbox_store.sandbox_ensure(key => $k, run_id => 'run-2');
		SELECT sandbox_store.sandbox_upsert(key => $k, provider => 'provider-x',
		       provider_sandbox_id => 'sbx-2', thread_id => 'thread-1', latest_run_id => 'run-2');
		COMMIT;});
	is( $node->safe_psql(
			'postgres',
			"SELECT action || ':' || provider_sandbox_id FROM sandbox_store.sandbox_ensure(key => $k, run_id => 'run-3')"
		),
		'resume:sbx-2',
		'after the deaths, a committed record of the key is resumed');
	is($node->safe_psql('postgres', $EXT_LOCKS),
		'0', 'no lock of the extension is left at the end');
	my $log = slurp_file($node->logfile);
	unlike($log, qr/terminated by signal|was terminated by exception/,
		'no backend crashed');
}

$node->stop;
done_testing();

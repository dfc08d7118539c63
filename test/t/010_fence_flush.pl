# 010_fence_flush.pl
#
# A fence is never handed out twice, whichever path hands it out, even when
# the server crashes before the transaction that took it commits; and the
# same of a run's driver epoch (1.5.2: run_claim returns the run's epoch
# plus a number drawn from fence_seq; 1.6.0: the highest epoch the run ever
# had, which is its current one in these cases).
#
# The fence sequence WAL-logs only every 32nd value, and nothing flushes
# that WAL record before the transaction's commit is flushed: if the server
# dies first, the sequence comes back below a fence a client has already
# seen, and hands it out again.  The extension therefore makes the WAL that
# covers a fence durable before the fence leaves the server.
#
# Each case below first advances the sequence so that the next value is the
# one that WAL-logs it, then hands out a fence one way, lets the client read
# it, and stops the server at once (immediate: WAL still in wal_buffers is
# lost; the WAL writer is slowed to 10 s so that it does not write it out
# meanwhile).  After the restart, a new claim's fence must be greater than
# the one the client saw.  The cases:
#
#   - sandbox_ensure with a lease, and sandbox_claim, in an open transaction,
#     on a new key and as the takeover of an expired claim;
#   - sandbox_claim outside a transaction block with synchronous_commit off
#     (its commit is not flushed when the client reads the fence);
#   - many claims streamed from one autocommit statement (COPY ... TO
#     STDOUT) that is still running when the server stops: the client has
#     fences of claims whose commit never happened;
#   - a key whose fence is far above the sequence (an admin's setval, a
#     Citus shard move, a logical-replication switchover: sequences are not
#     replicated): its new fence must still be a value the sequence handed
#     out, so that the flushed WAL covers it, in an open transaction and in
#     autocommit with synchronous_commit off;
#   - run_claim of a run claimed before, in autocommit with
#     synchronous_commit off (the claim's commit is made durable all the
#     same: after the restart the run's epoch is the one the client saw)
#     and in an open transaction (the claim is lost with it): either way a
#     claim after the restart returns an epoch above the one the client
#     saw, and a write with the one it saw gets SB001.  As for the fences,
#     the sequence is first advanced so that the claim's own draw is the
#     one that WAL-logs it: otherwise the record an earlier draw logged
#     (and a commit flushed) would cover the drawn number by luck, and the
#     case could not fail.  (Under the rule of 1.5 and 1.5.1, "the current
#     epoch + 1", both fail: the lost claim's epoch is handed out again.)
#   - run_update raising driverEpoch by a patch, in autocommit with
#     synchronous_commit off: the raise is still there after the restart
#     (a claim's commit is durable), and the epoch it replaced gets SB001.
#
# The run cases check relations between the epochs the client was given,
# never a number computed by the test (docs/reference.md, "The driver epoch
# fence").

use strict;
use warnings FATAL => 'all';

use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SandboxStoreTest;

my $node = PostgreSQL::Test::Cluster->new('fence_flush');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
wal_writer_delay = 10s
wal_writer_flush_after = 0
});
$node->start;
install_sandbox_store($node);
# Where a fence seen before its commit may repeat after a crash (the SQL
# edition on 15 and 16), those checks are TODO, with the reason.
my $before_commit_todo = unflushed_fence_todo($node);

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $n = 0;
sub new_key { $n++; return "ff-$n"; }

# Advance the sequence so that its next value WAL-logs it (log_cnt 0).
sub next_value_logs
{
	my $log_cnt = sql('SELECT log_cnt FROM sandbox_store.fence_seq');
	sql("SELECT nextval('sandbox_store.fence_seq') FROM generate_series(1, $log_cnt)")
	  if $log_cnt > 0;
	return sql('SELECT log_cnt FROM sandbox_store.fence_seq') == 0;
}

# A claim on a key whose previous claim has expired (a takeover).
sub expired_key
{
	my $key = new_key();
	sql("SELECT fence FROM sandbox_store.sandbox_claim(key => '$key', lease => '1 millisecond')");
	usleep(20_000);
	return $key;
}

sub crash_restart
{
	$node->stop('immediate');
	$node->start;
}

# After a crash: a new claim's fence is above $seen.
sub check_after_restart
{
	my ($name, $seen) = @_;
	my $key = new_key();
	my $next =
	  sql("SELECT fence FROM sandbox_store.sandbox_claim(key => '$key', lease => '1 hour')");
	cmp_ok($next, '>', $seen, "$name: the first fence after the restart ($next) is above the one the client saw ($seen)");
}

# Open-transaction cases: BEGIN, hand out a fence, crash.
my @open_cases = (
	[ 'sandbox_ensure with a lease, new key', sub { new_key() },
	  "SELECT fence FROM sandbox_store.sandbox_ensure(key => '%s', run_id => 'r', lease => '1 hour')" ],
	[ 'sandbox_claim, new key', sub { new_key() },
	  "SELECT fence FROM sandbox_store.sandbox_claim(key => '%s', lease => '1 hour')" ],
	[ 'sandbox_ensure with a lease, takeover of an expired claim', \&expired_key,
	  "SELECT fence FROM sandbox_store.sandbox_ensure(key => '%s', run_id => 'r', lease => '1 hour')" ],
	[ 'sandbox_claim, takeover of an expired claim', \&expired_key,
	  "SELECT fence FROM sandbox_store.sandbox_claim(key => '%s', lease => '1 hour')" ],
);

foreach my $case (@open_cases)
{
	my ($name, $make_key, $template) = @$case;
	my $key = $make_key->();
	ok(next_value_logs(), "$name: the next fence WAL-logs the sequence");
	my $h = $node->background_psql('postgres');
	$h->query_safe('BEGIN');
	my $fence = $h->query_safe(sprintf($template, $key));
	like($fence, qr/^\d+$/, "$name: a fence in an open transaction");
	crash_restart();
	$h->{run}->kill_kill;
	local $TODO = $before_commit_todo;
	check_after_restart($name, $fence);
}

# Outside a transaction block, synchronous_commit off.
{
	my $name = 'sandbox_claim, autocommit, synchronous_commit off';
	my $key = new_key();
	ok(next_value_logs(), "$name: the next fence WAL-logs the sequence");
	my $fence = sql("SET synchronous_commit = off;"
		  . " SELECT fence FROM sandbox_store.sandbox_claim(key => '$key', lease => '1 hour')");
	crash_restart();
	check_after_restart($name, $fence);
}

# Fences streamed by one autocommit statement that has not ended: the
# statement's last row waits for an advisory lock another session holds.
{
	my $name = 'claims streamed by a running autocommit statement';
	ok(next_value_logs(), "$name: the next fence WAL-logs the sequence");
	my $blocker = $node->background_psql('postgres');
	$blocker->query_safe('SELECT pg_advisory_lock(4242)');
	my $copy =
	    "COPY (SELECT f.fence::text || ' ' || repeat('.', 2000)"
	  . " FROM generate_series(1, 200) g,"
	  . " LATERAL sandbox_store.sandbox_claim(key => 'stream-' || g, lease => '1 hour') f"
	  . " UNION ALL SELECT pg_advisory_lock(4242)::text) TO STDOUT";
	my ($out, $err) = ('', '');
	my $client = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', $copy ],
		'>', \$out, '2>', \$err);
	my $timeout = IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default);
	$client->pump until ($out =~ tr/\n//) >= 100 || $timeout->is_expired;
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'COPY%'"
		),
		"$name: the statement waits after streaming its claims");
	my @fences = map { /^(\d+) / ? $1 : () } split /\n/, $out;
	cmp_ok(scalar(@fences), '>=', 100, "$name: the client read fences before the commit");
	my $seen = (sort { $b <=> $a } @fences)[0];
	crash_restart();
	$client->kill_kill;
	$blocker->{run}->kill_kill;
	local $TODO = $before_commit_todo;
	check_after_restart($name, $seen);
}

# The sequence far behind the key's fence.
foreach my $shape ('open transaction', 'synchronous_commit off')
{
	my $name = "sequence set back below the key's fence, $shape";
	my $key = new_key();
	sql("SELECT setval('sandbox_store.fence_seq', 1000000 * $n)");
	sql("SELECT sandbox_store.sandbox_release('$key', owner_token)"
		  . " FROM sandbox_store.sandbox_claim(key => '$key', lease => '1 hour')");
	sql("SELECT setval('sandbox_store.fence_seq', 1)");
	my $claim = "SELECT fence FROM sandbox_store.sandbox_claim(key => '$key', lease => '1 hour')";
	my ($fence, $h);
	if ($shape eq 'open transaction')
	{
		$h = $node->background_psql('postgres');
		$h->query_safe('BEGIN');
		$fence = $h->query_safe($claim);
	}
	else
	{
		$fence = sql("SET synchronous_commit = off; $claim");
	}
	cmp_ok($fence, '>', 1000000 * $n, "$name: the fence is above the key's last one");
	crash_restart();
	$h->{run}->kill_kill if $h;
	# (a commit that was not flushed may or may not have survived)
	sql("SELECT sandbox_store.sandbox_release(key, owner_token) FROM sandbox_store.leases"
		  . " WHERE key = '$key' AND owner_token IS NOT NULL");
	my $next = sql($claim);
	local $TODO = $before_commit_todo if $h;
	cmp_ok($next, '>', $fence,
		"$name: the key's first fence after the restart ($next) is above the one the client saw ($fence)");
}

# --- run epochs ------------------------------------------------------------

# A run of its own, claimed once: ($run, the epoch that claim returned).
sub claimed_run
{
	my $run = 'run-' . new_key();
	sql("SELECT sandbox_store.run_create_or_resume('$run', 'thread-ff', 1000) IS NOT NULL");
	my $epoch = sql("SELECT sandbox_store.run_claim('$run')");
	like($epoch, qr/^[1-9]\d*$/, "$run: claimed once (epoch $epoch)");
	return ($run, $epoch);
}

sub stored_epoch
{
	my ($run) = @_;
	return sql("SELECT sandbox_store.run_get('$run') ->> 'driverEpoch'");
}

sub append_state
{
	my ($run, $epoch) = @_;
	return sqlstate_of($node, "SELECT sandbox_store.run_log_append('$run', '[{\"n\": 1}]', $epoch)");
}

# After a crash: a new claim of $run returns an epoch above $seen, after
# which a write with $seen gets SB001 (TODO with the reason $todo, if set)
# and one with the new epoch works.
sub check_run_after_restart
{
	my ($name, $run, $seen, $todo) = @_;
	my $next = sql("SELECT sandbox_store.run_claim('$run')");
	{
		local $TODO = $todo;
		cmp_ok($next, '>', $seen,
			"$name: the first claim after the restart returns an epoch ($next) above the one the client saw ($seen)");
		is(append_state($run, $seen), 'SB001', "$name: after it, a write with the epoch the client saw gets SB001");
	}
	is(append_state($run, $next), 'ok', "$name: and one with the new epoch is accepted");
}

{
	my $name = 'run_claim, autocommit, synchronous_commit off';
	my ($run, $before) = claimed_run();
	ok(next_value_logs(), "$name: the claim's draw WAL-logs the sequence");
	my $epoch = sql("SET synchronous_commit = off; SELECT sandbox_store.run_claim('$run')");
	cmp_ok($epoch, '>', $before, "$name: the claim returns an epoch ($epoch) above the run's ($before)");
	crash_restart();
	is(stored_epoch($run), $epoch,
		"$name: the claim survived the crash: the run's epoch is the one the client saw (its commit was made durable)");
	check_run_after_restart($name, $run, $epoch);
}

{
	my $name = 'run_claim in an open transaction';
	my ($run, $before) = claimed_run();
	ok(next_value_logs(), "$name: the claim's draw WAL-logs the sequence");
	my $h = $node->background_psql('postgres');
	$h->query_safe('BEGIN');
	my $epoch = $h->query_safe("SELECT sandbox_store.run_claim('$run')");
	cmp_ok($epoch, '>', $before, "$name: the claim returns an epoch ($epoch) above the run's ($before)");
	crash_restart();
	$h->{run}->kill_kill;
	is(stored_epoch($run), $before, "$name: the claim that never committed left the run's epoch as it was");
	check_run_after_restart($name, $run, $epoch, $before_commit_todo);
}

{
	my $name = 'run_update raising driverEpoch, autocommit, synchronous_commit off';
	my ($run, $before) = claimed_run();
	# (any number above every epoch the run had: a patch may raise it so)
	my $raised = $before + 1000;
	is( sql("SET synchronous_commit = off; SELECT sandbox_store.run_update('$run', '{\"driverEpoch\": $raised}', $before)"),
		't', "$name: the patch raises the epoch from $before to $raised");
	crash_restart();
	is(stored_epoch($run), $raised, "$name: the raise survived the crash (its commit was made durable)");
	is(append_state($run, $before), 'SB001', "$name: a write with the epoch it replaced gets SB001");
	is(append_state($run, $raised), 'ok', "$name: one with the raised epoch is accepted");
}

my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|was terminated by exception/, 'no backend crashed');
$node->stop;
done_testing();

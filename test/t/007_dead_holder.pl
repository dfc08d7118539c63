# 007_dead_holder.pl
#
# A holder whose app server dies or freezes, with the settings
# docs/operations.md recommends, lets the next caller in within a bounded
# time that this test asserts:
#   1. lock mode, the client process is killed (SIGKILL): the kernel closes
#      its socket, the backend exits at once;
#   2. lock mode, the client is frozen (SIGSTOP, its socket stays open) while
#      idle in transaction: idle_in_transaction_session_timeout ends it;
#   3. lock mode, the client is killed while its backend runs a long
#      statement: client_connection_check_interval notices;
#   4. lease mode, the client freezes holding a claim: the key is taken over
#      when the lease expires, and the frozen holder's fenced write, when it
#      wakes up, is refused with SB001 and changes nothing.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SandboxStoreTest;

my $node = PostgreSQL::Test::Cluster->new('dead_holder');
$node->init;
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION sandbox_store;
CREATE ROLE app LOGIN;
GRANT USAGE ON SCHEMA sandbox_store TO app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO app;
-- The recommended bounds, for the app role only.
ALTER ROLE app SET idle_in_transaction_session_timeout = '2s';
ALTER ROLE app SET client_connection_check_interval = '500ms';
});


# A holder session as role app, and the pid of its psql client process.
sub holder
{
	my (%params) = @_;
	my $session = $node->background_psql('postgres', extra_params => [ '-U', 'app' ], %params);
	my $client_pid = $session->{run}->{KIDS}[0]{PID};
	my $backend_pid = $session->query_safe('SELECT pg_backend_pid()');
	return ($session, $client_pid, $backend_pid);
}

# Time for an ensure of $key (as app) to get through, in seconds.
sub waiter_time
{
	my ($key, $sql) = @_;
	my $t0 = time;
	my $result = $node->safe_psql('postgres', $sql, extra_params => [ '-U', 'app' ]);
	return (time - $t0, $result);
}

# 1. Lock mode: the client process is killed.
{
	my ($h, $client, $backend) = holder();
	$h->query_safe(q{BEGIN; SELECT action FROM sandbox_store.sandbox_ensure('k1', 'run-1')});
	kill 'KILL', $client;
	my ($took, $action) = waiter_time('k1',
		q{BEGIN; SELECT action FROM sandbox_store.sandbox_ensure('k1', 'run-2', wait => '30s'); ROLLBACK;});
	is($action, 'create', 'killed client: the waiter gets the key, with nothing committed');
	cmp_ok($took, '<', 5, sprintf('killed client: the waiter got in within 5 s (%.2f s)', $took));
	eval { $h->{run}->finish };
}

# 2. Lock mode: the client freezes while idle in transaction.
{
	my ($h, $client, $backend) = holder();
	# The holder's last statement notes the server's clock: it goes idle
	# after that.  The waiter notes when it got the key: the gap is at least
	# the idle time the timeout waited, however long the test took to start
	# the waiter.
	my ($idle_since) = (split /\n/, $h->query_safe(
		q{BEGIN; SELECT action FROM sandbox_store.sandbox_ensure('k2', 'run-1'); SELECT extract(epoch FROM clock_timestamp())}))[-1];
	kill 'STOP', $client;
	my ($took, $out) = waiter_time('k2',
		q{BEGIN; SELECT action || ' ' || extract(epoch FROM clock_timestamp()) FROM sandbox_store.sandbox_ensure('k2', 'run-2', wait => '30s'); ROLLBACK;});
	my ($action, $got_at) = split / /, $out;
	is($action, 'create', 'frozen idle client: the waiter gets the key');
	cmp_ok($took, '<', 10,
		sprintf('frozen idle client: idle_in_transaction_session_timeout (2 s) let the waiter in within 10 s (%.2f s)', $took));
	cmp_ok($got_at - $idle_since, '>=', 1.9,
		sprintf('... after the holder was idle for about that long, not at once (%.2f s on the server clock)',
			$got_at - $idle_since));
	kill 'CONT', $client;
	kill 'KILL', $client;
	eval { $h->{run}->finish };
}

# 3. Lock mode: the client is killed while its backend runs a long statement.
{
	my ($h, $client, $backend) = holder();
	$h->query_safe(q{BEGIN; SELECT action FROM sandbox_store.sandbox_ensure('k3', 'run-1')});
	$h->query_until(qr/^$/, "SELECT pg_sleep(60);\n");
	$node->poll_query_until('postgres',
		"SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $backend")
	  or die 'the holder did not start sleeping';
	kill 'KILL', $client;
	my ($took, $action) = waiter_time('k3',
		q{BEGIN; SELECT action FROM sandbox_store.sandbox_ensure('k3', 'run-2', wait => '30s'); ROLLBACK;});
	is($action, 'create', 'client killed mid-statement: the waiter gets the key');
	cmp_ok($took, '<', 10,
		sprintf('client killed mid-statement: client_connection_check_interval let the waiter in within 10 s, not 60 (%.2f s)', $took));
	eval { $h->{run}->finish };
}

# 4. Lease mode: the holder freezes holding a claim, then wakes up.
{
	my ($h, $client, $backend) = holder(on_error_stop => 0);
	# A 2-second lease, meant to run out while the holder is frozen.
	my ($fence, $expires) = split /\|/, $h->query_safe(
		q{SELECT fence || '|' || lease_expires_at FROM sandbox_store.sandbox_ensure('k4', 'run-1', lease => '2 seconds')});
	kill 'STOP', $client;
	my $t0 = time;
	# The successor's claim began at its expiry minus its lease: compared with
	# the frozen claim's expiry on the server's clock, not with the test's.
	my $taken = $node->safe_psql('postgres', qq{
SELECT action, fence, lease_expires_at - interval '1 minute' >= '$expires'::timestamptz AS after_expiry
  FROM sandbox_store.sandbox_ensure('k4', 'run-2', wait => '30s', lease => '1 minute') \\gset
SELECT :'action' || ':' || :fence || ':' || :'after_expiry';
SELECT FROM sandbox_store.sandbox_upsert('k4', 'prov', 'sbx-successor', 't', fence => :fence);},
		extra_params => [ '-U', 'app' ]);
	my $took = time - $t0;
	my ($action, $new_fence, $after_expiry) = $taken =~ /^(\w+):(\d+):(\w+)/;
	is($action, 'create', 'frozen lease holder: the successor takes the key over');
	cmp_ok($new_fence, '>', $fence, "... with a higher fence ($new_fence > $fence)");
	cmp_ok($took, '<', 10, sprintf('... within 10 s of a 2 s lease (%.2f s)', $took));
	is($after_expiry, 't', '... and not before the lease expired (on the server clock)');

	# The old holder wakes up and writes with its old fence.
	kill 'CONT', $client;
	my $out = $h->query(
		"SELECT key FROM sandbox_store.sandbox_upsert('k4', 'prov', 'sbx-zombie', 't', fence => $fence)");
	like($h->{stderr}, qr/claim on sandbox key "k4" was lost/,
		'the woken holder\'s fenced write is refused (SB001)');
	is( $node->safe_psql('postgres',
			"SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('k4')"),
		'sbx-successor', '... and the successor\'s record is intact');
	$h->quit;
}

is($node->safe_psql('postgres', $EXT_LOCKS), '0', 'no lock of the extension is left');
$node->stop;
done_testing();

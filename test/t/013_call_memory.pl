# 013_call_memory.pl
#
# One call's memory stays flat however long it waits and however many rows
# it returns.  SPI keeps every result of a connection until the connection
# ends, so a call that polls a claim (a statement per look, about 20 looks a
# second) or reaps many records (a few statements per record) would grow
# without bound if it kept them: 1.3 grew by about 160 kB a second while
# waiting, and by about 23 kB per reaped record.
#
#   * A lock-mode sandbox_ensure waiting (wait => NULL) for a live claim: the
#     private memory of its backend (RssAnon) may grow by less than
#     $WAIT_LIMIT_KB between 1 and 7 seconds into the wait.
#   * sandbox_reap of 20,000 idle records in one call: the peak memory of its
#     backend (VmHWM) may grow by less than $REAP_LIMIT_KB over the call.
#     The table is read first, so its pages are in the peak already (VmHWM
#     counts the shared buffers a backend touched).
#
# Both are read from /proc/<pid>/status of the backend.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreTest;
use Test::More;
use Time::HiRes qw(sleep);

plan skip_all => 'needs /proc' unless -r "/proc/$$/status";

my $WAIT_LIMIT_KB = 16;
my $REAP_LIMIT_KB = 32 * 1024;
my $REAP_ROWS = 20000;

my $node = PostgreSQL::Test::Cluster->new('call_memory');
$node->init;
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION sandbox_store;
SELECT fence FROM sandbox_store.sandbox_claim(key => 'busy', lease => '1 hour');
});

# A field of /proc/<pid>/status, in kB.
sub status_kb
{
	my ($pid, $field) = @_;
	my ($kb) = slurp_file("/proc/$pid/status") =~ /^$field:\s+(\d+) kB/m;
	die "no $field in /proc/$pid/status" unless defined $kb;
	return $kb;
}

# A call waiting for a live claim.
my $waiter = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $waiter->query_safe('SELECT pg_backend_pid()');
$waiter->query_until(qr/waiting/, q{
\echo waiting
SELECT action FROM sandbox_store.sandbox_ensure(key => 'busy', run_id => 'r', wait => NULL);
});
ok( $node->poll_query_until(
		'postgres', "SELECT wait_event = 'Extension' FROM pg_stat_activity WHERE pid = $pid"),
	'the call waits for the claim');
sleep 1;
my $at1 = status_kb($pid, 'RssAnon');
sleep 6;
my $at7 = status_kb($pid, 'RssAnon');
note "a call waiting for a claim: RssAnon $at1 kB after 1 s, $at7 kB after 7 s";
cmp_ok($at7 - $at1, '<', $WAIT_LIMIT_KB, 'a waiting call does not grow (kB over 6 s)');
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', 'the waiting call is canceled');
$waiter->quit;

# A large reap, in one backend.
my $reaper = $node->background_psql('postgres');
$pid = $reaper->query_safe('SELECT pg_backend_pid()');
$reaper->query_safe(
	qq{INSERT INTO sandbox_store.instances (key, provider, provider_sandbox_id, thread_id, updated_at)
	   SELECT 'reap-' || i, 'e2b', 'sbx', 'thread-reap', now() - interval '1 day'
	     FROM generate_series(1, $REAP_ROWS) i});
$reaper->query_safe('SELECT count(*) FROM sandbox_store.instances');
my $before = status_kb($pid, 'VmHWM');
is($reaper->query_safe("SELECT count(*) FROM sandbox_store.sandbox_reap('1 hour', $REAP_ROWS)"),
	$REAP_ROWS, "sandbox_reap reaps $REAP_ROWS records in one call");
my $after = status_kb($pid, 'VmHWM');
note "sandbox_reap of $REAP_ROWS records: VmHWM $before kB before, $after kB after";
cmp_ok($after - $before, '<', $REAP_LIMIT_KB, 'a large reap does not grow with its rows (kB)');
$reaper->quit;

$node->stop;
done_testing();

# 009_wait_cpu.pl
#
# A call that waits for a live claim sleeps on its latch with backoff (1 ms,
# doubling up to 50 ms) between looks at the claim: no busy loop.  For each
# kind of waiter (lease-mode and lock-mode sandbox_ensure, sandbox_claim,
# sandbox_lock, sandbox_delete) this test lets a backend wait 2 seconds for a
# key that another session's claim holds, and reads from /proc what the
# waiting backend cost: its CPU time and its voluntary context switches (one
# per sleep).  Backoff to 50 ms sleeps about 45 times in 2 s; a waiter that
# polled every millisecond would sleep about 2000 times (0.04-0.06 s of CPU),
# and one that spun without sleeping would burn the whole 2 s.  The sleep
# bound tells backoff from fast polling; the CPU bound (in clock ticks, so
# no float rounding decides it) tells sleeping from spinning, with room for
# a loaded machine: a backing-off waiter was measured at 1-6 ticks on an idle
# one and at 8 on a machine running other suites at the same time, a
# spinning one takes all 200.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreTest;
use Test::More;
use Time::HiRes qw(time);

plan skip_all => 'needs /proc' unless -r "/proc/$$/stat";

my $CLK_TCK = POSIX::sysconf(POSIX::_SC_CLK_TCK());
my $WAIT = 2.0;            # seconds each call waits
my $MAX_SLEEPS = 200;      # voluntary context switches over the wait
my $MAX_CPU = 0.25;        # seconds of CPU over the wait (12.5%; spinning costs 2 s)

my $node = PostgreSQL::Test::Cluster->new('wait_cpu');
$node->init;
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION sandbox_store;
SELECT fence FROM sandbox_store.sandbox_claim(key => 'busy', lease => '1 hour');
});

# CPU clock ticks (user + system) and voluntary context switches of a process.
sub usage
{
	my ($pid) = @_;
	my $stat = slurp_file("/proc/$pid/stat");
	$stat =~ s/^.*\) //s;    # after the command name, fields from 3 on
	my @f = split / /, $stat;
	my $cpu = $f[11] + $f[12];    # utime, stime (fields 14, 15), in clock ticks
	my ($switches) = slurp_file("/proc/$pid/status") =~ /^voluntary_ctxt_switches:\s+(\d+)/m;
	return ($cpu, $switches);
}

my $waiter = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $waiter->query_safe('SELECT pg_backend_pid()');

my %calls = (
	'sandbox_ensure, lease mode' =>
	  "SELECT action FROM sandbox_store.sandbox_ensure(key => 'busy', run_id => 'r', wait => '2 s', lease => '1 min')",
	'sandbox_ensure, lock mode' =>
	  "SELECT action FROM sandbox_store.sandbox_ensure(key => 'busy', run_id => 'r', wait => '2 s')",
	'sandbox_claim' =>
	  "SELECT fence FROM sandbox_store.sandbox_claim(key => 'busy', lease => '1 min', wait => '2 s')",
	'sandbox_lock' => "SELECT sandbox_store.sandbox_lock(key => 'busy', wait => '2 s')",
	'sandbox_delete (lock_timeout)' =>
	  "SET lock_timeout = '2s'; SELECT sandbox_store.sandbox_delete(key => 'busy'); RESET lock_timeout",
);

foreach my $name (sort keys %calls)
{
	my ($cpu0, $sw0) = usage($pid);
	my $t0 = time;
	$waiter->query($calls{$name});
	my $elapsed = time - $t0;
	my ($cpu1, $sw1) = usage($pid);
	my ($ticks, $sleeps) = ($cpu1 - $cpu0, $sw1 - $sw0);
	my $cpu = $ticks / $CLK_TCK;

	like($waiter->{stderr}, qr/could not lock sandbox key "busy"/, "$name: not obtained (55P03)");
	cmp_ok($elapsed, '>=', $WAIT - 0.05, "$name: waited the whole wait");
	note sprintf('%s: %.2f s waited, %.3f s CPU, %d sleeps', $name, $elapsed, $cpu, $sleeps);
	cmp_ok($sleeps, '<=', $MAX_SLEEPS, "$name: slept with backoff ($sleeps sleeps)");
	cmp_ok($ticks, '<=', int($MAX_CPU * $CLK_TCK + 0.5), "$name: CPU time of the wait ($cpu s)");
}

$waiter->quit;
$node->stop;
done_testing();

# 006_crash_load.pl
#
# Crash mid-load: several client processes (like app servers) run ensure +
# create-on-create transactions, in lock mode and in lease mode, over a
# small key range, and log every commit the server acknowledged.  The
# postmaster is killed with SIGKILL in the middle; after restart:
#   - every acknowledged record is present;
#   - no key was created twice (a `creates` log committed atomically with
#     each create says so);
#   - no claim is stuck: every claim expires within its lease;
#   - new fences are above every fence acknowledged before the crash.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SandboxStoreTest;

my $node = PostgreSQL::Test::Cluster->new('crash_load');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION sandbox_store;
CREATE TABLE creates (key text NOT NULL, run text NOT NULL);
});

my $dir = PostgreSQL::Test::Utils::tempdir();
my $keys = 60;
my $lease = '2 seconds';

# One transaction in lock mode: create (and log it) or resume.
open my $lock_sql, '>', "$dir/lock.sql" or die $!;
print $lock_sql <<'EOF';
BEGIN;
SELECT action = 'create' AS must_create FROM sandbox_store.sandbox_ensure(:'key', :'run') \gset
\if :must_create
INSERT INTO creates VALUES (:'key', :'run');
SELECT key FROM sandbox_store.sandbox_upsert(:'key', 'prov', 'sbx-' || :'run', 'thread', latest_run_id => :'run');
\endif
COMMIT;
\echo ack
EOF
close $lock_sql;

# The same in lease mode: claim (autocommit), fenced create, release.
open my $lease_sql, '>', "$dir/lease.sql" or die $!;
print $lease_sql <<"EOF";
SELECT action = 'create' AS must_create, fence, owner_token
  FROM sandbox_store.sandbox_ensure(:'key', :'run', lease => '$lease') \\gset
\\echo fence :fence
BEGIN;
\\if :must_create
INSERT INTO creates VALUES (:'key', :'run');
SELECT key FROM sandbox_store.sandbox_upsert(:'key', 'prov', 'sbx-' || :'run', 'thread',
  latest_run_id => :'run', fence => :fence);
\\endif
COMMIT;
SELECT sandbox_store.sandbox_release(:'key', :'owner_token');
\\echo ack
EOF
close $lease_sql;

# A worker: loops over random keys until killed; prints "ack key mode" after
# each acknowledged transaction and "fence N" for each acknowledged claim.
my $connstr = $node->connstr('postgres');
my @workers;
for my $w (1 .. 6)
{
	my $mode = $w % 2 ? 'lock' : 'lease';
	my $script = <<"EOF";
for n in \$(seq 1 100000); do
  key=k-\$((RANDOM % $keys))
  out=\$(psql -X -q -At -v ON_ERROR_STOP=1 -v key=\$key -v run=w$w-\$n -d '$connstr' -f $dir/$mode.sql 2>/dev/null) || continue
  echo "\$out" | grep '^fence ' || true
  echo "\$out" | grep -q '^ack\$' && echo "ack \$key $mode"
done
EOF
	my $out = '';
	my $h = IPC::Run::start([ 'bash', '-c', $script ], '>', "$dir/worker.$w.log", '2>', '/dev/null');
	push @workers, $h;
}

# Let the load run, then kill the postmaster mid-run.
my $deadline = time + 60;
sleep 0.5 until time > $deadline || acked() >= 150;
cmp_ok(acked(), '>=', 150, 'the load acknowledged transactions before the crash');
open my $pidfile, '<', $node->data_dir . '/postmaster.pid' or die $!;
my $postmaster = <$pidfile>;
chomp $postmaster;
close $pidfile;
kill 'KILL', $postmaster;
note "killed postmaster $postmaster with SIGKILL";

# The workers see connection failures now; stop them and freeze the logs.
sleep 0.5;
$_->kill_kill for @workers;
my @acks = map { read_lines($_) } glob("$dir/worker.*.log");
my %acked_keys;
my $max_fence = 0;
for (@acks)
{
	$acked_keys{$1} = 1 if /^ack (\S+)/;
	$max_fence = $1 if /^fence (\d+)$/ && $1 > $max_fence;
}
note scalar(keys %acked_keys) . " keys acknowledged, newest acknowledged fence $max_fence";

# Restart.  First the killed postmaster must be gone (reaped), then its
# orphaned backends notice its death and exit; until then start is retried.
my $gone_by = time + 30;
sleep 0.1 while kill(0, $postmaster) && time < $gone_by;
ok(!kill(0, $postmaster), 'the killed postmaster is gone');
$node->{_pid} = undef;    # its pid file is stale now
my $started = 0;
for (1 .. 60)
{
	if ($node->start(fail_ok => 1))
	{
		$started = 1;
		last;
	}
	sleep 0.5;
}
ok($started, 'the server restarts after SIGKILL of the postmaster (crash recovery)');

my $missing = $node->safe_psql('postgres',
	'SELECT count(*) FROM unnest(ARRAY[' . join(',', map { "'$_'" } sort keys %acked_keys)
	  . ']) k WHERE NOT EXISTS (SELECT FROM sandbox_store.instances i WHERE i.key = k)');
is($missing, '0', 'every acknowledged record is present after the crash');
is( $node->safe_psql('postgres',
		'SELECT count(*) FROM (SELECT key FROM creates GROUP BY key HAVING count(*) > 1) d'),
	'0', 'no key was created twice');
is( $node->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM creates) = (SELECT count(*) FROM sandbox_store.instances)'),
	't', 'one create per record, and a record for every create');

# No claim is stuck: whatever was live at the crash expires within its lease.
ok( $node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM sandbox_store.claims'),
	'no claim is stuck: every claim left by the crash expires');

# Fences keep increasing.
my $new_fence = $node->safe_psql('postgres',
	"SELECT fence FROM sandbox_store.sandbox_ensure('k-1', 'after-crash', lease => '1 minute')");
cmp_ok($new_fence, '>', $max_fence, 'a new fence is above every fence acknowledged before the crash');
cmp_ok(
	$new_fence, '>',
	$node->safe_psql('postgres', q{SELECT max(fence) FROM sandbox_store.leases WHERE key <> 'k-1'}),
	'... and above every fence stored');
is( $node->safe_psql('postgres',
		$EXT_LOCKS),
	'0', 'no lock of the extension is left');

$node->stop;
done_testing();

sub acked
{
	my $n = 0;
	for my $f (glob("$dir/worker.*.log"))
	{
		$n += scalar(grep { /^ack / } read_lines($f));
	}
	return $n;
}

sub read_lines
{
	my ($f) = @_;
	open my $fh, '<', $f or return ();
	my @lines = <$fh>;
	close $fh;
	chomp @lines;
	return @lines;
}

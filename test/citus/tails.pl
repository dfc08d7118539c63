# test/citus/tails.pl: live tails of run logs on a real citus cluster, with
# the TypeScript client as an app uses it.
#
# A coordinator and two workers (test/perl/SandboxStoreCitus.pm: the server
# of PG_CONFIG with the Citus test/scripts/build-citus.sh built into it),
# sandbox_store distributed.  Then:
#
#   - why the client wakes readers after the commit on Citus: a session
#     LISTENing on sandbox_store_run_log on the coordinator does not hear a
#     watched log's run_log_append(run, chunks, NULL, true) called through
#     the coordinator (distribute() delegates that form to the worker holding
#     the run's shard: it notifies there, and a listener on that worker hears
#     it), nor the same with notify false; it hears run_log_wake, the
#     3-argument run_log_append and run_log_close called through the
#     coordinator (not delegated: they notify where they are called), and
#     the worker hears none of those.  Each "heard or not" is exact: after
#     the call commits, a marker is notified on the listener's node and the
#     listener polls until the marker arrives; notifications are delivered in
#     commit order, so what came before the marker is everything the call
#     sent there;
#   - 50 readers tail 50 runs whose shards are on both workers while 50
#     writers stream 40 chunks into each, 4 at a time
#     (clients/typescript/test/citus/tails.mjs: PgStreamDurability from the
#     package's dist/, every pool on the coordinator, the readers on one
#     pool, so one LISTEN connection; half the readers tail from before the
#     first append, half join after a run's third batch): every reader gets
#     every entry once, in order, as written, and its tail ends when the log
#     is closed; every wake reached the coordinator's listeners; every
#     statement of a run went to the worker of its shard; the wakes ran on
#     the coordinator (only its log has them, log_statement = all); the
#     client's appends run on the workers (delegated: citus delegates only
#     a bare SELECT f(...)).
#
# The client is built first (SandboxStoreCitus's typescript_client: the
# citus suite of make test runs before the client's on a fresh clone); the
# client part is skipped if npm is not installed.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreCitus;
use SandboxStoreTest;
use Test::More;
use Time::HiRes qw(usleep);

my ($RUNS, $CHUNKS, $BATCH) = (50, 40, 4);
my $timeout = $PostgreSQL::Test::Utils::timeout_default;

my ($coord, $w1, $w2) = citus_cluster();
my @workers = ($w1, $w2);

# --- Where a run log's notification is heard --------------------------------

my $run = 'notify-1';
my $worker = shard_node($coord, 'sandbox_store.runs', $run, @workers);
my ($other) = grep { $_ != $worker } @workers;
my %listener = (coordinator => $coord->background_psql('postgres'), worker => $worker->background_psql('postgres'));
$_->query_safe('LISTEN sandbox_store_run_log') for values %listener;
my %node_of = (coordinator => $coord, worker => $worker);
my $markers = 0;

# The payloads a listener ('coordinator' or 'worker') heard since the last
# call: a marker notified on its node after what was done before, then
# polled for (psql prints the notifications a session got after each
# command).
sub heard
{
	my ($where) = @_;
	my $marker = 'marker-' . ++$markers;
	$node_of{$where}->safe_psql('postgres', "SELECT pg_notify('sandbox_store_run_log', '$marker')");
	my @payloads;
	my $deadline = time() + $timeout;
	until (grep { $_ eq $marker } @payloads)
	{
		die "the $where listener did not hear $marker within $timeout s" if time() > $deadline;
		my $out = $listener{$where}->query_safe('SELECT 1');
		push @payloads, $out =~ /Asynchronous notification "sandbox_store_run_log" with payload "([^"]*)" received/g;
		usleep(10_000) unless grep { $_ eq $marker } @payloads;
	}
	return join(',', grep { $_ ne $marker } @payloads);
}

note "$run: its shard is on " . $worker->name;
$coord->safe_psql('postgres', "SELECT sandbox_store.run_log_watch('$run')");
is(heard($_), '', "$_ listener: nothing yet") for qw(coordinator worker);

$coord->safe_psql('postgres', qq{SELECT sandbox_store.run_log_append('$run', '[{"n": 1}]', NULL, true)});
is(heard('coordinator'), '',
	'run_log_append(run, chunks, NULL, true) through the coordinator: not heard on the coordinator');
is(heard('worker'), $run, 'but on the worker holding the shard (the call was delegated there)');

$coord->safe_psql('postgres', qq{SELECT sandbox_store.run_log_append('$run', '[{"n": 2}]', NULL, false)});
is(heard($_), '', "run_log_append(run, chunks, NULL, false): not heard on the $_") for qw(coordinator worker);

is($coord->safe_psql('postgres', "SELECT sandbox_store.run_log_wake('$run')"),
	'1', 'run_log_wake through the coordinator wakes the watched log');
is(heard('coordinator'), $run, 'run_log_wake through the coordinator: heard on the coordinator');
is(heard('worker'), '', 'and not on the worker');

$coord->safe_psql('postgres', qq{SELECT sandbox_store.run_log_append('$run', '[{"n": 3}]')});
is(heard('coordinator'), $run, 'run_log_append(run, chunks) through the coordinator: heard on the coordinator');
is(heard('worker'), '', 'and not on the worker');

is($coord->safe_psql('postgres', "SELECT sandbox_store.run_log_close('$run')"), 't', 'run_log_close');
is(heard('coordinator'), $run, 'run_log_close through the coordinator: heard on the coordinator');
is(heard('worker'), '', 'and not on the worker');
is( $coord->safe_psql(
		'postgres', "SELECT last_seq || ' ' || (closed_at IS NOT NULL) FROM sandbox_store.run_logs WHERE run_id = '$run'"),
	'3 true',
	'the log holds the three entries, closed');
$_->quit for values %listener;

# --- 50 readers, 50 writers, the TypeScript client ---------------------------

my @runs = map { "tail-$_" } 1 .. $RUNS;
my %home = map { $_ => shard_node($coord, 'sandbox_store.runs', $_, @workers) } @runs;
my %shards;
$shards{ $home{$_}->name }++ for @runs;
ok($shards{worker1} && $shards{worker2},
	"the $RUNS runs' shards are on both workers (worker1 $shards{worker1}, worker2 $shards{worker2})");

SKIP:
{
	my $client = typescript_client();
	skip 'npm is not installed: the client part needs Node >= 18.17 and npm', 8 unless defined $client;

	my %log_at = map { $_->name => -s $_->logfile } ($coord, @workers);
	my $user = getpwuid($<);
	my $url = "postgresql://$user\@127.0.0.1:" . $coord->port . '/postgres';
	my ($out, $err) = ('', '');
	my @cmd = ('node', "$client/test/citus/tails.mjs", $url, $RUNS, $CHUNKS, $BATCH, $timeout * 1000);
	note "@cmd";
	my $ok = eval { IPC::Run::run(\@cmd, '>', \$out, '2>', \$err, IPC::Run::timeout(2 * $timeout)) };
	note $out;
	diag "tails.mjs: $@$err" if !$ok;
	ok($ok, 'tails.mjs ran to its end');

	my @expected = map {
		"reader tail-$_ group="
		  . ($_ % 2 ? 'start' : 'mid')
		  . " count=$CHUNKS order=ok offsets=ok chunks=ok end=closed"
	} 1 .. $RUNS;
	is(join("\n", grep { /^reader / } split /\n/, $out),
		join("\n", @expected),
		"each of the $RUNS readers (half from the start, half joining mid-stream) got the $CHUNKS entries once, in order,"
		  . ' as written, and its tail ended when the log was closed');
	like($out, qr/^listeners start=1 live=1$/m, "the $RUNS readers share one pool and its one listener connection");
	like($out, qr/^woken-before-close $RUNS$/m,
		"the wakes (run_log_wake after each append) of every run reached the coordinator's listeners");
	my ($ms) = $out =~ /^elapsed-ms (\d+)$/m;
	note "tails.mjs: $RUNS runs x $CHUNKS chunks in " . ($ms // '?') . ' ms';

	# Where the client's statements ran: the log_statement = all lines of
	# each node since the run.
	my %since = map {
		my $node = $_;
		open(my $fh, '<', $node->logfile) or die $node->logfile . ": $!";
		seek($fh, $log_at{ $node->name }, 0);
		local $/;
		my $text = <$fh>;
		close($fh);
		($node->name => $text)
	} ($coord, @workers);
	my (%delegated, @astray);
	for my $r (@runs)
	{
		my $home = $home{$r};
		for my $w (@workers)
		{
			my $statements = () = $since{ $w->name } =~ /'\Q$r\E'::text/g;
			push @astray, "$r: $statements on " . $w->name if $w != $home && $statements;
			push @astray, "$r: none on " . $w->name if $w == $home && !$statements;
		}
		$delegated{$r} = () = $since{ $home->name } =~ /SELECT sandbox_store\.run_log_append\('\Q$r\E'::text,/g;
	}
	is(join(', ', @astray), '', "every statement of each run went to the worker of the run's shard, none to the other");
	is(scalar(grep { $delegated{$_} == $CHUNKS / $BATCH } @runs),
		$RUNS, "each run's " . $CHUNKS / $BATCH . " appends ran on the worker of its shard (delegated)");
	ok($since{coordinator} =~ /sandbox_store\.run_log_wake\(/
		  && !(grep { $since{ $_->name } =~ /run_log_wake/ } @workers),
		'the wakes ran on the coordinator, never on a worker');
	is( $coord->safe_psql(
			'postgres', qq{
SELECT count(*) FROM (
  SELECT l.run_id FROM sandbox_store.run_logs l JOIN sandbox_store.run_log_entries e USING (run_id)
   WHERE l.run_id LIKE 'tail-%' AND l.last_seq = $CHUNKS AND l.closed_at IS NOT NULL
   GROUP BY l.run_id HAVING count(*) = $CHUNKS) s}),
		$RUNS,
		"the $RUNS logs hold their $CHUNKS entries each, closed");
}

done_testing();

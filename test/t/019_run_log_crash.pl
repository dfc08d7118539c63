# 019_run_log_crash.pl
#
# Run logs across a crash (RUNS-CONTRACT, extension 1.5): several appender
# processes append batches to a few runs' logs, each batch one
# run_log_append in a transaction of its own, and the server dies
# mid-stream: round 1 by SIGKILL of the postmaster, round 2 by pg_ctl stop
# -m immediate.  After each restart, for every run:
#
#   - the log's seqs are exactly 1..last_seq, no gap, no duplicate, and
#     run_logs.last_seq (and run_log_status) say the same;
#   - every append the appender saw acknowledged (it recorded the seqs the
#     call returned) is there, at those seqs, chunk for chunk in order; and
#     nothing of a batch is half there (a batch is all there, at
#     consecutive seqs, or not at all);
#   - a driver's epoch survives: the holder's fenced appends go on, from
#     last_seq + 1; an epoch that a claim committed before the crash
#     replaced still gets SB001, and no stale append landed after that
#     claim; a claim still open (uncommitted) at the crash left nothing.
#
# Appenders: two on run-0 (claimed once: two processes of one driver), one
# on run-1 (claimed once), one on run-2 (claimed once; run-2 is claimed
# again by another driver mid-stream in round 1, so its appender's later
# appends are refused), two on run-u (no runs row: unfenced appends).
#
# An epoch is what run_claim returned (the highest epoch the run had plus a
# number drawn from fence_seq, docs/reference.md "The driver epoch fence"):
# the test keeps each one it was given and checks relations (a new claim's
# epoch is above the run's current one; the stored epoch is the one the
# committed claim returned), never a number it computed itself.
# Batches of 1..16 chunks of about 200 bytes of JSON; each chunk names its
# appender, batch, index and the batch's size, so the log tells which
# batches are whole.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreTest;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('run_log_crash');
$node->init;
$node->start;
install_sandbox_store($node);

sub sql { my ($q) = @_; return $node->safe_psql('postgres', $q); }

my @runs = qw(run-0 run-1 run-2 run-u);
# The epoch each appender writes with (run-u: none), from the claims below.
my %epoch = ('run-u' => undef);

# rl_batch(w, b, n): the batch b of appender w, n chunks of about 200 bytes
# of JSON (a TEXT_MESSAGE_CONTENT event of an agent's stream).
sql(q{
CREATE FUNCTION rl_batch(w int, b int, n int) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(jsonb_build_object('type', 'TEXT_MESSAGE_CONTENT', 'messageId', 'msg-' || w || '-' || b,
                                      'w', w, 'b', b, 'i', i, 'n', n, 'timestamp', 1767225600000 + i,
                                      'delta', repeat(md5(w || '/' || b || '/' || i), 3)) ORDER BY i)
    FROM generate_series(0, n - 1) i
$$;
SELECT sandbox_store.run_create_or_resume(r, 'thread-1', 1000) IS NOT NULL
  FROM unnest(ARRAY['run-0', 'run-1', 'run-2']) r;
});
for my $run (qw(run-0 run-1 run-2))
{
	$epoch{$run} = sql("SELECT sandbox_store.run_claim('$run')");
	like($epoch{$run}, qr/^[1-9]\d*$/, "$run is claimed: epoch $epoch{$run}");
}
# "run-0=E0 run-1=E1 run-2=E2": the runs' epochs as run_claim returned them.
sub epochs_string { my (%e) = @_; return join ' ', map { "$_=$e{$_}" } qw(run-0 run-1 run-2); }
my $EPOCHS_QUERY = q{SELECT string_agg(run_id || '=' || driver_epoch, ' ' ORDER BY run_id) FROM sandbox_store.runs};
is(sql($EPOCHS_QUERY), epochs_string(%epoch), 'three runs claimed once: each stores the epoch its claim returned');

# The appenders: [run, appender id].
my @appenders = ([ 'run-0', 0 ], [ 'run-0', 1 ], [ 'run-1', 2 ], [ 'run-2', 3 ], [ 'run-u', 4 ], [ 'run-u', 5 ]);
my %acked;    # "run/seq" -> "w/b/i": every acknowledged chunk, all rounds

# Start the appenders of a round: batches from $first on, each printed as
# "B<batch>|<seqs returned>" once its call returned (autocommit: committed).
sub start_appenders
{
	my ($round, $first) = @_;
	my @procs;
	for my $a (@appenders)
	{
		my ($run, $w) = @$a;
		my $script = $node->basedir . "/appender-$round-$w.sql";
		open(my $fh, '>', $script) or die "$script: $!";
		print $fh "\\set VERBOSITY verbose\n";
		for my $b ($first .. $first + 20000)
		{
			my $n = 1 + ($b * 7 + $w) % 16;
			my $e = $epoch{$run} // 'NULL';
			print $fh "SELECT 'B$b', sandbox_store.run_log_append('$run', rl_batch($w, $b, $n), $e);\n";
		}
		close $fh;
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-d', $node->connstr('postgres'), '-f', $script ],
			'>', \$out, '2>', \$err);
		push @procs, { run => $run, w => $w, h => $h, out => \$out, err => \$err };
	}
	return @procs;
}

# After the crash: every appender was cut off; record what it saw acknowledged.
sub collect_appenders
{
	my ($round, @procs) = @_;
	my $cut = 0;
	for my $p (@procs)
	{
		eval { $p->{h}->finish };
		$cut++ if ${ $p->{err} } =~ /server closed the connection|terminating connection|connection to server was lost/;
		my $batches = 0;
		for my $line (split /\n/, ${ $p->{out} })
		{
			my ($b, $seqs) = $line =~ /^B(\d+)\|\{([\d,]*)\}$/ or die "appender $p->{w}: unexpected output: $line";
			my @seqs = split /,/, $seqs;
			my $n = 1 + ($b * 7 + $p->{w}) % 16;
			die "appender $p->{w}: batch $b of $n chunks got seqs {$seqs}" unless @seqs == $n;
			$acked{"$p->{run}/$seqs[$_]"} = "$p->{w}/$b/$_" for 0 .. $#seqs;
			$batches++;
		}
		note "$round: appender $p->{w} ($p->{run}): $batches batches acknowledged";
	}
	is($cut, scalar(@procs), "$round: every appender was cut off by the crash");
	return;
}

sub total_entries { return sql('SELECT count(*) FROM sandbox_store.run_log_entries'); }

# The checks after a restart.
sub check_logs
{
	my ($round) = @_;
	for my $run (@runs)
	{
		my ($count, $min, $max, $last, $status, $read) = split /\|/, sql(qq{
SELECT count(*), COALESCE(min(seq), 0), COALESCE(max(seq), 0),
       (SELECT last_seq FROM sandbox_store.run_logs WHERE run_id = '$run'),
       (SELECT last_seq || '/' || closed FROM sandbox_store.run_log_status('$run')),
       (SELECT count(*) FROM sandbox_store.run_log_read('$run'))
  FROM sandbox_store.run_log_entries WHERE run_id = '$run'});
		cmp_ok($count, '>', 0, "$round: $run has entries ($count)");
		ok($min == 1 && $max == $count, "$round: $run: seqs are 1..$max, no gap ($count entries, min $min)");
		is($last, $max, "$round: $run: run_logs.last_seq is the greatest seq");
		is($status, "$max/false", "$round: $run: run_log_status says last_seq $max, open");
		is($read, $count, "$round: $run: run_log_read returns every entry");
	}

	# Every batch stored is whole, at consecutive seqs in chunk order, and
	# in the log of its appender's run.
	my %run_of = map { $_->[1] => $_->[0] } @appenders;
	my $owner_case = join ' ', map { "WHEN $_ THEN '$run_of{$_}'" } sort keys %run_of;
	is(sql(qq{
SELECT count(*) FROM (
  SELECT e.run_id, e.chunk ->> 'w' AS w, e.chunk ->> 'b' AS b, count(*) AS chunks, max(e.seq) - min(e.seq) + 1 AS span,
         max((e.chunk ->> 'n')::int) AS n, bool_and(e.seq - (e.chunk ->> 'i')::int = s.first) AS in_order,
         bool_and(e.run_id = CASE (e.chunk ->> 'w')::int $owner_case END) AS own_run
    FROM sandbox_store.run_log_entries e
    JOIN (SELECT run_id, chunk ->> 'w' AS w, chunk ->> 'b' AS b, min(seq) AS first
            FROM sandbox_store.run_log_entries GROUP BY 1, 2, 3) s
      ON s.run_id = e.run_id AND s.w = e.chunk ->> 'w' AND s.b = e.chunk ->> 'b'
   GROUP BY 1, 2, 3) x
 WHERE chunks <> n OR span <> n OR NOT in_order OR NOT own_run}),
		'0', "$round: every stored batch is whole, at consecutive seqs, in order, in its run's log");

	# Every acknowledged chunk is there.
	my $values = join ",\n", map {
		my ($run, $seq) = split m{/};
		my ($w, $b, $i) = split m{/}, $acked{$_};
		"('$run', $seq, '$w', '$b', '$i')"
	} sort keys %acked;
	my ($acked, $missing) = split /\|/, sql(qq{
WITH a(run_id, seq, w, b, i) AS (VALUES $values)
SELECT count(*), count(*) FILTER (WHERE e.seq IS NULL OR (e.chunk ->> 'w', e.chunk ->> 'b', e.chunk ->> 'i') IS DISTINCT FROM (a.w, a.b, a.i))
  FROM a LEFT JOIN sandbox_store.run_log_entries e USING (run_id, seq)});
	cmp_ok($acked, '>', 100, "$round: appends were acknowledged before the crash ($acked chunks)");
	is($missing, '0', "$round: every acknowledged chunk is in the log, at the seq it was acknowledged with");
	return;
}

# The next append of $run with $epoch (as appender $w, a batch number of
# its own): its seqs, from last_seq + 1.
my $extra_batch = 900000;

sub appends_continue
{
	my ($round, $run, $epoch, $w) = @_;
	my $b = ++$extra_batch;
	my $last = sql("SELECT last_seq FROM sandbox_store.run_logs WHERE run_id = '$run'");
	my $e = $epoch // 'NULL';
	is(sql("SELECT sandbox_store.run_log_append('$run', rl_batch($w, $b, 3), $e)"),
		'{' . join(',', $last + 1 .. $last + 3) . '}',
		"$round: $run: the next append (epoch " . ($epoch // 'none') . ') continues from last_seq + 1');
	$acked{"$run/" . ($last + $_ + 1)} = "$w/$b/$_" for 0 .. 2;
	return;
}

sub wait_for_entries
{
	my ($round, $target, @procs) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (total_entries() < $target)
	{
		if (time() > $deadline)
		{
			$_->{h}->pump_nb for @procs;
			die "$round: the appenders made no progress: " . join(' ', map { ${ $_->{err} } } @procs);
		}
		usleep(50_000);
	}
	return;
}

# --- round 1: SIGKILL of the postmaster ---------------------------------------

my @procs = start_appenders('round 1', 1);
wait_for_entries('round 1', 3000, @procs);

# Another driver claims run-2 mid-stream: its appender is fenced off from
# then on (SB001), and nothing it appends lands after the claim.
my $run2_old = $epoch{'run-2'};
my $run2_new = sql(q{SELECT sandbox_store.run_claim('run-2')});
cmp_ok($run2_new, '>', $run2_old, "round 1: run-2 is claimed again mid-stream (epoch $run2_new, above $run2_old)");
my $run2_last = sql(q{SELECT last_seq FROM sandbox_store.run_logs WHERE run_id = 'run-2'});
my ($p2) = grep { $_->{run} eq 'run-2' } @procs;
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
until (${ $p2->{err} } =~ /ERROR:\s+SB001/)
{
	die "run-2's appender got no SB001: ${ $p2->{err} }" if time() > $deadline;
	$p2->{h}->pump_nb;
	usleep(20_000);
}
pass('round 1: the old driver of run-2 gets SB001 from then on');

# A claim of run-1 open (uncommitted) when the server dies.
my $open = $node->background_psql('postgres', on_error_stop => 0);
$open->query_safe('BEGIN');
my $run1_open = $open->query_safe(q{SELECT sandbox_store.run_claim('run-1')});
cmp_ok($run1_open, '>', $epoch{'run-1'}, "round 1: a claim of run-1 is open at the crash (epoch $run1_open)");

wait_for_entries('round 1', total_entries() + 1000, grep { $_->{run} ne 'run-1' } @procs);
kill9_and_start($node);
eval { $open->quit };
collect_appenders('round 1', @procs);
like(slurp_file($node->logfile), qr/database system was not properly shut down; automatic recovery in progress/,
	'round 1: crash recovery ran');

check_logs('round 1');
is(sql(q{SELECT last_seq FROM sandbox_store.run_logs WHERE run_id = 'run-2'}), $run2_last,
	'round 1: no append of run-2\'s old epoch landed after the claim');
is(sql($EPOCHS_QUERY), epochs_string(%epoch, 'run-2' => $run2_new),
	'round 1: the committed claim survived, the open one left nothing');
is(sqlstate_of($node, "SELECT sandbox_store.run_log_append('run-2', rl_batch(3, 0, 1), $run2_old)"),
	'SB001', 'round 1: run-2\'s stale epoch still gets SB001 after the restart');
is(sqlstate_of($node, q{SELECT sandbox_store.run_log_append('run-2', rl_batch(3, 0, 1))}),
	'SB001', 'round 1: and an unfenced append to a claimed run too');
$epoch{'run-2'} = $run2_new;
appends_continue('round 1', 'run-0', $epoch{'run-0'}, 0);
appends_continue('round 1', 'run-1', $epoch{'run-1'}, 2);
appends_continue('round 1', 'run-2', $epoch{'run-2'}, 3);
appends_continue('round 1', 'run-u', undef, 4);

# --- round 2: pg_ctl stop -m immediate ----------------------------------------

@procs = start_appenders('round 2', 100001);
wait_for_entries('round 2', total_entries() + 3000, @procs);
$node->stop('immediate');
$node->start;
collect_appenders('round 2', @procs);

check_logs('round 2');
is(sql($EPOCHS_QUERY), epochs_string(%epoch), 'round 2: the epochs are unchanged');
appends_continue('round 2', $_->[0], $epoch{ $_->[0] }, $_->[1]) for @appenders[ 0, 2, 3, 4 ];

# A claim after the restart: the old epoch is fenced off, the new one goes on.
my $run0_old = $epoch{'run-0'};
$epoch{'run-0'} = sql(q{SELECT sandbox_store.run_claim('run-0')});
cmp_ok($epoch{'run-0'}, '>', $run0_old,
	"round 2: run-0 is claimed after the restart (epoch $epoch{'run-0'}, above $run0_old)");
is(sqlstate_of($node, "SELECT sandbox_store.run_log_append('run-0', rl_batch(0, 0, 1), $run0_old)"),
	'SB001', 'round 2: run-0\'s old epoch gets SB001');
is(sqlstate_of($node, "SELECT sandbox_store.run_log_close('run-2', $run2_old)"),
	'SB001', 'round 2: run-2\'s old epoch cannot close its log');
appends_continue('round 2', 'run-0', $epoch{'run-0'}, 0);
check_logs('round 2, after the new appends');

$node->stop;
done_testing();

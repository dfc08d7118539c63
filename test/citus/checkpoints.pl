# test/citus/checkpoints.pl: the checkpoint store on a real citus cluster.
#
# A coordinator and two workers (test/perl/SandboxStoreCitus.pm), sandbox_store
# distributed.  Every clock is passed as `at`, so no lease runs out by itself
# and nothing here depends on timing.  Then:
#
#   - distribute() distributes the checkpoint tables in the colocation group
#     of the others;
#   - a thread's single writer across nodes: one writer whichever node is
#     called, SBC05 for the others; a takeover after expiry through another
#     node has a greater fence, and the old writer's append, renew and
#     release through every node are refused;
#   - the head's compare-and-set across nodes: 12 appends of children of one
#     head, four through each node, all waiting at the writer's row before
#     it is let go: exactly one appended, the others SBC01, one chain;
#   - an id is unique in any thread across nodes (SBC03), get finds every
#     checkpoint through every node, list and head through every node;
#   - a thread's shard moved, the new node's sequence set back: the chain
#     moved whole, the next writer's fence is above the last;
#   - kill -9 of the worker holding a thread: after restart the chain, head
#     and writer are there, the next fence is above the last.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreTest;
use SandboxStoreCitus;
use IPC::Run ();
use Test::More;

my @nodes = citus_cluster();
my ($coord, $w1, $w2) = @nodes;

# A checkpoint as SQL: id, thread, parent (undef: a root), createdAt.
sub cp
{
	my ($id, $thread, $parent, $created) = @_;
	return "jsonb_build_object('id', "
	  . lit($id)
	  . ", 'threadId', "
	  . lit($thread)
	  . ", 'parentCheckpointId', "
	  . (defined $parent ? lit($parent) : 'NULL')
	  . ", 'createdAt', $created, 'reason', 'automatic', 'files', '[]'::jsonb,"
	  . " 'conversation', jsonb_build_array(jsonb_build_object('role', 'user', 'content', 'hi')),"
	  . " 'artifacts', '[]'::jsonb)";
}

# The clock of every call: 2026-01-01 00:00:00 UTC plus $s seconds.
sub at { return "'2026-01-01 00:00:00+00'::timestamptz + interval '$_[0] s'" }

# A thread id whose checkpoint shard is on $node.
sub thread_on
{
	my ($prefix, $node) = @_;
	my ($thread) = grep { shard_node($coord, 'sandbox_store.checkpoint_heads', $_, @nodes)->port == $node->port }
	  map { "$prefix/$_" } 1 .. 40;
	return $thread;
}

is( $coord->safe_psql(
		'postgres', q{
SELECT string_agg(logicalrelid::text, ' ' ORDER BY logicalrelid::text), count(DISTINCT colocationid)
  FROM pg_dist_partition WHERE logicalrelid::text ~ '^sandbox_store[.]checkpoint'}),
	'sandbox_store.checkpoint_heads sandbox_store.checkpoint_ids sandbox_store.checkpoint_writers sandbox_store.checkpoints|1',
	'distribute() distributes the checkpoint tables, in one colocation group');

# A thread's single writer across nodes.
my $thread = thread_on('ck', $w1);
my ($fence, $token) = split /\|/,
  $w2->safe_psql('postgres',
	"SELECT fence || '|' || owner_token FROM sandbox_store.checkpoint_acquire_writer('$thread', 60000, at => "
	  . at(0) . ')');
is( join(' ',
		map { sqlstate_of($_, "SELECT * FROM sandbox_store.checkpoint_acquire_writer('$thread', 60000, at => " . at(10) . ')') }
		  @nodes),
	'SBC05 SBC05 SBC05',
	'a live writer excludes a second one through every node (SBC05)');
is( $coord->safe_psql(
		'postgres',
		'SELECT sandbox_store.checkpoint_append(' . cp('root', $thread, undef, 1000) . ", NULL, '$thread', '$token', $fence, at => "
		  . at(20) . ')'),
	'root', 'the writer appends the root through the coordinator');
my ($fence2, $token2) = split /\|/,
  $coord->safe_psql('postgres',
	"SELECT fence || '|' || owner_token FROM sandbox_store.checkpoint_acquire_writer('$thread', 600000, at => "
	  . at(61) . ')');
cmp_ok($fence2, '>', $fence, "after the lease ran out, a takeover through the coordinator has a greater fence ($fence2 > $fence)");
is( join(' ',
		sqlstate_of(
			$w1,
			'SELECT sandbox_store.checkpoint_append(' . cp('late', $thread, 'root', 2000)
			  . ", 'root', '$thread', '$token', $fence, at => " . at(62) . ')'),
		sqlstate_of($w2, "SELECT sandbox_store.checkpoint_renew_writer('$thread', '$token', $fence, 60000, at => " . at(62) . ')'),
		$coord->safe_psql('postgres', "SELECT sandbox_store.checkpoint_release_writer('$thread', '$token', $fence)")),
	'SB001 SB001 f',
	"the old writer's append and renew are refused (SB001) and its release does nothing");

# The head's compare-and-set: 12 children of the root, four through each
# node, held at the writer's row (a renewal in an open transaction) until
# all of them wait for it.
{
	my $gate = $coord->background_psql('postgres');
	$gate->query_safe("BEGIN; SELECT sandbox_store.checkpoint_renew_writer('$thread', '$token2', $fence2, 600000, at => "
		  . at(63) . ')');
	my (@runs, @out, @err);
	my $k = 0;
	for my $node (@nodes)
	{
		for (1 .. 4)
		{
			my $p = $k++;
			($out[$p], $err[$p]) = ('', '');
			push @runs,
			  IPC::Run::start(
				[
					'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
					'SELECT sandbox_store.checkpoint_append(' . cp("child-$p", $thread, 'root', 3000 + $p)
					  . ", 'root', '$thread', '$token2', $fence2, at => " . at(64) . ')'
				],
				'>', \$out[$p], '2>', \$err[$p]);
		}
	}
	ok( shard_node($coord, 'sandbox_store.checkpoint_heads', $thread, @nodes)->poll_query_until(
			'postgres', q{SELECT count(*) >= 12 FROM pg_stat_activity WHERE wait_event_type = 'Lock'}),
		"all 12 appends wait for the writer's row on the thread's worker");
	$gate->query_safe('COMMIT');
	$gate->quit;
	$_->finish for @runs;
	my $appended = grep { /^child-\d+$/ } @out;
	my $stale = grep { /the head of thread .* is not the expected one/ } @err;
	is("$appended $stale", '1 11', 'exactly one append moved the head; the other 11 were refused (SBC01)');
	my ($winner) = map { /^(child-\d+)$/ ? $1 : () } @out;
	is( $coord->safe_psql(
			'postgres',
			"SELECT sandbox_store.checkpoint_head('$thread');"
			  . " SELECT string_agg(c->>'id', ' ' ORDER BY (c->>'createdAt')::int8) FROM sandbox_store.checkpoint_list('$thread') c"
		),
		"$winner\nroot $winner",
		'the head is the one appended, and the chain is root and it');
}

# An id is unique in any thread across nodes; reads through every node.
{
	my $other = thread_on('ck-other', $w2);
	my ($f, $t) = split /\|/,
	  $w1->safe_psql('postgres',
		"SELECT fence || '|' || owner_token FROM sandbox_store.checkpoint_acquire_writer('$other', 600000, at => "
		  . at(0) . ')');
	is( sqlstate_of(
			$w2,
			'SELECT sandbox_store.checkpoint_append(' . cp('root', $other, undef, 1000)
			  . ", NULL, '$other', '$t', $f, at => " . at(1) . ')'),
		'SBC03', "an id another thread on the other worker holds is refused (SBC03)");
	is( join(' ',
			map { $_->safe_psql('postgres', "SELECT sandbox_store.checkpoint_get('root')->>'threadId'") } @nodes),
		"$thread $thread $thread",
		'checkpoint_get finds it through every node');
}

# A thread's shard moved, the new node's fence sequence set back.
{
	my $from = shard_node($coord, 'sandbox_store.checkpoint_heads', $thread, @nodes);
	my ($to) = grep { $_ != $from && $_ != $coord } @nodes;
	my $shard = $coord->safe_psql('postgres',
		"SELECT get_shard_id_for_distribution_column('sandbox_store.checkpoint_heads', " . lit($thread) . ')');
	$coord->safe_psql('postgres',
		    "SELECT citus_move_shard_placement($shard, '127.0.0.1', "
		  . $from->port
		  . ", '127.0.0.1', "
		  . $to->port
		  . ", shard_transfer_mode => 'block_writes')");
	$to->safe_psql('postgres', "SELECT setval('sandbox_store.fence_seq', 1, false)");
	is(sqlstate_of($w2, "SELECT * FROM sandbox_store.checkpoint_acquire_writer('$thread', 60000, at => " . at(100) . ')'),
		'SBC05', 'after the move the live writer still excludes');
	my $fence3 =
	  $w1->safe_psql('postgres', "SELECT fence FROM sandbox_store.checkpoint_acquire_writer('$thread', 60000, at => " . at(700) . ')');
	cmp_ok($fence3, '>', $fence2, "after it ran out, the next writer's fence ($fence3) is above the last ($fence2)");
	is( $coord->safe_psql(
			'postgres',
			"SELECT count(*) FROM sandbox_store.checkpoint_list('$thread')"),
		'2', 'the chain moved whole');
}

# kill -9 of the worker holding the thread.
{
	my $victim = shard_node($coord, 'sandbox_store.checkpoint_heads', $thread, @nodes);
	my $head = $coord->safe_psql('postgres', "SELECT sandbox_store.checkpoint_head('$thread')");
	my $last = $coord->safe_psql(
		'postgres', "SELECT fence FROM sandbox_store.checkpoint_writers WHERE thread_id = " . lit($thread));
	kill9($victim);
	start_after_kill9($victim);
	is($coord->safe_psql('postgres', "SELECT sandbox_store.checkpoint_head('$thread')"),
		$head, 'after the restart the head is there');
	my $next =
	  $coord->safe_psql('postgres', "SELECT fence FROM sandbox_store.checkpoint_acquire_writer('$thread', 60000, at => " . at(2000) . ')');
	cmp_ok($next, '>', $last, "and the next writer's fence ($next) is above the last ($last)");
}

done_testing();

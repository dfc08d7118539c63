# test/citus/citus.pl: sandbox_store on a real citus cluster.
#
# A coordinator and two workers of the server of PG_CONFIG with the Citus
# that test/scripts/build-citus.sh builds into it once from the vendored
# source (Citus 13.2.2 on Debian's PostgreSQL 15, run by make test's citus
# suite; Citus 14.0.1 on PostgreSQL 18.6, run by the matrix's 18 step),
# connected over TCP on 127.0.0.1.  sandbox_store 1.5.1 is created on the
# coordinator (citus installs it on the workers) and distributed with its
# sandbox_store.distribute(), which leaves the run and checkpoint tables
# local; runs and checkpoints are written; then the update to the current
# version and distribute() again.  Then:
#
#   - the update and distribute() keep every run and log entry and the
#     runs' fences, and every checkpoint, its writer (moved out of leases)
#     and the writers' fences; distribute() distributes the run tables then
#     (by run id) and the checkpoint store (by thread, its ids by id), is
#     idempotent, colocates every table, delegates the single-key, the
#     single-run and the single-thread functions, and leaves instances.key
#     text on every node;
#   - the store contract through the coordinator and through each worker:
#     upsert, get, list, ensure (create, resume, recreate), lock and lease
#     mode, fenced writes, claim/renew/release, the two-commit lease create
#     (sandbox_upsert_release), delete, lock_holder, the claims view, reap;
#   - fences per key after the key's shard moves to the other worker: the
#     next fence is above the last, the old holder is refused (SB001), even
#     with the new node's fence sequence far behind;
#   - concurrent lease-mode ensures of one new key, spread over the three
#     nodes: exactly one create;
#   - concurrent lock-mode ensure-then-upsert transactions, likewise;
#   - a shard move waits for an open lock-mode transaction on one of its keys;
#   - kill -9 of the worker holding a key's shard: calls for that key fail
#     with an error, keys on the other worker keep working; after restart
#     everything is there;
#   - the run store through each node; a claim's new epoch fences the older
#     driver's every write through every node; 12 concurrent appenders of
#     one run over the 3 nodes leave dense seqs in each appender's order;
#     the listings and prune read both workers (prune skips a log another
#     transaction holds);
#   - a run's epochs and log across a shard move (the new node's sequence
#     set back) and a worker's crash and restart;
#   - failover of a worker to its streaming standby (citus_update_node): the
#     claim, the record and fences carry over, the old holder is refused;
#   - the way back to plain tables on the coordinator, runs and checkpoints
#     included
#     (undistribute_table refuses an extension's tables).

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

# A cluster set up by an older release first: 1.5.1's distribute()
# distributed instances and leases only, and left the run tables local on
# the coordinator.  (A worker gets a standby below.)
my @nodes = citus_cluster(allows_streaming => 1, distribute => 0, version => '1.5.1');
my ($coord, $w1, $w2) = @nodes;

# distribute(): refused to a non-superuser even with EXECUTE.
$coord->safe_psql('postgres',
	'CREATE ROLE sb_app LOGIN; GRANT USAGE ON SCHEMA sandbox_store TO sb_app;'
	  . ' GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO sb_app');
is(sqlstate_of($coord, 'SET ROLE sb_app; SELECT sandbox_store.distribute()'),
	'42501', 'distribute() refuses a role that is not a superuser (42501)');
is($coord->safe_psql('postgres', "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text LIKE 'sandbox_store.%'"),
	'0', 'and distributes nothing');

# A checkpoint as SQL: id, thread, parent (undef: a root).
sub cp
{
	my ($id, $thread, $parent) = @_;
	return "jsonb_build_object('id', " . lit($id) . ", 'threadId', " . lit($thread)
	  . ", 'parentCheckpointId', " . (defined $parent ? lit($parent) : 'NULL')
	  . ", 'createdAt', 1, 'reason', 'automatic', 'files', '[]'::jsonb, 'conversation', '[]'::jsonb,"
	  . " 'artifacts', '[]'::jsonb)";
}
# Checkpoints written at 1.5.1 before its distribute(), every clock passed as
# at: a writer live all along (its claim in leases, which distribute() moves
# to the shards) with two checkpoints in the coordinator's local tables, and
# a released writer, whose row keeps its fence.
my ($cp_fence, $cp_token) = split /\|/, $coord->safe_psql('postgres',
	"SELECT fence || '|' || owner_token FROM sandbox_store.checkpoint_acquire_writer('old-cp', 600000, at => '2026-01-01 00:00:00+00')");
$coord->safe_psql('postgres',
	    'SELECT sandbox_store.checkpoint_append(' . cp('old-c1', 'old-cp') . ", NULL, 'old-cp', '$cp_token', $cp_fence,"
	  . " at => '2026-01-01 00:00:01+00'); SELECT sandbox_store.checkpoint_append(" . cp('old-c2', 'old-cp', 'old-c1')
	  . ", 'old-c1', 'old-cp', '$cp_token', $cp_fence, at => '2026-01-01 00:00:01+00')");
my $released_fence = $coord->safe_psql('postgres', q{
SELECT sandbox_store.checkpoint_release_writer('old-released', owner_token, fence), fence
  FROM sandbox_store.checkpoint_acquire_writer('old-released', 600000, at => '2026-01-01 00:00:00+00')});
($released_fence) = $released_fence =~ /\|(\d+)$/;
$coord->safe_psql('postgres', 'SELECT sandbox_store.distribute()');
my $dist_query = q{
SELECT string_agg(logicalrelid::text || ' ' || partmethod::text, ', ' ORDER BY logicalrelid::text),
       count(DISTINCT colocationid)
  FROM pg_dist_partition WHERE logicalrelid::text LIKE 'sandbox_store.%'};
is($coord->safe_psql('postgres', $dist_query),
	'sandbox_store.instances h, sandbox_store.leases h|1', "1.5.1's distribute() distributes instances and leases");

# Runs and logs written at 1.5.1, on the coordinator's local tables; a
# record and a claim in the distributed ones.
$coord->safe_psql(
	'postgres', q{
SELECT count(*) FROM generate_series(1, 30) i,
  sandbox_store.run_create_or_resume('old/' || i, 'old-thread-' || (i % 3), 1767225600000 + i);
SELECT count(*) FROM generate_series(1, 30) i,
  sandbox_store.run_log_append('old/' || i, jsonb_build_array(jsonb_build_object('i', i), jsonb_build_object('j', 2)));
SELECT FROM sandbox_store.sandbox_upsert('old/key', 'e2b', 'sbx-old', 't-old');
});
my $stale_epoch = $coord->safe_psql('postgres', q{SELECT sandbox_store.run_claim('old/1')});
my $old_epoch = $coord->safe_psql('postgres', q{SELECT sandbox_store.run_claim('old/1')});
$coord->safe_psql('postgres', qq{SELECT sandbox_store.run_log_append('old/1', '[{"k": 3}]', $old_epoch)});
# A run written through worker1 at 1.5.1: in that worker's own local tables,
# which the coordinator never sees.
$w1->safe_psql(
	'postgres', q{
SELECT sandbox_store.run_create_or_resume('via-worker', 'old-thread-w', 1767225600000);
SELECT sandbox_store.run_log_append('via-worker', '[{"w": 1}, {"w": 2}]');});
# (the columns 1.5.1 has)
my $runs_digest = q{
SELECT md5(string_agg(concat_ws('|', run_id, thread_id, status, started_at, driver_epoch), ','
                      ORDER BY run_id)) FROM sandbox_store.runs;
SELECT md5(string_agg(concat_ws('|', run_id, last_seq, closed_at), ',' ORDER BY run_id)) FROM sandbox_store.run_logs;
SELECT count(*) || ' ' || md5(string_agg(run_id || '|' || seq || '|' || chunk::text, ',' ORDER BY run_id, seq))
  FROM sandbox_store.run_log_entries;};

# The update, then distribute() again (twice: the second changes nothing).
$coord->safe_psql('postgres', 'ALTER EXTENSION sandbox_store UPDATE');
is( $coord->safe_psql(
		'postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT DISTINCT result FROM run_command_on_workers($$SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'$$)}),
	"1.9.0\n1.9.0", 'ALTER EXTENSION UPDATE takes the coordinator and both workers from 1.5.1 to 1.9.0');
is($coord->safe_psql('postgres', $dist_query),
	'sandbox_store.instances h, sandbox_store.leases h|1', 'the update distributes nothing by itself');
# A checkpoint writer taken through worker1 between the update and
# distribute(): a row of that worker's own checkpoint_writers.
$w1->safe_psql('postgres',
	"SELECT FROM sandbox_store.checkpoint_acquire_writer('via-worker-cp', 600000, at => '2026-01-01 00:00:00+00')");

# distribute() refuses while a worker holds runs or checkpoint writers of its
# own (distributing would hide them), and changes nothing; the rows copied to
# the coordinator and deleted on the worker (docs/operations.md), it goes on.
is(sqlstate_of($coord, 'SELECT sandbox_store.distribute()'),
	'55000', 'distribute() refuses while a worker holds rows of its own (55000)');
my (undef, undef, $local_err) = $coord->psql('postgres', 'SELECT sandbox_store.distribute()');
like(
	$local_err,
	qr/ERROR:  a worker holds rows of its own in the run or checkpoint tables of sandbox_store\n.*127\.0\.0\.1:@{[$w1->port]} 5 rows/s,
	"the error names the worker and its rows");
is($coord->safe_psql('postgres', $dist_query),
	'sandbox_store.instances h, sandbox_store.leases h|1', 'and distributes nothing');
for my $table (qw(runs run_logs run_log_entries checkpoint_writers))
{
	my $rows = $w1->safe_psql('postgres', "COPY (SELECT * FROM ONLY sandbox_store.$table) TO STDOUT");
	$coord->safe_psql('postgres', "COPY sandbox_store.$table FROM STDIN;\n$rows\n\\.\n");
}
$w1->safe_psql('postgres',
	'DELETE FROM sandbox_store.run_log_entries; DELETE FROM sandbox_store.run_logs; DELETE FROM sandbox_store.runs;'
	  . ' DELETE FROM sandbox_store.checkpoint_writers');
my $before = $coord->safe_psql('postgres', $runs_digest);
$coord->safe_psql('postgres', 'SELECT sandbox_store.distribute()');
$coord->safe_psql('postgres', 'SELECT sandbox_store.distribute()');
my $all_distributed =
    'sandbox_store.checkpoint_heads h, sandbox_store.checkpoint_ids h, sandbox_store.checkpoint_writers h, '
  . 'sandbox_store.checkpoints h, sandbox_store.instances h, sandbox_store.leases h, '
  . 'sandbox_store.run_log_entries h, sandbox_store.run_logs h, sandbox_store.runs h|1';
is($coord->safe_psql('postgres', $dist_query),
	$all_distributed,
	'distribute() again hash-distributes the run and checkpoint tables too, all in one colocation group (run twice)');
# The writers moved out of leases with their fences: the live one appends
# on, the released thread's next writer has a higher fence; the
# checkpoints, the worker's writer included, are read through every node.
is( $coord->safe_psql(
		'postgres', q{
SELECT count(*) FROM sandbox_store.leases WHERE starts_with(key, E'\\x01checkpoint-writer\\x01');
SELECT string_agg(thread_id || ' ' || fence || ' ' || (owner_token IS NOT NULL), ', ' ORDER BY thread_id)
  FROM sandbox_store.checkpoint_writers}),
	"0\nold-cp $cp_fence true, old-released $released_fence false, via-worker-cp "
	  . $coord->safe_psql('postgres', q{SELECT fence FROM sandbox_store.checkpoint_writers WHERE thread_id = 'via-worker-cp'})
	  . ' true',
	'distribute() moved the writers out of leases, fences and holders kept, the worker\'s writer with them');
is( $w2->safe_psql(
		'postgres',
		'SELECT sandbox_store.checkpoint_append(' . cp('old-c3', 'old-cp', 'old-c2')
		  . ", 'old-c2', 'old-cp', '$cp_token', $cp_fence, at => '2026-01-01 00:00:02+00')"),
	'old-c3', 'the writer taken before the update appends on, through a worker');
is( join(' ',
		map { $_->safe_psql('postgres', q{SELECT string_agg(c->>'id', ',') FROM sandbox_store.checkpoint_list('old-cp') c}) }
		  @nodes),
	'old-c1,old-c2,old-c3 old-c1,old-c2,old-c3 old-c1,old-c2,old-c3',
	'the chain is listed through every node');
is($w1->safe_psql('postgres', q{SELECT sandbox_store.checkpoint_get('old-c1')->>'threadId'}),
	'old-cp', 'and an old checkpoint is found by its id');
cmp_ok(
	$coord->safe_psql('postgres',
		q{SELECT fence FROM sandbox_store.checkpoint_acquire_writer('old-released', 600000, at => '2026-01-01 00:00:03+00')}),
	'>', $released_fence, "the released thread's next writer has a higher fence");
is($coord->safe_psql('postgres', $runs_digest), $before,
	'every run, log entry and its order kept through the update and distribute()');
is( $w2->safe_psql(
		'postgres', q{SELECT sandbox_store.run_get('via-worker')->>'threadId';
SELECT string_agg(chunk->>'w', ' ' ORDER BY seq) FROM sandbox_store.run_log_read('via-worker')}),
	"old-thread-w\n1 2", 'the run written through worker1 is read through worker2');
is( $coord->safe_psql(
		'postgres',
		q{SELECT sum(pg_relation_size(c)) FROM unnest(ARRAY['sandbox_store.runs', 'sandbox_store.run_logs', 'sandbox_store.run_log_entries']::regclass[]) c}
	),
	'0',
	"the coordinator's local copies of the run tables are emptied");
is( $coord->safe_psql(
		'postgres', q{
SELECT count(*) FILTER (WHERE objid::regproc::text LIKE 'sandbox_store.sandbox%'),
       string_agg(objid::regproc::text, ' ' ORDER BY objid::regprocedure::text) FILTER (WHERE objid::regproc::text LIKE 'sandbox_store.run%')
  FROM pg_dist_object
 WHERE classid = 'pg_proc'::regclass AND distribution_argument_index = 0
   AND objid::regproc::text LIKE 'sandbox_store.%'}),
	'11|sandbox_store.run_claim sandbox_store.run_create_or_resume sandbox_store.run_get sandbox_store.run_log_append'
	  . ' sandbox_store.run_log_read sandbox_store.run_log_status sandbox_store.run_log_watch sandbox_store.run_update',
	'distribute() delegates the eleven single-key functions by their key and eight run functions by their run id'
	  . ' (of run_log_append, the form with notify)');
is( sqlstate_of($coord, qq{SELECT sandbox_store.run_log_append('old/1', '[{"k": 4}]', $stale_epoch)}),
	'SB001', 'a run claimed at 1.5.1 keeps its fence: an older epoch is refused');
is($coord->safe_psql('postgres', qq{SELECT sandbox_store.run_log_append('old/1', '[{"k": 4}]', $old_epoch, false)}),
	'{4}', 'and its driver appends on with the next seq');
for my $node (@nodes)
{
	is( $node->safe_psql(
			'postgres', q{
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'sandbox_store.instances'::regclass AND attname = 'key'}),
		'text', $node->name . ': instances.key is text');
}

# Where a key's shard lives.
sub node_of { return shard_node($coord, 'sandbox_store.instances', $_[0], @nodes) }

# The contract through each node.
for my $via (@nodes)
{
	my $n = $via->name;
	my $out = $via->safe_psql(
		'postgres', qq{
SELECT key FROM sandbox_store.sandbox_upsert('$n/a', 'e2b', 'sbx-a', 't-$n');
SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('$n/a');
SELECT count(*) FROM sandbox_store.sandbox_list('t-$n');
SELECT action || ' ' || coalesce(provider_sandbox_id, '-') FROM sandbox_store.sandbox_ensure('$n/a', 'run-1');
SELECT action FROM sandbox_store.sandbox_ensure('$n/b', 'run-1');
SELECT action FROM sandbox_store.sandbox_ensure('$n/a', 'run-2', max_age => '0 s');
SELECT sandbox_store.sandbox_delete('$n/a');
SELECT count(*) FROM sandbox_store.sandbox_get('$n/a');
});
	is($out, "$n/a\nsbx-a\n1\nresume sbx-a\ncreate\nrecreate\nt\n0",
		"$n: upsert, get, list, ensure (resume, create, recreate), delete");

	$out = $via->safe_psql(
		'postgres', qq{
SELECT action FROM sandbox_store.sandbox_ensure('$n/l', 'run-1', lease => '1 hour');
SELECT count(*) FROM sandbox_store.claims WHERE key = '$n/l';
SELECT fence, owner_token FROM sandbox_store.claims WHERE key = '$n/l' \\gset
SELECT key FROM sandbox_store.sandbox_upsert('$n/l', 'e2b', 'sbx-l', 't', fence => :fence);
SELECT sandbox_store.sandbox_renew('$n/l', :'owner_token', '1 hour') > now();
SELECT sandbox_store.sandbox_release('$n/l', :'owner_token');
SELECT count(*) FROM sandbox_store.claims WHERE key = '$n/l';
SELECT sandbox_store.sandbox_try_lock('$n/l');
});
	is($out, "create\n1\n$n/l\nt\nt\n0\nt", "$n: lease mode: claim, fenced upsert, renew, release, try_lock");
	is(sqlstate_of($via, "SELECT sandbox_store.sandbox_upsert('$n/l', 'e2b', 'x', 't', fence => 1000000)"),
		'SB001', "$n: a write with a fence never given for the key is refused");

	# The 1.3 lease-mode create: the claim, then one write that also ends it.
	my $f1 = $via->safe_psql('postgres',
		"SELECT fence FROM sandbox_store.sandbox_ensure('$n/r', 'run-1', lease => '1 hour')");
	$out = $via->safe_psql(
		'postgres', qq{
SELECT key || ' ' || provider_sandbox_id FROM sandbox_store.sandbox_upsert_release('$n/r', $f1, 'e2b', 'sbx-r', 't');
SELECT count(*) FROM sandbox_store.claims WHERE key = '$n/r';
SELECT action || ' ' || provider_sandbox_id || ' ' || (fence > $f1) FROM sandbox_store.sandbox_ensure('$n/r', 'run-2', lease => '1 hour');
});
	is($out, "$n/r sbx-r\n0\nresume sbx-r true",
		"$n: lease mode in two commits: claim, sandbox_upsert_release, the next claim resumes");
	is(sqlstate_of($via, "SELECT sandbox_store.sandbox_upsert_release('$n/r', $f1, 'e2b', 'sbx-stale', 't')"),
		'SB001', "$n: sandbox_upsert_release with the ended claim's fence is refused");
	is($via->safe_psql('postgres', "SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('$n/r')"),
		'sbx-r', "$n: the refused write changed nothing");

	# lock_holder: a transaction holding the key's lock, seen from here.
	my $h = $via->background_psql('postgres');
	$h->query_safe("BEGIN; SELECT sandbox_store.sandbox_lock('$n/h')");
	my $pid = $h->query_safe('SELECT pg_backend_pid()');
	# (A bare call: citus sends only a plain call to the key's node.)
	my $holder = $via->safe_psql('postgres', "SELECT sandbox_store.sandbox_lock_holder('$n/h')");
	like($holder, qr/^\d+$/, "$n: sandbox_lock_holder sees a backend holding the key ($holder)");
	is(sqlstate_of($via, "SELECT sandbox_store.sandbox_lock('$n/h', wait => '0')"),
		'55P03', "$n: another lock of the key is not obtained while it is held");
	$h->query_safe('COMMIT');
	$h->quit;
}

# REPEATABLE READ: refused with a clear error, not half-checked.
is( sqlstate_of(
		$coord,
		"BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT * FROM sandbox_store.sandbox_ensure('rr/1', 'run-1'); COMMIT"),
	'0A000',
	'an ensure at REPEATABLE READ is refused with 0A000');

# reap and list across shards, through the coordinator.
$coord->safe_psql('postgres', q{
SELECT count(*) FROM generate_series(1, 20) i,
  sandbox_store.sandbox_upsert('reap/' || i, 'e2b', 'sbx', 't-reap', updated_at => now() - interval '2 days')});
is($coord->safe_psql('postgres', q{SELECT count(*) FROM sandbox_store.sandbox_list('t-reap')}),
	'20', 'sandbox_list reads every shard');
is( $coord->safe_psql(
		'postgres', q{SELECT count(*) FROM sandbox_store.sandbox_reap('1 day', 100) WHERE key LIKE 'reap/%'}),
	'20', 'sandbox_reap deletes idle records on every shard');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM sandbox_store.sandbox_list('t-reap')}),
	'0', 'and they are gone');

# Where a run's shard lives.
sub node_of_run { return shard_node($coord, 'sandbox_store.runs', $_[0], @nodes) }

# A run id whose shard is on $node (the first of PREFIX/1, PREFIX/2, ...).
sub run_on
{
	my ($prefix, $node) = @_;
	return $coord->safe_psql(
		'postgres', qq{
SELECT run FROM generate_series(1, 100) i, LATERAL (SELECT @{[lit($prefix)]} || '/' || i AS run) r
 WHERE (SELECT nodeport FROM pg_dist_shard_placement
         WHERE shardid = get_shard_id_for_distribution_column('sandbox_store.runs', r.run)) = @{[$node->port]}
 ORDER BY i LIMIT 1});
}

# The run store through each node.
for my $via (@nodes)
{
	my $n = $via->name;
	my $out = $via->safe_psql(
		'postgres', qq{
SELECT sandbox_store.run_create_or_resume('$n/run', 't-$n', 1767225600000)->>'status';
SELECT sandbox_store.run_claim('$n/run') AS epoch \\gset
SELECT sandbox_store.run_log_append('$n/run', '[{"a": 1}, {"a": 2}]', :epoch, false);
SELECT sandbox_store.run_log_append('$n/run', '[{"a": 3}]', :epoch);
SELECT sandbox_store.run_log_watch('$n/run');
SELECT string_agg(seq || ':' || chunk::text, ' ' ORDER BY seq) FROM sandbox_store.run_log_read('$n/run', 1);
SELECT sandbox_store.run_update('$n/run', '{"status": "completed", "finishedAt": 1767225601000}', :epoch);
SELECT sandbox_store.run_log_close('$n/run', :epoch);
SELECT last_seq || ' ' || closed FROM sandbox_store.run_log_status('$n/run');
SELECT sandbox_store.run_get('$n/run')->>'status';
});
	is( $out,
		qq{running\n{1,2}\n{3}\n(3,f)\n2:{"a": 2} 3:{"a": 3}\nt\nt\n3 true\ncompleted},
		"$n: the run store: create, claim, fenced appends (with and without notify), watch, read, update, close, status, get"
	);
}

# A claim's new epoch fences the older driver through every node, for a
# run on either worker.
for my $worker ($w1, $w2)
{
	my $run = run_on('fence', $worker);
	my $wn = $worker->name;
	$coord->safe_psql('postgres', "SELECT sandbox_store.run_create_or_resume('$run', 't-fence', 1767225600000)");
	my $e1 = $w1->safe_psql('postgres', "SELECT sandbox_store.run_claim('$run')");
	is($coord->safe_psql('postgres', qq{SELECT sandbox_store.run_log_append('$run', '[{"by": 1}]', $e1, false)}),
		'{1}', "run on $wn: the first driver appends through the coordinator");
	my $e2 = $w2->safe_psql('postgres', "SELECT sandbox_store.run_claim('$run')");
	cmp_ok($e2, '>', $e1, "run on $wn: a claim through worker2 gives a greater epoch ($e2 > $e1)");
	is( join(' ',
			sqlstate_of($coord, qq{SELECT sandbox_store.run_log_append('$run', '[{"by": 1}]', $e1, false)}),
			sqlstate_of($w1,    qq{SELECT sandbox_store.run_log_append('$run', '[{"by": 1}]', $e1)}),
			sqlstate_of($w2,    qq{SELECT sandbox_store.run_log_upsert('$run', '{2}', '[{"by": 1}]', $e1)}),
			sqlstate_of($coord, qq{SELECT sandbox_store.run_update('$run', '{"status": "failed"}', $e1)}),
			sqlstate_of($w1,    qq{SELECT sandbox_store.run_log_close('$run', $e1)}),
			sqlstate_of($w2,    qq{SELECT sandbox_store.run_log_append('$run', '[{"by": 0}]')})),
		'SB001 SB001 SB001 SB001 SB001 SB001',
		"run on $wn: the older driver's appends (both forms), upsert, status write and close, and an unfenced append,"
		  . ' are refused through every node');
	is( $w1->safe_psql(
			'postgres', qq{
SELECT sandbox_store.run_log_append('$run', '[{"by": 2}]', $e2, false);
SELECT sandbox_store.run_log_close('$run', $e2);
SELECT string_agg(seq || ':' || chunk::text, ' ' ORDER BY seq) FROM sandbox_store.run_log_read('$run');
SELECT sandbox_store.run_get('$run')->>'status';}),
		qq({2}\nt\n1:{"by": 1} 2:{"by": 2}\nrunning),
		"run on $wn: the new driver appends and closes; nothing the old one tried was written");
}

# Concurrent appenders of one run, four through each node, each appending
# ten batches of three chunks under the run's epoch: the seqs are 1..360
# with no gap and no repeat, every chunk is there once, and each appender's
# chunks are in the order it appended them.
{
	my $run = run_on('dense', $w2);
	$coord->safe_psql('postgres', "SELECT sandbox_store.run_create_or_resume('$run', 't-dense', 1767225600000)");
	my $epoch = $coord->safe_psql('postgres', "SELECT sandbox_store.run_claim('$run')");
	# The run's log row held, so that all twelve wait at their first append
	# and then contend (the claim made the row).
	my $gate = $coord->background_psql('postgres');
	$gate->query_safe('BEGIN; SELECT 1 FROM sandbox_store.run_logs WHERE run_id = ' . lit($run) . ' FOR UPDATE');
	my (@runs, @err);
	my $k = 0;
	for my $node (@nodes)
	{
		for (1 .. 4)
		{
			my $p = $k++;
			$err[$p] = '';
			my $sql = join '',
			  map {
				my $b = $_;
				"SELECT sandbox_store.run_log_append('$run', jsonb_build_array("
				  . join(', ', map { "jsonb_build_object('p', $p, 'n', " . (3 * $b + $_) . ')' } 0 .. 2)
				  . "), $epoch, false);"
			  } 0 .. 9;
			push @runs,
			  IPC::Run::start([ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-c', $sql ],
				'>', \my $out, '2>', \$err[$p]);
		}
	}
	ok( $w2->poll_query_until(
			'postgres', q{
SELECT count(*) = 12 FROM pg_stat_activity
 WHERE wait_event_type = 'Lock' AND query LIKE '%run_log_append%'}),
		"all 12 appenders wait for the run's log row on its worker");
	$gate->query_safe('COMMIT');
	$gate->quit;
	$_->finish for @runs;
	is(join('', @err), '', '12 appenders over 3 nodes: no error');
	is( $coord->safe_psql(
			'postgres', qq{
SELECT count(*) || ' ' || min(seq) || ' ' || max(seq) || ' ' || count(DISTINCT seq) || ' '
       || count(DISTINCT (chunk->>'p', chunk->>'n'))
  FROM sandbox_store.run_log_read('$run')}),
		'360 1 360 360 360',
		'the seqs are 1..360, dense, and every chunk is there once');
	is( $coord->safe_psql(
			'postgres', qq{
SELECT count(*) FROM (
  SELECT (chunk->>'n')::int - lag((chunk->>'n')::int) OVER (PARTITION BY chunk->>'p' ORDER BY seq) AS step
    FROM sandbox_store.run_log_read('$run')) s
 WHERE step IS DISTINCT FROM 1 AND step IS NOT NULL}),
		'0', "each appender's chunks are in its own order");
	is( $coord->safe_psql(
			'postgres', qq{
SELECT count(*) FROM (
  SELECT seq, (chunk->>'n')::int % 3 AS pos, lag(chunk->>'p') OVER (ORDER BY seq) AS prev_p, chunk->>'p' AS p
    FROM sandbox_store.run_log_read('$run')) s
 WHERE pos > 0 AND p IS DISTINCT FROM prev_p}),
		'0', 'and the three chunks of each append are consecutive');
}

# The listings and prune read every shard: runs of one thread on both
# workers.
{
	my @thread_runs = (run_on('list', $w1), run_on('list', $w2), run_on('list2', $w1), run_on('list2', $w2));
	my $i = 0;
	$coord->safe_psql('postgres',
		join '',
		map { $i++; "SELECT sandbox_store.run_create_or_resume('$_', 't-list', " . (1767225600000 + $i) . ');' }
		  @thread_runs);
	is( $coord->safe_psql(
			'postgres', q{SELECT string_agg(r->>'runId', ' ') FROM sandbox_store.run_list_by_thread('t-list') r}),
		join(' ', @thread_runs), 'run_list_by_thread lists the runs of both workers, by startedAt');
	is($coord->safe_psql('postgres', q{SELECT sandbox_store.run_find_active('t-list')->>'runId'}),
		$thread_runs[-1], 'run_find_active finds the latest running one');
	$coord->safe_psql('postgres',
		    "SELECT sandbox_store.run_update('$thread_runs[0]', '{\"detachedSince\": 1000}');"
		  . "SELECT sandbox_store.run_update('$thread_runs[1]', '{\"detachedSince\": 2000}');");
	is( $coord->safe_psql(
			'postgres',
			q{SELECT string_agg(r->>'runId', ' ') FROM sandbox_store.run_list_reclaimable(1767225600000, 1000) r}),
		"$thread_runs[0] $thread_runs[1]",
		'run_list_reclaimable lists the detached runs of both workers');
	$coord->safe_psql('postgres',
		join '',
		map { "SELECT sandbox_store.run_log_append('$_', '[{\"x\": 1}]'); SELECT sandbox_store.run_log_close('$_');" }
		  @thread_runs);
	my $holder = $coord->background_psql('postgres');
	# (a transaction holding the first log's row, as a writer in flight does)
	$holder->query_safe(
		'BEGIN; SELECT 1 FROM sandbox_store.run_logs WHERE run_id = ' . lit($thread_runs[0]) . ' FOR UPDATE');
	my $closed = $coord->safe_psql('postgres',
		q{SELECT count(*) FROM sandbox_store.run_logs WHERE closed_at IS NOT NULL});
	is($coord->safe_psql('postgres', q{SELECT sandbox_store.run_log_prune('0 s')}),
		$closed - 1, 'run_log_prune deletes the closed logs on both workers, but one');
	is( $coord->safe_psql(
			'postgres', 'SELECT count(*) FROM sandbox_store.run_log_entries WHERE run_id IN ('
			  . join(', ', map { lit($_) } @thread_runs[ 1 .. 3 ]) . ')'),
		'0', 'with their entries');
	is( $coord->safe_psql(
			'postgres', 'SELECT string_agg(run_id, \' \' ORDER BY run_id) FROM sandbox_store.run_logs WHERE run_id IN ('
			  . join(', ', map { lit($_) } @thread_runs) . ')'),
		$thread_runs[0], 'but skips the one another transaction holds');
	$holder->query_safe('COMMIT');
	$holder->quit;
	is($coord->safe_psql('postgres', q{SELECT sandbox_store.run_log_prune('0 s')}),
		'1', 'and deletes it once that transaction ended');
}

# Concurrent ensures of one new key, four sessions on each node at once.
sub race
{
	my ($label, $sql_of) = @_;
	my (@runs, @out, @err);
	my $i = 0;
	for my $node (@nodes)
	{
		for (1 .. 4)
		{
			my $k = $i++;
			$out[$k] = $err[$k] = '';
			push @runs,
			  IPC::Run::start(
				[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', $sql_of->($k) ],
				'>', \$out[$k], '2>', \$err[$k]);
		}
	}
	$_->finish for @runs;
	my %actions;
	for my $k (0 .. $#out)
	{
		my ($action) = $out[$k] =~ /^(create|resume|recreate)$/m;
		$action //=
		    $err[$k] =~ /could not lock sandbox key/ ? 'not obtained'
		  : $err[$k] =~ /distributed deadlock/ ? 'deadlock'
		  :                                          "error: $err[$k]";
		$actions{$action}++;
	}
	return join(', ', map { "$_ $actions{$_}" } sort keys %actions);
}

is( race('lease',
		sub { "SELECT action FROM sandbox_store.sandbox_ensure('race/lease', 'run-$_[0]', lease => '1 hour', wait => '0')" }),
	'create 1, not obtained 11',
	'lease mode: 12 concurrent ensures of a new key over 3 nodes, exactly one create');
like( race(
		'lock',
		sub {
			"BEGIN; SELECT action FROM sandbox_store.sandbox_ensure('race/lock', 'run-$_[0]');"
			  . " SELECT pg_sleep(0.2);"
			  . " SELECT FROM sandbox_store.sandbox_upsert('race/lock', 'e2b', 'sbx-$_[0]', 't'); COMMIT;";
		}),
	qr/^create 1, (deadlock \d+, )?resume \d+$/,
	'lock mode: 12 concurrent ensure-then-upsert transactions over 3 nodes, exactly one create'
	  . ' (citus may cancel a waiter as a distributed deadlock, 40P01: the app retries it)');

# Fences per key across a shard move, with the new node's sequence behind.
{
	my $key = 'move/1';
	my $from = node_of($key);
	my ($to) = grep { $_ != $from && $_ != $coord } @nodes;
	($to) = grep { $_ != $from } ($w1, $w2) unless $to;
	# An hour's lease: the move takes seconds (more on a busy machine), and
	# the claim must still be live after it.
	my ($fence, $token) = split /\|/, $coord->safe_psql('postgres',
		"SELECT fence || '|' || owner_token FROM sandbox_store.sandbox_claim('$key', '1 hour')");
	my $shard = $coord->safe_psql('postgres',
		"SELECT get_shard_id_for_distribution_column('sandbox_store.instances', " . lit($key) . ')');
	$coord->safe_psql('postgres',
		    "SELECT citus_move_shard_placement($shard, '127.0.0.1', "
		  . $from->port
		  . ", '127.0.0.1', "
		  . $to->port
		  . ", shard_transfer_mode => 'block_writes')");
	is(node_of($key)->port, $to->port, "the key's shard moved from " . $from->name . ' to ' . $to->name);
	$to->safe_psql('postgres', "SELECT setval('sandbox_store.fence_seq', 1, false)");
	is($coord->safe_psql('postgres', "SELECT count(*) FROM sandbox_store.claims WHERE key = '$key'"),
		'1', 'the live claim moved with the shard');
	is(sqlstate_of($coord, "SELECT * FROM sandbox_store.sandbox_claim('$key', '1 minute', wait => '0')"),
		'55P03', 'and still excludes a new claim');
	# The holder's last renewal, on the new node, leaves its claim a second;
	# then it stops.  The next claim waits for that second to run out (the
	# claim's own wait polls until the expiry: no sleep decides it).
	is( $coord->safe_psql('postgres',
			"SELECT sandbox_store.sandbox_renew('$key', '$token', '1 second') IS NOT NULL"),
		't', 'the holder renews its claim on the new node');
	my $next = $coord->safe_psql('postgres',
		"SELECT fence FROM sandbox_store.sandbox_claim('$key', '1 hour', wait => '3 minutes')");
	cmp_ok($next, '>', $fence,
		"after the move, with the new node's sequence set back, the next fence ($next) is above the last ($fence)");
	is( sqlstate_of(
			$w1, "SELECT sandbox_store.sandbox_upsert('$key', 'e2b', 'sbx', 't', fence => $fence)"),
		'SB001',
		'the old holder is refused');
}

# A run's epochs across a shard move, with the new node's sequence set
# back: the driver appends on, the next claim's epoch is above every epoch
# the run had, and the older driver is refused.
{
	my $run = run_on('move-run', $w1);
	$coord->safe_psql('postgres', "SELECT sandbox_store.run_create_or_resume('$run', 't-move', 1767225600000)");
	my $e1 = $coord->safe_psql('postgres', "SELECT sandbox_store.run_claim('$run')");
	$coord->safe_psql('postgres', qq{SELECT sandbox_store.run_log_append('$run', '[{"m": 1}, {"m": 2}]', $e1, false)});
	my $shard = $coord->safe_psql('postgres',
		"SELECT get_shard_id_for_distribution_column('sandbox_store.runs', " . lit($run) . ')');
	$coord->safe_psql('postgres',
		    "SELECT citus_move_shard_placement($shard, '127.0.0.1', "
		  . $w1->port
		  . ", '127.0.0.1', "
		  . $w2->port
		  . ", shard_transfer_mode => 'block_writes')");
	is(node_of_run($run)->port, $w2->port, "the run's shard moved from worker1 to worker2");
	$w2->safe_psql('postgres', "SELECT setval('sandbox_store.fence_seq', 1, false)");
	is($coord->safe_psql('postgres', qq{SELECT sandbox_store.run_log_append('$run', '[{"m": 3}]', $e1, false)}),
		'{3}', 'after the move the driver appends on with the next seq');
	my $e2 = $w1->safe_psql('postgres', "SELECT sandbox_store.run_claim('$run')");
	cmp_ok($e2, '>', $e1,
		"after the move, with the new node's sequence set back, the next epoch ($e2) is above the last ($e1)");
	is(sqlstate_of($coord, qq{SELECT sandbox_store.run_log_append('$run', '[{"m": 0}]', $e1, false)}),
		'SB001', 'the older driver is refused');
	is( $coord->safe_psql(
			'postgres', qq{SELECT string_agg(chunk->>'m', ' ' ORDER BY seq) FROM sandbox_store.run_log_read('$run')}),
		'1 2 3', 'the log moved whole');
}

# Lock mode across a shard move: the move waits for a transaction that
# holds a key of the shard (its delegated call touched the shard), so no
# second holder can get the key on the new node while the first is open.
{
	my $key = 'move/lock';
	my $from = node_of($key);
	my ($to) = grep { $_ != $from } ($w1, $w2);
	my $shard = $coord->safe_psql('postgres',
		"SELECT get_shard_id_for_distribution_column('sandbox_store.instances', " . lit($key) . ')');
	my $holder = $coord->background_psql('postgres');
	$holder->query_safe("BEGIN; SELECT action FROM sandbox_store.sandbox_ensure('$key', 'run-1')");
	my $holder_gpid = $holder->query_safe('SELECT citus_backend_gpid()');
	my ($move_out, $move_err) = ('', '');
	my $move = IPC::Run::start(
		[
			'psql', '-XAtq', '-d', $coord->connstr('postgres'), '-c',
			"SELECT citus_move_shard_placement($shard, '127.0.0.1', "
			  . $from->port
			  . ", '127.0.0.1', "
			  . $to->port
			  . ", shard_transfer_mode => 'block_writes')"
		],
		'>', \$move_out, '2>', \$move_err);
	# Wait until citus reports the move blocked by the holder's transaction
	# (it waits on the worker, for the shard's metadata lock), rather than
	# sleep and hope the move got there.
	ok( $coord->poll_query_until(
			'postgres', qq{
SELECT count(*) > 0 FROM citus_lock_waits
 WHERE blocked_statement LIKE 'SELECT citus_move_shard_placement%' AND blocking_gpid = $holder_gpid}),
		'the shard move waits for the lock-mode transaction that holds a key of the shard (citus_lock_waits)');
	is( $coord->safe_psql(
			'postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT citus_move_shard_placement%'"
		),
		'1',
		'the shard move waits while a lock-mode transaction holds a key of the shard');
	$holder->query_safe("SELECT FROM sandbox_store.sandbox_upsert('$key', 'e2b', 'sbx-moved', 't'); COMMIT");
	$holder->quit;
	$move->finish;
	is($move_err, '', 'the move completes once that transaction commits');
	is(node_of($key)->port, $to->port, 'the key is on the new node');
	is( $w1->safe_psql('postgres',
			"SELECT action || ' ' || provider_sandbox_id FROM sandbox_store.sandbox_ensure('$key', 'run-2')"),
		'resume sbx-moved', 'the next holder resumes what the first committed');
}

# kill -9 of the worker holding a key's shard.
{
	my $key = 'crash/a';
	my $victim = node_of($key);
	my ($other) = grep { node_of($_)->port != $victim->port } map { "crash/o$_" } 1 .. 50;
	$coord->safe_psql('postgres',
		"SELECT FROM sandbox_store.sandbox_upsert('$key', 'e2b', 'sbx-a', 't-crash');"
		  . " SELECT FROM sandbox_store.sandbox_upsert('$other', 'e2b', 'sbx-o', 't-crash')");
	# A second's lease, meant to run out: nothing below needs it live, and the
	# calls after the restart wait for its expiry themselves (no wait bound).
	my $fence = $coord->safe_psql('postgres', "SELECT fence FROM sandbox_store.sandbox_claim('$key', '1 second')");
	# A run on the same worker, claimed and appended to.
	my $run = run_on('crash-run', $victim);
	$coord->safe_psql('postgres', "SELECT sandbox_store.run_create_or_resume('$run', 't-crash', 1767225600000)");
	my $epoch = $coord->safe_psql('postgres', "SELECT sandbox_store.run_claim('$run')");
	$coord->safe_psql('postgres', qq{SELECT sandbox_store.run_log_append('$run', '[{"c": 1}]', $epoch, false)});
	kill9($victim);
	my ($ret, $out, $err) =
	  $coord->psql('postgres', "SELECT action FROM sandbox_store.sandbox_ensure('$key', 'run-c')");
	isnt($ret, 0, 'with its worker killed, a call for the key fails');
	like($err, qr/connection|connect/i, '... with a connection error (' . (split /\n/, $err)[0] . ')');
	is( $coord->safe_psql('postgres',
			"SELECT action || ' ' || provider_sandbox_id FROM sandbox_store.sandbox_ensure('$other', 'run-c')"),
		'resume sbx-o',
		'a key on the other worker resumes meanwhile');
	start_after_kill9($victim);
	is( $coord->safe_psql('postgres',
			"SELECT action || ' ' || provider_sandbox_id FROM sandbox_store.sandbox_ensure('$key', 'run-d')"),
		'resume sbx-a',
		'after the worker restarts, the key resumes its record');
	is($coord->safe_psql('postgres', "SELECT count(*) FROM sandbox_store.sandbox_list('t-crash')"),
		'2', 'nothing was lost');
	my $next = $coord->safe_psql('postgres', "SELECT fence FROM sandbox_store.sandbox_claim('$key', '1 second')");
	cmp_ok($next, '>', $fence, "after the restart the key's next fence ($next) is above the last ($fence)");
	is( $coord->safe_psql(
			'postgres', qq{SELECT string_agg(chunk->>'c', ' ' ORDER BY seq) FROM sandbox_store.run_log_read('$run')}),
		'1', "after the restart the run's log is there");
	my $next_epoch = $coord->safe_psql('postgres', "SELECT sandbox_store.run_claim('$run')");
	cmp_ok($next_epoch, '>', $epoch, "the run's next epoch ($next_epoch) is above the last ($epoch)");
	is(sqlstate_of($coord, qq{SELECT sandbox_store.run_log_append('$run', '[{"c": 0}]', $epoch, false)}),
		'SB001', 'and the driver from before the crash is refused');
}

# Failover of a worker to its standby: the key's claim, record and fences
# carry over, and the old holder stays fenced off.
{
	my $key = 'failover/1';
	my $primary = node_of($key);
	$primary->backup('failover');
	my $standby = PostgreSQL::Test::Cluster->new('standby');
	$standby->init_from_backup($primary, 'failover', has_streaming => 1);
	$standby->start;
	$coord->safe_psql('postgres', "SELECT FROM sandbox_store.sandbox_upsert('$key', 'e2b', 'sbx-f', 't-f')");
	# An hour's lease: it must still be live after the failover, however long
	# that takes.
	my ($fence, $token) = split /\|/, $coord->safe_psql('postgres',
		"SELECT fence || '|' || owner_token FROM sandbox_store.sandbox_claim('$key', '1 hour')");
	$primary->wait_for_catchup($standby);
	kill9($primary);
	$standby->promote;
	$coord->safe_psql('postgres',
		    "SELECT citus_update_node(nodeid, '127.0.0.1', "
		  . $standby->port
		  . ") FROM pg_dist_node WHERE nodeport = "
		  . $primary->port);
	@nodes = map { $_ == $primary ? $standby : $_ } @nodes;
	is(node_of($key)->port, $standby->port, "the key's worker failed over to its standby");
	is(sqlstate_of($coord, "SELECT * FROM sandbox_store.sandbox_claim('$key', '1 minute', wait => '0')"),
		'55P03', 'the live claim held through the failover');
	# As after the move: the holder's last renewal leaves it a second, and the
	# next claim waits for it to run out.
	is( $coord->safe_psql('postgres',
			"SELECT sandbox_store.sandbox_renew('$key', '$token', '1 second') IS NOT NULL"),
		't', 'the holder renews its claim on the promoted standby');
	my $next = $coord->safe_psql('postgres',
		"SELECT fence FROM sandbox_store.sandbox_claim('$key', '1 hour', wait => '3 minutes')");
	cmp_ok($next, '>', $fence, "after the failover the next fence ($next) is above the last ($fence)");
	is(sqlstate_of($coord, "SELECT sandbox_store.sandbox_upsert('$key', 'e2b', 'x', 't', fence => $fence)"),
		'SB001', 'the old holder is refused');
	is($coord->safe_psql('postgres', "SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('$key')"),
		'sbx-f', 'the record is on the promoted standby');
}

# The way back.  citus's undistribute_table refuses tables an extension
# owns, so: copy the rows out, drop and create the extension (citus drops
# and creates it on the workers too), copy them back, and put the fence
# sequence above every fence.
my (undef, undef, $undist_err) = $coord->psql('postgres', "SELECT undistribute_table('sandbox_store.instances')");
like($undist_err, qr/cannot alter table because an extension depends on it/,
	'undistribute_table refuses a table of the extension');
$coord->safe_psql(
	'postgres', q{
CREATE TABLE saved_instances AS
  SELECT key::text AS key, provider::text AS provider, provider_sandbox_id::text AS provider_sandbox_id,
         latest_snapshot_id::text AS latest_snapshot_id, thread_id::text AS thread_id,
         latest_run_id::text AS latest_run_id, updated_at
    FROM sandbox_store.instances;
CREATE TABLE saved_leases AS SELECT * FROM sandbox_store.leases;
CREATE TABLE saved_runs AS SELECT * FROM sandbox_store.runs;
CREATE TABLE saved_run_logs AS SELECT * FROM sandbox_store.run_logs;
CREATE TABLE saved_run_log_entries AS SELECT * FROM sandbox_store.run_log_entries;
CREATE TABLE saved_checkpoints AS SELECT * FROM sandbox_store.checkpoints;
CREATE TABLE saved_checkpoint_heads AS SELECT * FROM sandbox_store.checkpoint_heads;
CREATE TABLE saved_checkpoint_ids AS SELECT * FROM sandbox_store.checkpoint_ids;
CREATE TABLE saved_checkpoint_writers AS SELECT * FROM sandbox_store.checkpoint_writers;
DROP EXTENSION sandbox_store CASCADE;
CREATE EXTENSION sandbox_store;
INSERT INTO sandbox_store.instances SELECT * FROM saved_instances;
INSERT INTO sandbox_store.leases SELECT * FROM saved_leases;
INSERT INTO sandbox_store.runs SELECT * FROM saved_runs;
INSERT INTO sandbox_store.run_logs SELECT * FROM saved_run_logs;
INSERT INTO sandbox_store.run_log_entries SELECT * FROM saved_run_log_entries;
INSERT INTO sandbox_store.checkpoints SELECT * FROM saved_checkpoints;
INSERT INTO sandbox_store.checkpoint_heads SELECT * FROM saved_checkpoint_heads;
INSERT INTO sandbox_store.checkpoint_ids SELECT * FROM saved_checkpoint_ids;
INSERT INTO sandbox_store.checkpoint_writers SELECT * FROM saved_checkpoint_writers;
SELECT setval('sandbox_store.fence_seq', GREATEST((SELECT max(fence) FROM sandbox_store.leases),
                                                  (SELECT max(fence) FROM sandbox_store.checkpoint_writers)));
DROP TABLE saved_instances, saved_leases, saved_runs, saved_run_logs, saved_run_log_entries,
           saved_checkpoints, saved_checkpoint_heads, saved_checkpoint_ids, saved_checkpoint_writers;
});
# (DROP EXTENSION leaves the shards on the workers: dropped by hand)
$coord->safe_psql('postgres', q{
SELECT * FROM run_command_on_workers($cmd$DO $$DECLARE t regclass; BEGIN
  FOR t IN SELECT c.oid FROM pg_class c WHERE c.relnamespace = 'sandbox_store'::regnamespace AND c.relkind = 'r'
                                          AND c.relname ~ '_[0-9]+$' LOOP
    EXECUTE format('DROP TABLE %s', t);
  END LOOP; END$$$cmd$)});
for my $node (grep { $_ != $coord } @nodes)    # (worker1's standby in its place)
{
	is( $node->safe_psql(
			'postgres', q{
SELECT string_agg(relname, ' ' ORDER BY relname) FROM pg_class
 WHERE relnamespace = 'sandbox_store'::regnamespace AND relkind = 'r'}),
		'checkpoint_heads checkpoint_ids checkpoint_writers checkpoints instances leases run_log_entries run_logs runs',
		$node->name . ': after the way back only the extension\'s own tables are left');
}
is($coord->safe_psql('postgres', "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text LIKE 'sandbox_store.%'"),
	'0', 'after the way back every table is local');
is( $coord->safe_psql('postgres',
		"SELECT action || ' ' || provider_sandbox_id FROM sandbox_store.sandbox_ensure('crash/a', 'run-e')"),
	'resume sbx-a', 'the coordinator resumes a record');
is($coord->safe_psql('postgres', "SELECT count(*) FROM sandbox_store.sandbox_list('t-crash')"),
	'2', 'and lists every record');
is( $coord->safe_psql(
		'postgres', q{SELECT string_agg(chunk->>'m', ' ' ORDER BY seq) FROM sandbox_store.run_log_read((
  SELECT run_id FROM sandbox_store.runs WHERE thread_id = 't-move'))}),
	'1 2 3', 'and reads a run log');
is( $coord->safe_psql('postgres', q{SELECT string_agg(c->>'id', ',') FROM sandbox_store.checkpoint_list('old-cp') c}),
	'old-c1,old-c2,old-c3', 'and lists a thread\'s checkpoints');
cmp_ok(
	$coord->safe_psql('postgres',
		q{SELECT fence FROM sandbox_store.checkpoint_acquire_writer('old-cp', 600000, at => '2026-01-02 00:00:00+00')}),
	'>',
	$cp_fence, "and a thread's next checkpoint writer has a fence above its last");

# distribute() failing after it changed instances.key on the workers (a
# lock on runs outlasts its lock_timeout) rolls back on the coordinator but
# not on the workers; called again, it completes.
{
	my $holder = $coord->background_psql('postgres');
	$holder->query_safe('BEGIN; LOCK sandbox_store.runs IN ACCESS EXCLUSIVE MODE');
	is( sqlstate_of($coord, "SET lock_timeout = '1s'; SELECT sandbox_store.distribute()"),
		'55P03', 'distribute() fails when it cannot lock runs in time');
	is( $coord->safe_psql(
			'postgres', q{
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'sandbox_store.instances'::regclass AND attname = 'key';
SELECT DISTINCT result FROM run_command_on_workers($$SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'sandbox_store.instances'::regclass AND attname = 'key'$$)}),
		"sandbox_store.bounded_text\ntext",
		'the coordinator rolled back its change of instances.key; the workers kept theirs');
	$holder->query_safe('COMMIT');
	$holder->quit;
	$coord->safe_psql('postgres', 'SELECT sandbox_store.distribute()');
	is($coord->safe_psql('postgres', $dist_query), $all_distributed, 'called again, distribute() completes');
	# (the run id first: a subquery on a distributed table cannot be an
	# argument of a delegated call)
	my $moved = $coord->safe_psql('postgres', q{SELECT run_id FROM sandbox_store.runs WHERE thread_id = 't-move'});
	is( $coord->safe_psql(
			'postgres',
			"SELECT string_agg(chunk->>'m', ' ' ORDER BY seq) FROM sandbox_store.run_log_read(" . lit($moved) . ')'),
		'1 2 3', 'with the run logs');
}

done_testing();

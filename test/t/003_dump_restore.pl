# 003_dump_restore.pl
#
# pg_dump + pg_restore of a database using sandbox_store keeps every record,
# every claim (live ones stay live) and the fence sequence: a claim taken in
# the restored database gets a fence above every fence handed out before the
# dump (docs/reference.md, invariants: "Fences strictly increase per key, forever: across ...
# dump/restore").  Also: DROP EXTENSION removes everything it made.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreTest;
use Test::More;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('dump_restore');
$node->init;
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', 'CREATE EXTENSION sandbox_store');

# Records, odd keys included; claims: one live, one released, one expired.
$node->safe_psql(
	'src', q{
SELECT count(*) FROM generate_series(1, 50) i,
  sandbox_store.sandbox_upsert('key-' || i, 'prov', 'sbx-' || i, 'thread-' || (i % 5),
    latest_snapshot_id => CASE WHEN i % 2 = 0 THEN 'snap-' || i END,
    updated_at => '2026-01-01 00:00:00.123+00'::timestamptz + i * interval '1 minute');
SELECT sandbox_store.sandbox_upsert(E'odd ''key''; \\ ключ', 'prov', 'sbx-odd', 'thread-odd');
SELECT fence FROM sandbox_store.sandbox_ensure('claim-live', 'run-1', lease => '1 hour');
SELECT fence FROM sandbox_store.sandbox_ensure('claim-released', 'run-1', lease => '1 hour');
SELECT sandbox_store.sandbox_release('claim-released',
  (SELECT owner_token FROM sandbox_store.claims WHERE key = 'claim-released'));
SELECT fence FROM sandbox_store.sandbox_ensure('claim-expired', 'run-1', lease => '1 millisecond');
SELECT count(*) FROM generate_series(1, 40) i,
  sandbox_store.sandbox_ensure('many-' || i, 'run-1', lease => '1 hour');
-- Checkpoints: a chain of three with a shared blob, and its live writer.
CREATE TABLE public.cp_writer AS
  SELECT fence, owner_token FROM sandbox_store.checkpoint_acquire_writer('cp-thread', 3600000);
SELECT sandbox_store.checkpoint_append(
  jsonb_build_object('id', 'cp-' || i, 'threadId', 'cp-thread', 'parentCheckpointId', CASE WHEN i > 1 THEN 'cp-' || (i - 1) END,
    'createdAt', 1000 * i, 'reason', 'named', 'label', 'ключ ' || i,
    'conversation', jsonb_build_array(jsonb_build_object('role', 'user', 'content', repeat('x', 10000))),
    'files', jsonb_build_array(jsonb_build_object('path', 'a', 'kind', 'file', 'size', 1,
      'blobKey', 'sandbox-files/sha256/' || repeat('a', 64))),
    'artifacts', '[]'::jsonb),
  CASE WHEN i > 1 THEN 'cp-' || (i - 1) END, 'cp-thread', owner_token, fence)
  FROM generate_series(1, 3) i, public.cp_writer ORDER BY i;
});

# Runs (1.5): a run claimed twice with a log (the first driver's epoch is
# stale), a finished run with a closed, watched log, and a log of no run.
# The epochs are the ones run_claim returned (the highest epoch the run had
# plus a number drawn from fence_seq), kept here.
$node->safe_psql(
	'src', q{
SELECT sandbox_store.run_create_or_resume('run-a', 'thread-r', 1700000000000.5);
SELECT sandbox_store.run_log_append('run-a', '[{"type": "RUN_STARTED"}, {"type": "TEXT_MESSAGE_CONTENT", "delta": "é"}]');
});
my $epoch_stale = $node->safe_psql('src', q{SELECT sandbox_store.run_claim('run-a')});
my $epoch_current = $node->safe_psql('src', q{SELECT sandbox_store.run_claim('run-a')});
cmp_ok($epoch_current, '>', $epoch_stale,
	"run-a claimed twice: the second epoch ($epoch_current) is above the first ($epoch_stale)");
$node->safe_psql(
	'src', qq{
SELECT sandbox_store.run_log_append('run-a', '[{"type": "TEXT_MESSAGE_CONTENT", "delta": "b"}]', $epoch_current);
}
	  . q{
SELECT sandbox_store.run_create_or_resume('run-b', 'thread-r', 1700000000001);
SELECT sandbox_store.run_log_watch('run-b');
SELECT sandbox_store.run_log_append('run-b', '[{"type": "RUN_FINISHED"}]');
SELECT sandbox_store.run_log_close('run-b');
SELECT sandbox_store.run_update('run-b', '{"status": "completed", "finishedAt": 1700000000002, "usage": {"totalTokens": 3}}');
SELECT sandbox_store.run_log_append('no-run', '[{"x": 1}]');
});
my $runs_query = q{SELECT (SELECT string_agg(r::text, E'\n') FROM sandbox_store.run_list_by_thread('thread-r') r),
  (SELECT string_agg(l.run_id || ' ' || l.last_seq || ' ' || (l.closed_at IS NOT NULL) || ' ' || l.watched, E'\n' ORDER BY l.run_id)
     FROM sandbox_store.run_logs l),
  (SELECT string_agg(e.run_id || ' ' || e.seq || ' ' || e.chunk::text, E'\n' ORDER BY e.run_id, e.seq)
     FROM sandbox_store.run_log_entries e)};
my $runs_before = $node->safe_psql('src', $runs_query);
my $checkpoints_query = q{SELECT sandbox_store.checkpoint_head('cp-thread'),
  (SELECT string_agg(c::text, E'\n') FROM sandbox_store.checkpoint_list('cp-thread') c),
  (SELECT string_agg(key || '=' || refs, ' ') FROM sandbox_store.checkpoint_blob_references())};
my $checkpoints_before = $node->safe_psql('src', $checkpoints_query);

my $max_fence_before =
  $node->safe_psql('src', 'SELECT max(fence) FROM sandbox_store.leases');
my $seq_before = $node->safe_psql('src',
	'SELECT last_value FROM sandbox_store.fence_seq');
cmp_ok($max_fence_before, '>=', 43, 'fences were handed out before the dump');

my $records_before = $node->safe_psql('src', $RECORDS_QUERY);
my $leases_before = $node->safe_psql('src', $LEASES_QUERY);

my $dump = $node->basedir . '/src.dump';
$node->command_ok(
	[ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ],
	'pg_dump of the database');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
	'pg_restore into a new database');

is($node->safe_psql('dst', $RECORDS_QUERY),
	$records_before, 'every record is restored exactly, to the microsecond');
is($node->safe_psql('dst', $LEASES_QUERY),
	$leases_before, 'every lease row (fence, token, expiry) is restored');
is( $node->safe_psql('dst',
		"SELECT count(*) FROM sandbox_store.claims WHERE key = 'claim-live'"),
	'1',
	'the live claim is still live after restore');
my ($ret, $stdout, $stderr) = $node->psql('dst',
	q{SELECT action FROM sandbox_store.sandbox_ensure('claim-live', 'run-2', wait => '0')});
like($stderr, qr/could not lock sandbox key "claim-live"/,
	'the restored live claim still excludes a lock-mode ensure');
is( $node->safe_psql('dst', 'SELECT last_value FROM sandbox_store.fence_seq'),
	$seq_before, 'the fence sequence is restored where it was');
is($node->safe_psql('dst', $checkpoints_query), $checkpoints_before,
	'every checkpoint, the head and the blob references are restored exactly');
is( $node->safe_psql('dst', q{
SELECT sandbox_store.checkpoint_append(jsonb_build_object('id', 'cp-4', 'threadId', 'cp-thread',
    'parentCheckpointId', 'cp-3', 'createdAt', 4000, 'reason', 'automatic', 'conversation', '[]'::jsonb,
    'files', '[]'::jsonb, 'artifacts', '[]'::jsonb), 'cp-3', 'cp-thread', owner_token, fence)
  FROM public.cp_writer}),
	'cp-4', 'the checkpoint writer goes on appending in the restored database');
is($node->safe_psql('dst', $runs_query), $runs_before,
	'every run record (with its driver epoch), log and entry is restored exactly');
($ret, $stdout, $stderr) = $node->psql('dst',
	qq{SELECT sandbox_store.run_log_append('run-a', '[{"late": 1}]', $epoch_stale)});
like($stderr, qr/SB001|driver epoch of run "run-a" is not current/,
	'the restored run still refuses the superseded driver (SB001)');
is( $node->safe_psql('dst',
		qq{SELECT sandbox_store.run_log_append('run-a', '[{"type": "RUN_FINISHED"}]', $epoch_current)}),
	'{4}', 'the current driver goes on appending after the last seq');
my $epoch_next = $node->safe_psql('dst', q{SELECT sandbox_store.run_claim('run-a')});
cmp_ok($epoch_next, '>', $epoch_current,
	"the next claim in the restored database gets a new epoch ($epoch_next) above the current one ($epoch_current)");

# New claims in the restored database: fences above every fence given before.
my $new_fences = $node->safe_psql(
	'dst', q{
SELECT string_agg(fence::text, ',' ORDER BY k) FROM (
  SELECT k, (SELECT fence FROM sandbox_store.sandbox_ensure(k, 'run-3', lease => '1 minute')) AS fence
    FROM unnest(ARRAY['claim-released', 'claim-expired', 'never-claimed', 'key-1']) k) s;
});
my @new = split /,/, $new_fences;
is(scalar(@new), 4, 'four new claims in the restored database');
ok((!grep { $_ <= $max_fence_before } @new),
	"every new fence ($new_fences) is above the newest before the dump ($max_fence_before)");

# The old holder of the expired claim is fenced off in the restored copy too.
my $expired_fence = $node->safe_psql('src',
	q{SELECT fence FROM sandbox_store.leases WHERE key = 'claim-expired'});
($ret, $stdout, $stderr) = $node->psql('dst',
	"SELECT sandbox_store.sandbox_upsert('claim-expired', 'p', 's', 't', fence => $expired_fence)");
like($stderr, qr/SB001|claim on sandbox key "claim-expired" was lost/,
	'a write fenced with a pre-dump fence is refused after takeover');

# An admin tries to add a column (1.3's documentation allowed it): refused,
# and a plain-format dump restored with psql (no ON_ERROR_STOP) keeps every
# record.  On 1.3 the column was added, the restore's COPY failed, psql
# exited 0, and the restored table was empty.
$node->safe_psql('postgres', 'CREATE DATABASE col_src');
$node->safe_psql('col_src', 'CREATE EXTENSION sandbox_store');
$node->safe_psql('col_src', q{
SELECT count(*) FROM generate_series(1, 100) i,
  sandbox_store.sandbox_upsert('col-' || i, 'prov', 'sbx-' || i, 'thread-col');
});
($ret, $stdout, $stderr) = $node->psql('col_src',
	'ALTER TABLE sandbox_store.instances ADD COLUMN region text');
isnt($ret, 0, 'ALTER TABLE sandbox_store.instances ADD COLUMN is refused');
like($stderr, qr/this change to the tables of sandbox_store is not supported/,
	'... by the extension\'s guard, with its message');
is( $node->safe_psql('col_src', q{
SELECT count(*) FROM pg_attribute
 WHERE attrelid = 'sandbox_store.instances'::regclass AND attnum > 0 AND NOT attisdropped}),
	'7', 'instances still has its seven columns');
my $col_records = $node->safe_psql('col_src', $RECORDS_QUERY);
my $plain = $node->basedir . '/col_src.sql';
$node->command_ok(
	[ 'pg_dump', '-Fp', '-f', $plain, '-d', $node->connstr('col_src') ],
	'plain pg_dump of the database');
$node->safe_psql('postgres', 'CREATE DATABASE col_dst');
my ($restore_out, $restore_err) = ('', '');
IPC::Run::run([ 'psql', '-X', '-q', '-d', $node->connstr('col_dst'), '-f', $plain ],
	'>', \$restore_out, '2>', \$restore_err);
is($restore_err, '', 'the plain restore with psql reports no error');
is($node->safe_psql('col_dst', 'SELECT count(*) FROM sandbox_store.instances'),
	'100', 'all 100 records are restored');
is($node->safe_psql('col_dst', $RECORDS_QUERY),
	$col_records, 'every record is restored exactly');
is( $node->safe_psql('col_dst', q{
SELECT evtenabled FROM pg_event_trigger WHERE evtname = 'sandbox_store_guard'}),
	'O', 'the restored database has the guard, once, enabled');

# DROP EXTENSION removes everything it made.
$node->safe_psql('dst', 'DROP EXTENSION sandbox_store');
is( $node->safe_psql(
		'dst', q{
SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'sandbox_store'}),
	'0',
	'DROP EXTENSION removes the tables, view, sequence and indexes');
is( $node->safe_psql(
		'dst', q{
SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'sandbox_store'}),
	'0',
	'DROP EXTENSION removes the functions');
is( $node->safe_psql('dst',
		q{SELECT count(*) FROM pg_event_trigger WHERE evtname = 'sandbox_store_guard'}),
	'0',
	'DROP EXTENSION removes the event trigger');

$node->stop;
done_testing();

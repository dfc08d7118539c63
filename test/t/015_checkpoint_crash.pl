# 015_checkpoint_crash.pl
#
# A server killed (kill -9 of the postmaster: a real crash) while a writer
# appends checkpoints and deletes heads, each in its own transaction, comes
# back with the checkpoint store consistent: the head's parent chain covers
# every checkpoint of the thread exactly once, checkpoint_ids holds exactly
# the stored ids, every blob's reference count
# is the number of stored checkpoints that point to it, nothing of an append
# or a delete is half there; the writer's lease survives (its holder goes
# on appending from the head, another writer is refused), and a new writer's
# fence is above it (docs/reference.md, "Sandbox checkpoints").

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

my $node = PostgreSQL::Test::Cluster->new('checkpoint_crash');
$node->init;
$node->start;
install_sandbox_store($node);

# cp(id, parent): a checkpoint of about 60 kB of conversation, with a blob
# shared by all and one of its own.
$node->safe_psql('postgres', q{
CREATE FUNCTION cp(id text, parent text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'threadId', 't', 'parentCheckpointId', parent,
    'createdAt', 1000, 'reason', 'automatic',
    'conversation', (SELECT jsonb_agg(jsonb_build_object('role', 'user', 'content', repeat(md5(id || i), 30))) FROM generate_series(1, 60) i),
    'files', jsonb_build_array(
      jsonb_build_object('path', 'shared', 'kind', 'file', 'size', 1, 'blobKey', 'sandbox-files/sha256/' || repeat('0', 64)),
      jsonb_build_object('path', 'own', 'kind', 'file', 'size', 1, 'blobKey', 'sandbox-files/sha256/' || encode(sha256(id::bytea), 'hex'))),
    'artifacts', '[]'::jsonb)
$$;
CREATE TABLE writer AS SELECT fence, owner_token FROM sandbox_store.checkpoint_acquire_writer('t', 3600000);
SELECT sandbox_store.checkpoint_append(cp('root', NULL), NULL, 't', owner_token, fence) FROM writer;
});
my ($fence, $token) = split /\|/, $node->safe_psql('postgres', 'SELECT fence, owner_token FROM writer');

# The writer: append, and every fifth time delete the head again; one
# statement and transaction each, from a client (a backend notices that the
# postmaster died when it next waits for its client).
$node->safe_psql('postgres', q{
CREATE FUNCTION step(i int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  w record;
  head text := sandbox_store.checkpoint_head('t');
BEGIN
  SELECT * INTO w FROM writer;
  IF i % 5 = 0 THEN
    PERFORM sandbox_store.checkpoint_delete_head('t', head, 't', w.owner_token, w.fence);
  ELSE
    PERFORM sandbox_store.checkpoint_append(cp('c' || i, head), head, 't', w.owner_token, w.fence);
  END IF;
END $$;
});
my $script = $node->basedir . '/work.sql';
open(my $fh, '>', $script) or die "$script: $!";
print $fh "SELECT step($_);\n" for 1 .. 100000;
close $fh;
my ($out, $err) = ('', '');
my $h = IPC::Run::start([ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-f', $script ],
	'>', \$out, '2>', \$err);

my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while ($node->safe_psql('postgres', q{SELECT count(*) FROM sandbox_store.checkpoints}) < 40)
{
	die "the writer made no progress: $err" if time() > $deadline;
	usleep(50_000);
}
kill9_and_start($node);
eval { $h->finish };
like($err, qr/server closed the connection|terminating connection|connection to server was lost/,
	'the writer was cut off by the crash');

# The chain from the head covers every checkpoint exactly once.
my ($chain, $stored, $heads) = split /\|/, $node->safe_psql('postgres', q{
WITH RECURSIVE chain AS (
  SELECT c.id, c.parent_id, 1 AS depth FROM sandbox_store.checkpoints c
   WHERE c.id = (SELECT head_id FROM sandbox_store.checkpoint_heads WHERE thread_id = 't')
  UNION ALL
  SELECT c.id, c.parent_id, chain.depth + 1 FROM sandbox_store.checkpoints c JOIN chain ON c.id = chain.parent_id
)
SELECT (SELECT count(DISTINCT id) FROM chain), (SELECT count(*) FROM sandbox_store.checkpoints),
       (SELECT count(*) FROM sandbox_store.checkpoint_heads)});
cmp_ok($stored, '>=', 30, "checkpoints survived the crash ($stored)");
is($chain, $stored, 'the head\'s parent chain covers every stored checkpoint');
is($heads, 1, 'the thread has one head');
is($node->safe_psql('postgres', q{SELECT count(*) FROM sandbox_store.checkpoints c
  WHERE c.parent_id IS NOT NULL AND NOT EXISTS (SELECT FROM sandbox_store.checkpoints p WHERE p.id = c.parent_id)}),
	'0', 'no checkpoint lost its parent');
is($node->safe_psql('postgres', q{SELECT count(*) FROM sandbox_store.checkpoints c
  FULL JOIN sandbox_store.checkpoint_ids i ON i.id = c.id AND i.thread_id = c.thread_id
 WHERE c.id IS NULL OR i.id IS NULL}),
	'0', 'checkpoint_ids holds the id and thread of every stored checkpoint, and no other');

# Reference counts match the checkpoints that are stored.
is($node->safe_psql('postgres', q{
  WITH counted AS (
    SELECT k AS key, count(*) AS refs FROM sandbox_store.checkpoints c,
      LATERAL (SELECT DISTINCT f ->> 'blobKey' FROM jsonb_array_elements(c.checkpoint -> 'files') f) s(k)
     GROUP BY k)
  SELECT count(*) FROM counted FULL JOIN sandbox_store.checkpoint_blob_references() b USING (key)
   WHERE counted.refs IS DISTINCT FROM b.refs}),
	'0', 'every blob reference count equals the stored checkpoints pointing to it');

# The lease survived: its holder goes on, another writer is refused, and a
# takeover after it would have a higher fence.
my $head = $node->safe_psql('postgres', q{SELECT sandbox_store.checkpoint_head('t')});
is($node->safe_psql('postgres',
	"SELECT sandbox_store.checkpoint_append(cp('after', '$head'), '$head', 't', '$token', $fence)"),
	'after', 'the writer appends again after the restart');
is(sqlstate_of($node, q{SELECT sandbox_store.checkpoint_acquire_writer('t', 1000)}),
	'SBC05', 'another writer is refused while the lease lasts');
cmp_ok($node->safe_psql('postgres',
	q{SELECT fence FROM sandbox_store.checkpoint_acquire_writer('t', 1000, at => now() + interval '2 hours')}),
	'>', $fence, 'a takeover after the lease gets a higher fence');

$node->stop;
done_testing();

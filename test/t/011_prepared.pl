# 011_prepared.pl
#
# A key's lock held by a prepared transaction (PREPARE TRANSACTION): the
# lock outlives the session, has no backend, and still excludes.
#
#   - sandbox_lock_holder returns 0 for it, as pg_blocking_pids does for a
#     prepared transaction (no backend to name), not NULL (free) and not a
#     pid;
#   - ensure, lock and claim of the key wait for it (55P03 once the wait is
#     over), other keys do not;
#   - COMMIT PREPARED lets go of it and makes what it wrote visible;
#     ROLLBACK PREPARED lets go and discards it.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SandboxStoreTest;

my $node = PostgreSQL::Test::Cluster->new('prepared');
$node->init;
$node->append_conf('postgresql.conf', 'max_prepared_transactions = 4');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION sandbox_store');

sub sql { return $node->safe_psql('postgres', $_[0]); }


foreach my $end ('COMMIT PREPARED', 'ROLLBACK PREPARED')
{
	my $gid = $end =~ /COMMIT/ ? 'p-commit' : 'p-rollback';
	my $key = "prep-$gid";
	sql(    "BEGIN;"
		  . " SELECT action FROM sandbox_store.sandbox_ensure('$key', 'run-1');"
		  . " SELECT key FROM sandbox_store.sandbox_upsert('$key', 'e2b', 'sbx-1', 't-1');"
		  . " PREPARE TRANSACTION '$gid';");

	is(sql("SELECT sandbox_store.sandbox_lock_holder('$key')"),
		'0', "$gid: sandbox_lock_holder returns 0 for a prepared transaction");
	is(sql("SELECT sandbox_store.sandbox_lock_holder('prep-other') IS NULL"),
		't', "$gid: another key is free");
	is(sqlstate_of($node, "SELECT sandbox_store.sandbox_ensure('$key', 'run-2', wait => '100 ms')"),
		'55P03', "$gid: ensure waits for the prepared transaction");
	is(sqlstate_of($node, "SELECT sandbox_store.sandbox_lock('$key', wait => '100 ms')"),
		'55P03', "$gid: sandbox_lock waits for it");
	is(sqlstate_of($node, "SELECT sandbox_store.sandbox_claim('$key', '1 min', wait => '100 ms')"),
		'55P03', "$gid: sandbox_claim waits for it");
	is(sql("SELECT count(*) FROM sandbox_store.sandbox_get('$key')"),
		'0', "$gid: what it wrote is not visible yet");

	sql("$end '$gid'");
	is(sql("SELECT sandbox_store.sandbox_lock_holder('$key') IS NULL"),
		't', "$gid: after $end the key is free");
	is( sql("BEGIN; SELECT action FROM sandbox_store.sandbox_ensure('$key', 'run-2'); COMMIT;"),
		$end =~ /COMMIT/ ? 'resume' : 'create',
		"$gid: the next ensure sees what $end left");
}

$node->stop;
done_testing();

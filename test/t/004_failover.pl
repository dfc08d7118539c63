# 004_failover.pl
#
# Standby promotion with synchronous streaming replication: records and
# claims replicate; the standby serves reads but refuses writes; after the
# primary dies and the standby is promoted, every acknowledged record and
# claim is there, ensure works on the new primary, a lock-mode holder's
# uncommitted create is gone (its key answers create again), and new fences
# are above every fence acknowledged before the failover.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SandboxStoreTest;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION sandbox_store');
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

# Synchronous replication, applied before COMMIT returns: an acknowledged
# commit is on the standby and visible there.
$primary->append_conf('postgresql.conf', qq{
synchronous_standby_names = 'standby'
synchronous_commit = remote_apply
});
$primary->reload;
$primary->poll_query_until('postgres',
	"SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'")
  or die 'the standby did not become synchronous';

# Acknowledged work: records (lock mode) and claims (lease mode).
my %acked_fence;
for my $i (1 .. 20)
{
	$primary->safe_psql(
		'postgres', qq{
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('rec-$i', 'run-1');
SELECT key FROM sandbox_store.sandbox_upsert('rec-$i', 'prov', 'sbx-$i', 'thread-f');
COMMIT;});
	$acked_fence{"claim-$i"} = $primary->safe_psql('postgres',
		"SELECT fence FROM sandbox_store.sandbox_ensure('claim-$i', 'run-1', lease => '1 hour')");
}
my ($max_acked) = sort { $b <=> $a } values %acked_fence;

# Visible on the standby at once (remote_apply), and reads work there.
is( $standby->safe_psql('postgres', 'SELECT count(*) FROM sandbox_store.instances'),
	'20', 'every acknowledged record is on the standby');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM sandbox_store.claims'),
	'20', 'every acknowledged claim is on the standby');
is( $standby->safe_psql(
		'postgres', "SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('rec-7')"),
	'sbx-7',
	'sandbox_get works on the standby');
my ($ret, $out, $err) = $standby->psql('postgres',
	"SELECT action FROM sandbox_store.sandbox_ensure('rec-7', 'run-2')");
like($err, qr/cannot lock sandbox key "rec-7" on a standby/,
	'sandbox_ensure is refused on the standby (it writes and takes a lock)');

# A lock-mode holder mid-create when the primary dies: never committed.
my $holder = $primary->background_psql('postgres', on_error_stop => 0);
$holder->query_safe(
	q{BEGIN; SELECT action FROM sandbox_store.sandbox_ensure('in-flight', 'run-1');
	  SELECT key FROM sandbox_store.sandbox_upsert('in-flight', 'prov', 'sbx-lost', 't');});

# The primary dies; the standby is promoted.
$primary->stop('immediate');
eval { $holder->quit };
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'promotion did not finish';

is($standby->safe_psql('postgres', 'SELECT count(*) FROM sandbox_store.instances'),
	'20', 'after promotion: every acknowledged record, and nothing uncommitted');
is( $standby->safe_psql(
		'postgres',
		"SELECT string_agg(key || '=' || fence, ',' ORDER BY key) FROM sandbox_store.leases"),
	join(',', map { "$_=$acked_fence{$_}" } sort keys %acked_fence),
	'after promotion: every acknowledged claim with its fence');

is( $standby->safe_psql('postgres',
		"SELECT action || ':' || latest_run_id FROM sandbox_store.sandbox_ensure('rec-7', 'run-2')"),
	'resume:run-2',
	'ensure works on the new primary and resumes an acknowledged record');
is( $standby->safe_psql('postgres', q{
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('in-flight', 'run-2');
ROLLBACK;}),
	'create',
	"the old primary's uncommitted create left nothing behind: create again");

# New fences are above every fence acknowledged before the failover.
$standby->safe_psql('postgres',
	"SELECT sandbox_store.sandbox_release('claim-3', owner_token) FROM sandbox_store.claims WHERE key = 'claim-3'");
my @new = map {
	$standby->safe_psql('postgres',
		"SELECT fence FROM sandbox_store.sandbox_ensure('$_', 'run-2', lease => '1 minute')")
} ('claim-3', 'never-claimed', 'rec-1');
is(scalar(grep { $_ > $max_acked } @new), 3,
	"new fences (@new) are above every acknowledged fence ($max_acked)");

# The live claims stayed live across the failover: they still exclude.
($ret, $out, $err) = $standby->psql('postgres',
	"SELECT action FROM sandbox_store.sandbox_ensure('claim-5', 'run-2', wait => '0')");
like($err, qr/could not lock sandbox key "claim-5"/,
	'a claim acknowledged before the failover still holds its key');
is( $standby->safe_psql('postgres',
		$EXT_LOCKS),
	'0', 'no lock of the extension is left');

$standby->stop;
done_testing();

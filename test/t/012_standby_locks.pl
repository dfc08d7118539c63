# 012_standby_locks.pl
#
# A hot standby cannot hand out a key's lock: its advisory locks exclude
# nothing on the primary, where the key is held.  While a primary
# transaction holds a key, every call on a streaming standby that would take
# the key's lock, or report who holds it, fails with 25006
# (read_only_sql_transaction) and says so, instead of answering as if it
# excluded; the standby is left holding no lock of the extension.  The
# read-only functions (sandbox_get, sandbox_list, sandbox_lock_id) work
# there.

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
$primary->safe_psql('postgres',
	q{SELECT key FROM sandbox_store.sandbox_upsert('k', 'prov', 'sbx-k', 'thread-k')});
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

# A primary transaction holds the key.
my $holder = $primary->background_psql('postgres');
$holder->query_safe(q{BEGIN; SELECT sandbox_store.sandbox_lock('k');});
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
is($primary->safe_psql('postgres', q{SELECT sandbox_store.sandbox_lock_holder('k')}),
	$holder_pid, 'on the primary, the key is held');
$primary->wait_for_catchup($standby);

# Every call that takes the key's lock, or reports its holder, fails on the
# standby with 25006.
my %calls = (
	'sandbox_try_lock'          => q{SELECT sandbox_store.sandbox_try_lock('k')},
	'sandbox_lock, wait 0'      => q{SELECT sandbox_store.sandbox_lock('k', wait => '0')},
	'sandbox_lock, wait 1s'     => q{SELECT sandbox_store.sandbox_lock('k', wait => '1 second')},
	'sandbox_lock'              => q{SELECT sandbox_store.sandbox_lock('k')},
	'sandbox_ensure'            => q{SELECT action FROM sandbox_store.sandbox_ensure('k', 'run-2')},
	'sandbox_ensure with lease' =>
	  q{SELECT action FROM sandbox_store.sandbox_ensure('k', 'run-2', lease => '1 minute')},
	'sandbox_claim'       => q{SELECT fence FROM sandbox_store.sandbox_claim('k', '1 minute')},
	'sandbox_lock_holder' => q{SELECT sandbox_store.sandbox_lock_holder('k')},
	'sandbox_lock_holder in a transaction that called sandbox_try_lock' => q{
BEGIN;
SELECT sandbox_store.sandbox_try_lock('k');
SELECT sandbox_store.sandbox_lock_holder('k') = pg_backend_pid();
COMMIT;});
for my $name (sort keys %calls)
{
	is(sqlstate_of($standby, $calls{$name}), '25006', "$name fails on the standby with 25006");
}

# The messages say why, in full.
my ($ret, $out, $err) =
  $standby->psql('postgres', q{SELECT sandbox_store.sandbox_try_lock('k')});
like(
	$err,
	qr/ERROR:  cannot lock sandbox key "k" on a standby\nDETAIL:  A standby's locks exclude nothing on the primary, where the key is held\.\nHINT:  Connect to the primary\./,
	'sandbox_try_lock says a standby cannot lock the key');
($ret, $out, $err) =
  $standby->psql('postgres', q{SELECT sandbox_store.sandbox_lock_holder('k')});
like(
	$err,
	qr/ERROR:  cannot report the holder of sandbox key "k" on a standby\nDETAIL:  The key's lock is held on the primary, whose locks a standby cannot see\.\nHINT:  Connect to the primary\./,
	'sandbox_lock_holder says a standby cannot see the holder');

is($standby->safe_psql('postgres', $EXT_LOCKS), '0', 'the standby holds no lock of the extension');

# The read-only functions work on the standby.
is( $standby->safe_psql(
		'postgres', q{SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('k')}),
	'sbx-k',
	'sandbox_get works on the standby');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM sandbox_store.sandbox_list('thread-k')}),
	'1', 'sandbox_list works on the standby');
is( $standby->safe_psql('postgres', q{SELECT sandbox_store.sandbox_lock_id('k')}),
	$primary->safe_psql('postgres', q{SELECT sandbox_store.sandbox_lock_id('k')}),
	'sandbox_lock_id works on the standby, with the primary\'s answer');

# The primary still holds the key, and is the only one that does.
is($primary->safe_psql('postgres', q{SELECT sandbox_store.sandbox_lock_holder('k')}),
	$holder_pid, 'the primary transaction still holds the key');
$holder->query_safe('COMMIT');
$holder->quit;
is($primary->safe_psql('postgres', q{SELECT sandbox_store.sandbox_try_lock('k')}),
	't', 'once it commits, the key can be taken on the primary');

$standby->stop;
$primary->stop;
done_testing();

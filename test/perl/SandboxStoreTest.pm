# test/perl/SandboxStoreTest.pm: helpers the Perl TAP tests (test/t/*.pl)
# share, written once.  A test loads it with
#
#   use FindBin;
#   use lib "$FindBin::RealBin/../perl";
#   use SandboxStoreTest;
#
# and gets:
#   lit($s)                   $s as an SQL string literal
#   $EXT_LOCKS                SQL: how many locks of the extension every backend holds
#   sqlstate_of($node, $sql)  'ok', or the SQLSTATE of the error $sql raised
#   $RECORDS_QUERY, $LEASES_QUERY  SQL: every record (updated_at to the
#                             microsecond, in UTC) and every lease row, by key
#   claims_query($node, $db)  SQL: every lease row and every checkpoint
#                             writer under its thread's reserved key, by key,
#                             the same before 1.9.0 (when the writers were
#                             rows of leases) and after (checkpoint_writers)
#   kill9_and_start($node)    SIGKILL the postmaster, wait until it and every
#                             child are gone, start again (a real crash)
#   kill9($node), start_after_kill9($node)   the same in two steps
#   install_sandbox_store($node)  sandbox_store in database postgres of the
#                             started $node, in the edition SB_EDITION names
#                             (see below)
#
# It also evens out one difference between the PostgreSQL versions make
# matrix runs on: the BackgroundPsql of 16beta2 and 17beta2 returns a query's
# output with a trailing newline, where the 15.x and 18 releases (and 19beta1)
# strip it.  Loading this module makes query() and query_safe() strip it on
# every version, so tests compare the same text everywhere.
package SandboxStoreTest;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use FindBin ();
use PostgreSQL::Test::BackgroundPsql;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

our @EXPORT =
  qw(lit $EXT_LOCKS $RECORDS_QUERY $LEASES_QUERY claims_query sqlstate_of kill9_and_start kill9 start_after_kill9
  install_sandbox_store unflushed_fence_todo edition_script);

# The key locks of the extension (the view sandbox_store.key_locks).
our $EXT_LOCKS = q{SELECT count(*) FROM sandbox_store.key_locks};

{
	no warnings 'redefine';
	my $query = \&PostgreSQL::Test::BackgroundPsql::query;
	*PostgreSQL::Test::BackgroundPsql::query = sub {
		my ($output, $ret) = $query->(@_);
		$output =~ s/\n\z// if defined $output;
		return wantarray ? ($output, $ret) : $output;
	};
}

our $RECORDS_QUERY =
    'SELECT key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, '
  . "to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') "
  . 'FROM sandbox_store.instances ORDER BY key';
our $LEASES_QUERY = 'SELECT key, fence, owner_token, lease_expires_at FROM sandbox_store.leases ORDER BY key';

sub claims_query
{
	my ($node, $db) = @_;
	return $LEASES_QUERY
	  if $node->safe_psql($db, q{SELECT to_regclass('sandbox_store.checkpoint_writers') IS NULL}) eq 't';
	return q{SELECT key, fence, owner_token, lease_expires_at FROM sandbox_store.leases
UNION ALL
SELECT E'\\x01checkpoint-writer\\x01' || thread_id, fence, owner_token, lease_expires_at FROM sandbox_store.checkpoint_writers
ORDER BY 1};
}

sub lit
{
	my ($s) = @_;
	$s =~ s/'/''/g;
	return "'$s'";
}

sub sqlstate_of
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return 'ok' if $ret == 0;
	return $err =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : "no SQLSTATE in: $err";
}

sub kill9_and_start
{
	my ($node) = @_;
	kill9($node);
	start_after_kill9($node);
	return;
}

# kill -9 the postmaster and wait until it and every child are gone.
sub kill9
{
	my ($node) = @_;
	my $pm_pid = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
	my @pids = ($pm_pid, split /\n/, $node->safe_psql('postgres', 'SELECT pid FROM pg_catalog.pg_stat_activity'));
	note "kill -9 postmaster $pm_pid; children: @pids[1..$#pids]";
	$node->kill9;
	my $gone = sub {
		my ($pid) = @_;
		return 1 unless kill 0, $pid;
		# a zombie nobody reaped yet is gone too
		my $stat = eval { slurp_file("/proc/$pid/stat") } // '';
		return $stat =~ /^\d+ \(.*\) Z/;
	};
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (grep { !$gone->($_) } @pids)
	{
		die "processes of the killed server still alive: " . join(' ', grep { !$gone->($_) } @pids)
		  if time() > $deadline;
		usleep(100_000);
	}
	return;
}

# Start a server kill9() killed.
sub start_after_kill9
{
	my ($node) = @_;
	# As PostgreSQL's src/test/recovery/t/017_shm.pl does: retry while the
	# old shared memory or lock file is still seen as in use.
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		return if $node->start(fail_ok => 1);
		usleep(100_000);
		$node->stop('fast', fail_ok => 1);
	}
	$node->start;
	return;
}

# install_sandbox_store($node): the edition SB_EDITION names (set by
# test/scripts/with-sql-edition.sh) in database postgres.  c (SB_EDITION
# unset): CREATE EXTENSION sandbox_store, as the superuser.  The SQL edition
# is installed by the role sb_owner (LOGIN, CREATEDB, CREATEROLE, CREATE on
# the database and on schema public for a test's own objects; no superuser),
# as on a managed server: pg_tle (the node gets shared_preload_libraries =
# 'pg_tle' and is restarted; the superuser creates pg_tle and grants
# pgtle_admin; sb_owner runs the registration script SB_PG_TLE_SCRIPT, then
# CREATE EXTENSION) or plain (sb_owner runs the plain script
# SB_PLAIN_SCRIPT).  Every later connection of the test (PGUSER) is then
# sb_owner's.
sub install_sandbox_store
{
	my ($node) = @_;
	my $edition = $ENV{SB_EDITION} // 'c';
	if ($edition eq 'c')
	{
		$node->safe_psql('postgres', 'CREATE EXTENSION sandbox_store');
		return;
	}
	die "SB_EDITION=$edition: pg_tle or plain" unless $edition =~ /^(pg_tle|plain)$/;
	my $script = $edition eq 'pg_tle' ? $ENV{SB_PG_TLE_SCRIPT} : $ENV{SB_PLAIN_SCRIPT};
	die "no script for the $edition edition (run through with-sql-edition.sh)"
	  unless defined $script && -f $script;
	if ($edition eq 'pg_tle')
	{
		$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_tle'");
		$node->restart;
	}
	$node->safe_psql('postgres',
		'CREATE ROLE sb_owner LOGIN CREATEDB CREATEROLE; GRANT CREATE ON DATABASE postgres TO sb_owner;'
		  . ' GRANT CREATE ON SCHEMA public TO sb_owner');
	$node->safe_psql('postgres', 'CREATE EXTENSION pg_tle; GRANT pgtle_admin TO sb_owner')
	  if $edition eq 'pg_tle';
	PostgreSQL::Test::Utils::system_or_bail('psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr('postgres'), '-U', 'sb_owner', '-f', $script);
	$ENV{PGUSER} = 'sb_owner';
	$node->safe_psql('postgres', 'CREATE EXTENSION sandbox_store') if $edition eq 'pg_tle';
	my $got = $node->safe_psql('postgres',
		q{SELECT edition || ' ' || (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) FROM sandbox_store.edition()});
	die "sandbox_store.edition() and rolsuper say $got, not $edition false" unless $got eq "$edition false";
	return;
}

# The SQL edition's file of this tree's version (the control file's
# default_version) that make sql-edition writes into dist/: the plain script
# ('plain') or the pg_tle registration ('pg_tle'); undef if it is not there.
# (dist/ may hold other versions' files too.)
sub edition_script
{
	my ($form) = @_;
	my $root = "$FindBin::RealBin/../..";
	open(my $fh, '<', "$root/sandbox_store.control") or die "sandbox_store.control: $!";
	my ($version) = map { /^default_version = '(.*)'$/ ? $1 : () } <$fh>;
	close($fh);
	die 'no default_version in sandbox_store.control' unless defined $version;
	my $file = "$root/dist/sandbox_store-$version" . ($form eq 'pg_tle' ? '-pg_tle' : '') . '.sql';
	return -f $file ? $file : undef;
}

# The TODO reason for the checks that a fence seen before its commit is never
# handed out again after a crash, where that is a known limit: the SQL edition
# on PostgreSQL 15 and 16 has no SQL function that flushes WAL
# (docs/reference.md, "Where the editions differ").  undef where the checks
# must hold.
sub unflushed_fence_todo
{
	my ($node) = @_;
	return undef if ($ENV{SB_EDITION} // 'c') eq 'c';
	return undef if $node->safe_psql('postgres', 'SHOW server_version_num') >= 170000;
	return 'the SQL edition cannot flush WAL before PostgreSQL 17: a fence seen before its commit '
	  . 'can be handed out again after a crash (docs/reference.md, "Where the editions differ")';
}

1;

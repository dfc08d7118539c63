# test/perl/SandboxStoreCitus.pm: the Citus cluster the Perl TAP tests of
# test/citus/ run on, set up once.  A test loads it with
#
#   use FindBin;
#   use lib "$FindBin::RealBin/../perl";
#   use SandboxStoreCitus;
#
# and gets:
#   citus_cluster(%options)   ($coordinator, $worker1, $worker2): three
#       started nodes of the server of PG_CONFIG with citus preloaded,
#       listening on 127.0.0.1 (trust), the workers added to the coordinator
#       (citus_add_node; the coordinator registered with
#       citus_set_coordinator_host; it holds no shards), CREATE EXTENSION
#       sandbox_store on the coordinator (citus creates it on the workers),
#       then sandbox_store.distribute().  Before anything it skips the whole
#       test (plan skip_all) when citus is not installed in that server
#       (make test builds it as root: test/scripts/build-citus.sh), and it
#       diags the versions of Citus and PostgreSQL.  Options:
#         allows_streaming => 1   nodes a standby can be made of
#         conf => TEXT            more postgresql.conf lines, on every node
#                                 (after the defaults below, so they win)
#         distribute => 0         leave sandbox_store.distribute() to the test
#         version => V            CREATE EXTENSION sandbox_store VERSION 'V'
#                                 (an older release; default: the current)
#   shard_node($coordinator, $table, $value, @nodes)   the node of @nodes
#       that holds the shard of distributed table $table for the
#       distribution column value $value (the only placement: no replicas)
#   typescript_client()   the directory of the TypeScript client
#       (clients/typescript), built for a test to run as an app uses it:
#       npm ci --prefer-offline if it has no node_modules or they are older
#       than its lock file (npm ci builds dist/ too: the package's prepare
#       script), then npm run build (always: a dist/ left from other sources
#       would test them); each command's output goes to the test's log, and
#       a failed one BAIL_OUTs.  undef when npm or node is not installed
#       (the client needs Node >= 18.17 and npm).
package SandboxStoreCitus;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use FindBin ();
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(citus_cluster shard_node typescript_client);

sub citus_cluster
{
	my (%options) = @_;
	my $pgc = $ENV{PG_CONFIG} // 'pg_config';
	my $sharedir = `$pgc --sharedir`;
	chomp $sharedir;
	plan skip_all => "citus is not installed ($sharedir/extension/citus.control; make test builds it as root)"
	  unless -f "$sharedir/extension/citus.control";

	my @nodes;
	for my $name (qw(coordinator worker1 worker2))
	{
		my $node = PostgreSQL::Test::Cluster->new($name);
		$node->init(allows_streaming => $options{allows_streaming} ? 1 : 0);
		$node->append_conf(
			'postgresql.conf', q{
max_connections = 100
shared_buffers = 16MB
shared_preload_libraries = 'citus'
listen_addresses = '127.0.0.1'
citus.node_conninfo = 'sslmode=disable'
max_prepared_transactions = 20
citus.shard_count = 8
citus.node_connection_timeout = 5000
});
		$node->append_conf('postgresql.conf', $options{conf}) if defined $options{conf};
		$node->append_conf('pg_hba.conf', "host all all 127.0.0.1/32 trust\n");
		$node->start;
		$node->safe_psql('postgres', 'CREATE EXTENSION citus');
		push @nodes, $node;
	}
	my ($coord, $w1, $w2) = @nodes;
	diag(
		'Citus '
		  . $coord->safe_psql(
			'postgres',
			q{SELECT split_part(citus_version(), ' ', 2) || ' on PostgreSQL ' || current_setting('server_version')}
		  ));
	$coord->safe_psql('postgres', "SELECT citus_set_coordinator_host('127.0.0.1', " . $coord->port . ')');
	$coord->safe_psql('postgres', "SELECT citus_add_node('127.0.0.1', " . $_->port . ')') for ($w1, $w2);
	$coord->safe_psql('postgres',
		'CREATE EXTENSION sandbox_store' . (defined $options{version} ? " VERSION '$options{version}'" : ''));
	$coord->safe_psql('postgres', 'SELECT sandbox_store.distribute()') if $options{distribute} // 1;
	return @nodes;
}

sub shard_node
{
	my ($coord, $table, $value, @nodes) = @_;
	(my $quoted = $value) =~ s/'/''/g;
	my $port = $coord->safe_psql(
		'postgres', qq{
SELECT nodeport FROM pg_dist_shard_placement
 WHERE shardid = get_shard_id_for_distribution_column('$table', '$quoted')});
	my ($node) = grep { $_->port == $port } @nodes;
	die "no node of port $port holds the shard of $table for $value" unless defined $node;
	return $node;
}

sub typescript_client
{
	my $client = "$FindBin::RealBin/../../clients/typescript";
	return undef unless IPC::Run::run([ 'sh', '-c', 'command -v npm && command -v node' ], '>', \my $where);

	# Run a command in clients/typescript; its output goes to the test's log.
	my $in_client = sub {
		my @cmd = @_;
		note "in clients/typescript: @cmd";
		my $out = '';
		my $ok = IPC::Run::run(\@cmd, '>', \$out, '2>&1', init => sub { chdir $client or die "chdir $client: $!" });
		note $out if $out ne '';
		BAIL_OUT("@cmd failed in clients/typescript (exit $?)") unless $ok;
		return;
	};
	local %ENV = (%ENV, npm_config_update_notifier => 'false', npm_config_fund => 'false', npm_config_audit => 'false');
	# npm's cache lives in $HOME/.npm; a private one if HOME is not writable (as run.sh).
	$ENV{npm_config_cache} = ($ENV{TMPDIR} // '/tmp') . "/sandbox_store_npm_cache.$<"
	  unless -w ($ENV{HOME} // '/nonexistent');
	$in_client->(qw(npm ci --prefer-offline --no-audit --no-fund --loglevel=error))
	  unless -d "$client/node_modules"
	  && ((stat "$client/node_modules/.package-lock.json")[9] // 0) >= (stat "$client/package-lock.json")[9];
	$in_client->(qw(npm run --silent build));
	return $client;
}

1;

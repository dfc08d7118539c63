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
package SandboxStoreCitus;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(citus_cluster shard_node);

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

1;

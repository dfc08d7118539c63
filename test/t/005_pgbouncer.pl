# 005_pgbouncer.pl
#
# sandbox_store behind PgBouncer in transaction pooling mode: the 32-client
# exactly-once stress test (test/stress/run.sh) passes with its pgbench
# clients multiplexed over fewer server connections than clients, so
# consecutive transactions of one client land on different backends.
# Nothing may rely on session state: locks are transaction-scoped, plans are
# a per-backend cache.  Also: a lock-mode ensure in one transaction still
# excludes another client through the pooler.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SandboxStoreTest;

my $pgbouncer = '/usr/sbin/pgbouncer';
plan skip_all => 'pgbouncer is not installed (apt-get install pgbouncer)'
  unless -x $pgbouncer;

my $node = PostgreSQL::Test::Cluster->new('pgbouncer');
$node->init;
$node->append_conf('postgresql.conf', "max_connections = 60\n");
$node->start;

my $user = $node->safe_psql('postgres', 'SELECT current_user');
my $dir = PostgreSQL::Test::Utils::tempdir();
my $bouncer_port = PostgreSQL::Test::Cluster::get_free_port();
my $server_pool = 8;    # server connections per database/user pair

open my $ini, '>', "$dir/pgbouncer.ini" or die $!;
print $ini <<"EOF";
[databases]
* = host=@{[ $node->host ]} port=@{[ $node->port ]}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer_port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
default_pool_size = $server_pool
max_client_conn = 200
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
close $ini;
open my $users, '>', "$dir/userlist.txt" or die $!;
print $users qq{"$user" ""\n};
close $users;

my $bouncer = IPC::Run::start([ $pgbouncer, "$dir/pgbouncer.ini" ],
	'>', "$dir/stdout", '2>', "$dir/stderr");
# Wait until it accepts connections.
my $ready = 0;
for (1 .. 100)
{
	if (system("psql -X -q -h 127.0.0.1 -p $bouncer_port -U $user -d postgres -c 'SELECT 1' >/dev/null 2>&1") == 0)
	{
		$ready = 1;
		last;
	}
	select(undef, undef, undef, 0.1);
}
ok($ready, 'pgbouncer accepts connections');

# The stress test: setup and checks talk to the server directly; pgbench's 32
# clients go through pgbouncer with $server_pool server connections.
$ENV{PGHOST} = $node->host;
$ENV{PGPORT} = $node->port;
$ENV{PGUSER} = $user;
$ENV{PGDATABASE} = 'postgres';
$ENV{SB_STRESS_PGBENCH_HOST} = '127.0.0.1';
$ENV{SB_STRESS_PGBENCH_PORT} = $bouncer_port;
$ENV{SB_STRESS_QUERY_MODE} = 'extended';
$ENV{SB_STRESS_ROUNDS} = 4;
my ($stdout, $stderr);
my $ok = IPC::Run::run([ 'bash', 'test/stress/run.sh' ], '>', \$stdout, '2>', \$stderr);
ok($ok, 'the 32-client exactly-once stress test passes through pgbouncer (transaction pooling)')
  or diag("stdout:\n$stdout\nstderr:\n$stderr");
like($stdout, qr/every key created exactly once/, 'every key was created exactly once');

# pgbouncer really multiplexed: the server saw at most $server_pool backends of the stress db.
my $backends = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE datname = 'sandbox_store_stress'");
cmp_ok($backends, '<=', $server_pool,
	"the server had at most $server_pool backends for 32 clients ($backends now)");

# Lock mode through the pooler: a transaction keeps its backend, so the key
# stays held until COMMIT.
my $via = "host=127.0.0.1 port=$bouncer_port user=$user dbname=postgres";
$node->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS sandbox_store');
my $holder = $node->background_psql('postgres', extra_params => [ '-d', $via ]);
$holder->query_safe(
	"BEGIN; SELECT action FROM sandbox_store.sandbox_ensure('pooled-key', 'run-1')");
my ($ret, $out, $err) = $node->psql('postgres',
	"SELECT action FROM sandbox_store.sandbox_ensure('pooled-key', 'run-2', wait => '0')",
	connstr => $via);
like($err, qr/could not lock sandbox key "pooled-key"/,
	'a key held in a pooled transaction excludes another pooled client');
$holder->query_safe(
	"SELECT key FROM sandbox_store.sandbox_upsert('pooled-key', 'p', 'sbx-pooled', 't'); COMMIT");
is( $node->psql('postgres',
		"SELECT action FROM sandbox_store.sandbox_ensure('pooled-key', 'run-2', wait => '0')",
		connstr => $via),
	0,
	'after COMMIT the next pooled client gets the key');
is( $node->safe_psql('postgres',
		"SELECT latest_run_id FROM sandbox_store.sandbox_get('pooled-key')"),
	'run-2', '... and resumes the committed record');
$holder->quit;

is( $node->safe_psql('postgres',
		$EXT_LOCKS),
	'0', 'no lock of the extension is left on any pooled backend');

$bouncer->kill_kill;
$node->stop;
done_testing();

# test/citus/client-locks.pl: the TypeScript client's lock mode on a real
# citus cluster excludes plain SQL calls of the same key, and every keyed
# statement of the client runs on the worker holding the key's shard.
#
# A coordinator and two workers (test/perl/SandboxStoreCitus.pm: the server
# of PG_CONFIG with the Citus test/scripts/build-citus.sh built into it),
# sandbox_store distributed.  The key's advisory lock is local to a node, so
# it is the key's lock only if every call of the key takes it on the node of
# the key's shard: Citus delegates a plain call there (SELECT f(args) or
# SELECT * FROM f(args), the arguments values or parameters), and the
# client's statements must be such calls.  The client runs as an app uses it
# (clients/typescript/test/citus/client-locks.mjs: the package's dist/, a
# pg.Pool on the coordinator, nothing that knows of Citus):
#
#   - a psql session through each worker holds the key (BEGIN;
#     sandbox_lock): a lock-mode withLock of the client through the
#     coordinator, not waiting, is refused (55P03); a lock-mode ensure, not
#     waiting, is refused and creates nothing; the instance store's
#     (unfenced) delete waits for the key on the shard's worker
#     (sandbox_store.key_locks there shows it waiting), and finishes once the
#     session commits;
#   - the reverse: while the client holds the key through the coordinator
#     in a lock-mode withLock, and while it holds it in a lock-mode ensure
#     (its create waiting), a plain sandbox_lock(key, wait => '0') and a
#     plain sandbox_ensure(..., wait => '0') through each node are refused;
#     the holder's lock is on the shard's worker;
#   - the client's keyed statements (sandbox_upsert with an updatedAt,
#     sandbox_get, sandbox_lock, sandbox_ensure, sandbox_delete,
#     sandbox_claim, sandbox_renew, sandbox_release, run_get, run_claim),
#     sent through the coordinator in autocommit and inside lock-mode
#     transactions, ran on the worker holding the key's (the run's) shard
#     and never on the other (each node's log_statement = all lines).
#
# Nothing decides by time: the client's waits are 0 (refused at once, or
# held), and each hold ends when the test says so (a line on the client's
# stdin, or the session's COMMIT).  With the 0.3.1 client the last checks
# fail: its run_get and run_claim cast their result, so Citus ran them on
# the coordinator.  Its lock-mode sandbox_lock and sandbox_ensure, though
# not plain calls, reach the key's worker (with Citus 13.2.2 and 14.0.1):
# the planner folds their computed wait into a value, and Citus does not
# look at the select list of SELECT ... FROM f(...).  The two writes of
# ensureSandbox (sandbox_upsert without an updatedAt) compute their time in
# SQL (clock_timestamp()) and run on the node called, the key held already:
# two of the client's four upserts reach the key's worker as calls.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreCitus;
use Test::More;

my $timeout = $PostgreSQL::Test::Utils::timeout_default;

my ($coord, $w1, $w2) = citus_cluster();
my @workers = ($w1, $w2);
my $client = typescript_client();
plan skip_all => 'npm is not installed: the test needs Node >= 18.17 and npm' unless defined $client;

my $script = "$client/test/citus/client-locks.mjs";
my $user = getpwuid($<);
my $url = "postgresql://$user\@127.0.0.1:" . $coord->port . '/postgres';

# The client's command run to its end (its stdin empty: a hold it gets ends
# at once); its output.
sub client
{
	my @args = @_;
	my ($out, $err) = ('', '');
	note "client-locks.mjs @args";
	my $ok = eval {
		IPC::Run::run([ 'node', $script, $url, @args ], '<', \'', '>', \$out, '2>', \$err,
			IPC::Run::timeout($timeout));
	};
	note $out;
	diag "client-locks.mjs @args: $@$err" if !$ok && $out !~ /^refused /m;
	return $out;
}

# The client's command started; client_until waits for a line of its output.
sub client_start
{
	my @args = @_;
	my %c = (in => '', out => '', err => '', args => "@args");
	note "client-locks.mjs @args (started)";
	$c{h} = IPC::Run::start([ 'node', $script, $url, @args ],
		'<', \$c{in}, '>', \$c{out}, '2>', \$c{err}, IPC::Run::timeout($timeout));
	return \%c;
}

sub client_until
{
	my ($c, $re) = @_;
	my $ok = pump_until($c->{h}, IPC::Run::timer($timeout), \$c->{out}, $re);
	diag "client-locks.mjs $c->{args}: $c->{err}" unless $ok;
	return $ok;
}

# Waits for a started client's end, first ending its hold (a line on its
# stdin) if it holds one: a client that holds nothing may have ended already,
# and a line written to it then would find no reader.
sub client_finish
{
	my ($c, $holds) = @_;
	$c->{in} .= "go\n" if $holds;
	eval { $c->{h}->finish; };
	note $c->{out};
	diag "client-locks.mjs $c->{args}: $@$c->{err}" if $@ || $c->{h}->result;
	return $c->{out};
}

# The key's locks on $node: 'granted' and 'waiting' counts.
sub key_locks
{
	my ($node, $key) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT count(*) FILTER (WHERE granted) || ' granted, ' || count(*) FILTER (WHERE NOT granted) || ' waiting'
  FROM sandbox_store.key_locks WHERE lock_id = sandbox_store.sandbox_lock_id('$key')});
}

# A plain call through $node: its error, '' if it succeeded.
sub plain
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql);
	return $ret == 0 ? '' : $err;
}

my $key = 'client-locks-1';
my $home = shard_node($coord, 'sandbox_store.instances', $key, @workers);
my ($other) = grep { $_ != $home } @workers;
note "$key: its shard is on " . $home->name;
my $records = qq{SELECT count(*) FROM sandbox_store.instances WHERE key = '$key'};

# --- A plain SQL holder through each worker excludes the client -------------

for my $via (@workers)
{
	my $where = 'the key held by a session through ' . $via->name;
	my $holder = $via->background_psql('postgres');
	$holder->query_safe("BEGIN; SELECT sandbox_store.sandbox_lock(key => '$key')");
	is(key_locks($home, $key), '1 granted, 0 waiting', "$where: the lock is on the shard's worker");

	like(client('lock', $key, 0), qr/^refused LockNotAvailableError 55P03$/m,
		"$where: the client's lock-mode withLock through the coordinator is refused");
	like(client('ensure', $key, 0), qr/^refused LockNotAvailableError 55P03$/m,
		"$where: the client's lock-mode ensure through the coordinator is refused");
	is($coord->safe_psql('postgres', $records), '0', "$where: and created nothing");

	# The delete waits for the key on the shard's worker until the holder
	# commits (or, not delegated, goes through at once on the coordinator).
	my $delete = client_start('delete', $key);
	my $waited = 0;
	until ($waited || $delete->{out} =~ /^(deleted|error)/m || !$delete->{h}->pumpable)
	{
		$waited = key_locks($home, $key) eq '1 granted, 1 waiting';
		$delete->{h}->pump_nb;
	}
	ok($waited && $delete->{out} eq '',
		"$where: the client's delete waits for the key on the shard's worker");
	$holder->query_safe('COMMIT');
	$holder->quit;
	like(client_finish($delete, 0), qr/^deleted$/m, "$where: the delete finishes once the session committed");
}
is(key_locks($home, $key), '0 granted, 0 waiting', 'nothing holds the key');

# --- The client's lock-mode hold excludes plain calls through every node ----

my @nodes = ($coord, @workers);
my $lock = client_start('lock', $key, 0);
ok(client_until($lock, qr/^held$/m), "the client holds the key in a lock-mode withLock through the coordinator");
is(key_locks($home, $key), '1 granted, 0 waiting', "the client's lock is on the shard's worker");
for my $node (@nodes)
{
	like(plain($node, "SELECT sandbox_store.sandbox_lock(key => '$key', wait => '0')"),
		qr/could not lock sandbox key/, 'a plain sandbox_lock through the ' . $node->name . ' is refused');
	like(plain($node, "SELECT * FROM sandbox_store.sandbox_ensure(key => '$key', run_id => 'plain', wait => '0')"),
		qr/could not lock sandbox key/, 'a plain sandbox_ensure through the ' . $node->name . ' is refused');
}
like(client_finish($lock, 1), qr/^released$/m, "the client's section ends");
is(plain($w1, "SELECT sandbox_store.sandbox_lock(key => '$key', wait => '0')"), '', 'then a plain call gets the key');

my $ensure = client_start('ensure', $key, 0);
ok(client_until($ensure, qr/^held create$/m), "the client's lock-mode ensure through the coordinator creates");
is(key_locks($home, $key), '1 granted, 0 waiting', "its lock is on the shard's worker");
for my $node (@nodes)
{
	like(plain($node, "SELECT sandbox_store.sandbox_lock(key => '$key', wait => '0')"),
		qr/could not lock sandbox key/, "a plain sandbox_lock through the " . $node->name . ' is refused meanwhile');
	like(plain($node, "SELECT * FROM sandbox_store.sandbox_ensure(key => '$key', run_id => 'plain', wait => '0')"),
		qr/could not lock sandbox key/, "a plain sandbox_ensure through the " . $node->name . ' is refused meanwhile');
}
like(client_finish($ensure, 1), qr/^outcome created$/m, 'the ensure ends: created');
is( $coord->safe_psql(
		'postgres', "SELECT provider_sandbox_id || ' ' || latest_run_id FROM sandbox_store.instances WHERE key = '$key'"),
	'sbx-client r',
	'its record is there');

# --- Where the client's statements run ---------------------------------------

my $run = 'client-locks-run';
my $run_home = shard_node($coord, 'sandbox_store.runs', $run, @workers);
note "$run: its shard is on " . $run_home->name;
my %log_at = map { $_->name => -s $_->logfile } @nodes;
my $out = client('calls', $key, $run);
like($out, qr/^done$/m, 'the client made every keyed call through the coordinator');
(my $steps = $out) =~ s/^run claimed epoch \d+$/run claimed epoch N/m;
is( $steps,
	join('',
		map { "$_\n" } 'get sbx-1',
		'lock-mode section: get sbx-1, list 1',
		'lock-mode ensure resumed',
		'deleted, get null',
		'lock-mode ensure created sbx-client',
		'lease-mode section renewed',
		'lease-mode ensure resumed',
		'run get running',
		'run claimed epoch N',
		'done'),
	'each as on one server');

# The log_statement = all lines of each node since the calls.
my %since = map {
	my $node = $_;
	open(my $fh, '<', $node->logfile) or die $node->logfile . ": $!";
	seek($fh, $log_at{ $node->name }, 0);
	local $/;
	my $text = <$fh>;
	close($fh);
	($node->name => $text)
} @nodes;

# How many calls of $function whose first argument is $value a node's log
# shows executed, as Citus sends them to the worker it delegates to (the
# arguments values, named or not).
sub calls
{
	my ($text, $function, $value) = @_;
	return scalar(() =
		  $text =~ /LOG:  (?:execute [^:\n]*|statement): SELECT .*?sandbox_store\.\Q$function\E\((?:[a-z_]+ => )?'\Q$value\E'::text/g);
}

# What the calls command does, per function of the key: upsert and get,
# then in a lock-mode section (sandbox_lock) a get and an upsert; a
# lock-mode ensure that resumes (its stamp is sandbox_ensure's own); the
# delete and a get; a lock-mode ensure that creates and records the new
# sandbox (an upsert in its transaction); a lease-mode section (claim, at
# least one renewal, release); a lease-mode ensure that resumes (claim,
# the record read with its age, the fenced upsert of its stamp, release).
# Of the four upserts, the two of ensureSandbox (the lock-mode record, the
# lease-mode stamp) take their time from clock_timestamp() in the
# statement, which Citus runs on the node called: their key is held
# already (the lock on its worker, the fence checked in its row there).
my %expected = (
	sandbox_upsert => 2,
	sandbox_lock => 1,
	sandbox_ensure => 2,
	sandbox_delete => 1,
	sandbox_claim => 2,
	sandbox_release => 2,);
for my $function (sort keys %expected)
{
	my ($there, $elsewhere) = (calls($since{ $home->name }, $function, $key), calls($since{ $other->name }, $function, $key));
	is("$there, $elsewhere", "$expected{$function}, 0",
		"the client's $expected{$function} $function of the key ran on the worker of the key's shard (delegated)");
}
for my $function (qw(sandbox_get sandbox_renew))
{
	my ($there, $elsewhere) = (calls($since{ $home->name }, $function, $key), calls($since{ $other->name }, $function, $key));
	ok($there >= ($function eq 'sandbox_get' ? 3 : 1) && $elsewhere == 0,
		"the client's $function of the key ran on the worker of the key's shard (delegated): $there, $elsewhere");
}
my ($run_other) = grep { $_ != $run_home } @workers;
for my $function (qw(run_get run_claim))
{
	my ($there, $elsewhere) = (calls($since{ $run_home->name }, $function, $run), calls($since{ $run_other->name }, $function, $run));
	ok($there >= 1 && $elsewhere == 0,
		"the client's $function of the run ran on the worker of the run's shard (delegated): $there, $elsewhere");
}

done_testing();

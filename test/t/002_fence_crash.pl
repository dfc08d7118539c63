# 002_fence_crash.pl
#
# Fences keep strictly increasing across a crash restart (docs/reference.md,
# invariants: "Fences strictly increase per key, forever: across ... crash
# restart ... (no value is ever handed out twice)"; issue 4, item 4).
#
# Each round takes claims in lease mode and then crashes the server:
#
#   round 1  pg_ctl stop -m immediate (no shutdown checkpoint, no WAL flush)
#   round 2  SIGKILL to the postmaster; its children exit on their own
#   round 3  immediate again, after a few hundred claims (the fence sequence
#            WAL-logs only every 32nd value: several such steps are crossed)
#
# Before the crash, each round hands out fences in every way there is:
# acknowledged claims (autocommit: the claim committed before its fence was
# returned) that stay live, are released, or expire; a claim in a
# transaction that is rolled back; a claim in a transaction still open when
# the server dies.  After the restart:
#
#   - crash recovery ran (the server log says so);
#   - no lock of the extension is left in pg_locks;
#   - every committed claim row is in sandbox_store.leases with its fence,
#     owner token and expiry; nothing of the rolled-back or open
#     transactions is; the live claims are still live and still exclude;
#   - every new claim (after release, after expiry, on a key never claimed,
#     on the keys of the rolled-back and open transactions) and the new
#     fence of a lock-mode takeover of an expired claim are strictly greater
#     than every fence handed out before the crash, and all distinct;
#   - an expired claim's holder is fenced off once the key is taken over:
#     its fenced upsert and delete and its renew raise SB001 and change
#     nothing, its release returns false, the successor keeps its claim.
#
# Round 1 also hands out a fence in an open transaction as the very last
# thing before the crash, arranged so that this nextval is the one that
# WAL-logs the sequence (its log_cnt is 0): nothing flushes that WAL record
# before the crash.  PostgreSQL documents that the sequence may then come
# back at its older state ("If the database cluster crashes before
# committing a transaction containing a nextval ... call, the sequence state
# change might not have made its way to persistent storage"), so the same
# fence can be handed out again.  The extension therefore flushes the
# WAL covering a fence before it returns one from a transaction block; this
# round proves the fence is not handed out again.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SandboxStoreTest;


# This used to fail (see the header): the extension now flushes the WAL that
# covers a fence before returning it from a transaction block.  Set to a
# reason to mark the assertion TODO again.
my $UNFLUSHED_TODO = undef;

my $node = PostgreSQL::Test::Cluster->new('fence_crash');
$node->init;
# No autovacuum: an autoanalyze commit flushes WAL at a moment of its own,
# and round 1 must know what was flushed when the server died.
$node->append_conf('postgresql.conf', 'autovacuum = off');
$node->start;
install_sandbox_store($node);
$UNFLUSHED_TODO = unflushed_fence_todo($node);

# SQL literal of a string.

sub sql { my ($q) = @_; return $node->safe_psql('postgres', $q); }

sub max_of { my $m = shift; for (@_) { $m = $_ if $_ > $m } return $m; }
sub min_of { my $m = shift; for (@_) { $m = $_ if $_ < $m } return $m; }

# The lease-mode ensure of $key, as SQL returning "key|action|fence|token|expiry".
sub claim_sql
{
	my ($key, $lease, $wait) = @_;
	my $w = defined $wait ? ', wait => ' . lit($wait) : '';
	return 'SELECT ' . lit($key)
	  . " || '|' || action || '|' || fence || '|' || owner_token || '|' || lease_expires_at"
	  . ' FROM sandbox_store.sandbox_ensure(key => '
	  . lit($key)
	  . ", run_id => 'run-claim', lease => "
	  . lit($lease)
	  . "$w);\n";
}

sub parse_claim
{
	my ($line) = @_;
	my %c;
	@c{qw(key action fence token expires)} = split /\|/, $line;
	return \%c;
}

# Claims on @keys, one autocommit statement each (each claim commits before
# its fence is returned); returns the claims in order.
sub claim_keys
{
	my ($lease, @keys) = @_;
	my $out = sql(join '', map { claim_sql($_, $lease) } @keys);
	my @claims = map { parse_claim($_) } split /\n/, $out;
	die "expected " . scalar(@keys) . " claims, got: $out" unless @claims == @keys;
	return @claims;
}

# sandbox_release of each claim, one autocommit statement each: "t"/"f" lines.
sub release_claims
{
	my @claims = @_;
	return sql(
		join '',
		map {
			'SELECT sandbox_store.sandbox_release(' . lit($_->{key}) . ', '
			  . lit($_->{token}) . ");\n"
		} @claims);
}

# Run $sql; return its output, or "ERROR " and the SQLSTATE it raised.
sub output_or_sqlstate
{
	my ($q) = @_;
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$q");
	return $stdout if $ret == 0;
	return $stderr =~ /ERROR:\s+([0-9A-Z]{5}):/ ? "ERROR $1" : "no SQLSTATE in: $stderr";
}

sub record_of
{
	my ($key) = @_;
	return sql('SELECT provider_sandbox_id || \'|\' || latest_run_id'
		  . ' FROM sandbox_store.sandbox_get(' . lit($key) . ')');
}

# The sequence's state: last value handed out, and how many more values it
# hands out before it WAL-logs again.
sub seq_state
{
	return split /\|/,
	  sql(q{SELECT last_value || '|' || log_cnt FROM sandbox_store.fence_seq});
}

# A session with a claim in a transaction that stays open: returns the
# BackgroundPsql and the claim.
sub open_claim
{
	my ($key) = @_;
	my $h = $node->background_psql('postgres');
	$h->query_safe('BEGIN');
	my $c = parse_claim($h->query_safe(claim_sql($key, '1 hour')));
	return ($h, $c);
}

# Every fence handed out before the current crash, by earlier rounds too,
# except round 1's unflushed one (which has an assertion of its own).
my $handed_max = 0;

sub crash_round
{
	my (%r) = @_;
	my $name = $r{name};
	my $p = "$name/";    # key prefix of the round
	my %acked;           # key -> claim: acknowledged (committed) claims
	my @handed;          # every fence handed out in this round

	# A claim in a transaction that is rolled back.
	my $rb = parse_claim(
		sql("BEGIN;\n" . claim_sql("${p}rolled-back", '1 hour') . "ROLLBACK;\n"));
	push @handed, $rb->{fence};

	# A claim in a transaction that is still open when the server dies; the
	# claims below commit after it, so its sequence WAL record is flushed.
	my ($inflight_h, $inflight) = open_claim("${p}in-flight");
	push @handed, $inflight->{fence};

	# Acknowledged claims.  live: keeps its claim; released: released
	# before the crash; expiring: a 1-second lease whose holder (A) records
	# its sandbox with a fenced upsert; retired: a 1-second lease, taken
	# over after the crash by a lock-mode ensure.
	my ($live, $released) = claim_keys('1 hour', "${p}live", "${p}released");
	is(release_claims($released), 't', "$name: release before the crash");
	$released->{token} = $released->{expires} = '';
	my ($expiring, $retired) = claim_keys('1 second', "${p}expiring", "${p}retired");
	is( sql(
			'SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert(key => '
			  . lit($expiring->{key})
			  . ", provider => 'provider-x', provider_sandbox_id => 'sbx-A',"
			  . " thread_id => 'thread-1', latest_run_id => 'run-A', fence => $expiring->{fence})"
		),
		'sbx-A',
		"$name: holder A records its sandbox with a fenced upsert");

	# Many claims, every other one released.
	my @many = claim_keys('1 hour', map { sprintf '%smany-%04d', $p, $_ } 1 .. $r{many});
	my @many_released = @many[ grep { $_ % 2 == 0 } 0 .. $#many ];
	is(release_claims(@many_released),
		join("\n", ('t') x @many_released),
		"$name: release every other one of the $r{many} claims");
	$_->{token} = $_->{expires} = '' for @many_released;

	for my $c ($live, $released, $expiring, $retired, @many)
	{
		$acked{ $c->{key} } = $c;
		push @handed, $c->{fence};
	}
	my @first = ($rb, $inflight, $live, $released, $expiring, $retired, @many);
	is(join(',', map { $_->{action} } @first),
		join(',', ('create') x @first),
		"$name: every claim of a new key says create");

	# Round 1: one more fence in an open transaction, as the nextval that
	# WAL-logs the sequence.  After it, nothing may end a transaction that
	# wrote WAL (even a new connection can prune a catalog page, and its end
	# has the WAL writer flush): the last checks run in that transaction.
	my ($unflushed_h, $unflushed, $seq_last, $ext_locks);
	if ($r{unflushed})
	{
		my (undef, $log_cnt) = seq_state();
		if ($log_cnt > 0)
		{
			# acknowledged claims, released (a release takes no fence)
			my @pad = claim_keys('1 hour', map { "${p}pad-$_" } 1 .. $log_cnt);
			release_claims(@pad);
			for my $c (@pad)
			{
				$c->{token} = $c->{expires} = '';
				$acked{ $c->{key} } = $c;
				push @handed, $c->{fence};
			}
		}
		is((seq_state())[1], 0, "$name: the next fence WAL-logs the sequence");
		($unflushed_h, $unflushed) = open_claim("${p}unflushed");
		($seq_last, $log_cnt) = split /\|/,
		  $unflushed_h->query_safe(
			q{SELECT last_value || '|' || log_cnt FROM sandbox_store.fence_seq});
		is($log_cnt, 32, "$name: the open transaction's claim WAL-logged the sequence");
		$ext_locks = $unflushed_h->query_safe($EXT_LOCKS);
	}
	else
	{
		($seq_last) = seq_state();    # the last value the sequence handed out
		$ext_locks = sql($EXT_LOCKS);
	}
	is($ext_locks, $r{unflushed} ? 2 : 1,
		"$name: before the crash, pg_locks shows the open transactions' key locks");
	my $fence_bound = max_of($handed_max, @handed);
	cmp_ok($seq_last, '>=', $fence_bound, "$name: the sequence is past every fence seen");
	note "$name: fences handed out before the crash up to $fence_bound"
	  . ($unflushed ? ", unflushed one $unflushed->{fence}" : '')
	  . "; sequence last_value $seq_last";

	# Crash.
	my $log_offset = -s $node->logfile;
	$r{crash}->();
	$_->{run}->kill_kill for grep { defined } $inflight_h, $unflushed_h;
	ok( $node->log_contains(
			qr/database system was not properly shut down; automatic recovery in progress/,
			$log_offset),
		"$name: the restart ran crash recovery");
	is(sql($EXT_LOCKS), '0', "$name: after the restart no lock of the extension is left");

	# Committed claims survived; nothing uncommitted did.
	my $rows = sql(
		"SELECT key || '|' || fence || '|' || coalesce(owner_token::text, '') || '|' || coalesce(lease_expires_at::text, '')
		   FROM sandbox_store.leases WHERE key LIKE " . lit("$p%") . ' ORDER BY key COLLATE "C"');
	my @expected_rows = map {
		my $c = $acked{$_};
		join '|', $_, $c->{fence}, $c->{token}, $c->{expires}
	} sort keys %acked;
	is($rows, join("\n", @expected_rows),
		"$name: every committed claim is in sandbox_store.leases with its fence, owner and expiry, and nothing else"
	);
	is( sql(
			'SELECT count(*) FROM sandbox_store.leases WHERE key IN ('
			  . join(', ', map { lit("$p$_") } qw(rolled-back in-flight unflushed)) . ')'),
		'0',
		"$name: the claims of the rolled-back and the open transactions are gone");
	my @live_keys =
	  sort map { $_->{key} } grep { $_->{token} ne '' } $live, @many;
	is( sql(
			'SELECT key FROM sandbox_store.claims WHERE key LIKE ' . lit("$p%")
			  . ' AND key NOT IN (' . lit($expiring->{key}) . ', ' . lit($retired->{key}) . ')'
			  . ' ORDER BY key COLLATE "C"'),
		join("\n", @live_keys),
		"$name: the live claims are still live in sandbox_store.claims");
	is(sqlstate_of($node, claim_sql($live->{key}, '1 hour', '0')),
		'55P03', "$name: a live claim still excludes another claim after the restart");
	is( output_or_sqlstate(
			'SELECT sandbox_store.sandbox_renew(' . lit($live->{key}) . ', '
			  . lit($live->{token}) . ", '1 hour') > now()"),
		't',
		"$name: the live claim's holder renews it with its token after the restart");

	# New claims: released (live ones by their holders now), expired, never
	# claimed, and the keys of the rolled-back and open transactions.
	is(release_claims($live, grep { $_->{token} ne '' } @many),
		join("\n", ('t') x @live_keys),
		"$name: the live claims' holders release them after the restart");
	# (Round 1: the unflushed key first, so that a fence handed out again
	# lands on the key whose dead transaction had it.)
	my @new = claim_keys(
		'1 hour',
		($r{unflushed} ? ("${p}unflushed") : ()),
		"${p}rolled-back", "${p}in-flight", "${p}never-claimed",
		$live->{key}, $released->{key}, map { $_->{key} } @many);

	# The expired claim of A is taken over by B, who records its sandbox.
	ok( $node->poll_query_until(
			'postgres',
			'SELECT count(*) = 0 FROM sandbox_store.claims WHERE key = '
			  . lit($expiring->{key})),
		"$name: A's 1-second lease expires");
	my ($succ) = claim_keys('1 hour', $expiring->{key});
	push @new, $succ;
	is($succ->{action}, 'resume', "$name: B's claim finds A's committed record (resume)");
	is( sql(
			'SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert(key => '
			  . lit($succ->{key})
			  . ", provider => 'provider-x', provider_sandbox_id => 'sbx-B',"
			  . " thread_id => 'thread-1', latest_run_id => 'run-B', fence => $succ->{fence})"),
		'sbx-B',
		"$name: B records its sandbox with a fenced upsert");
	is( sqlstate_of($node, 
			'SELECT sandbox_store.sandbox_upsert(key => ' . lit($expiring->{key})
			  . ", provider => 'provider-x', provider_sandbox_id => 'sbx-A2',"
			  . " thread_id => 'thread-1', latest_run_id => 'run-A', fence => $expiring->{fence})"
		),
		'SB001',
		"$name: A's fenced upsert with its pre-crash fence raises SB001");
	is( sqlstate_of($node, 
			'SELECT sandbox_store.sandbox_delete(key => ' . lit($expiring->{key})
			  . ", fence => $expiring->{fence})"),
		'SB001',
		"$name: A's fenced delete with its pre-crash fence raises SB001");
	is( sqlstate_of($node, 
			'SELECT sandbox_store.sandbox_renew(' . lit($expiring->{key}) . ', '
			  . lit($expiring->{token}) . ", '1 hour')"),
		'SB001',
		"$name: A's renew raises SB001");
	is(release_claims($expiring), 'f', "$name: A's late release returns false");
	is(record_of($expiring->{key}), 'sbx-B|run-B', "$name: the record is B's, intact");
	is( sql(
			"SELECT fence || '|' || owner_token FROM sandbox_store.claims WHERE key = "
			  . lit($succ->{key})),
		"$succ->{fence}|$succ->{token}",
		"$name: B keeps its claim");

	# The other expired claim is taken over in lock mode: it gets a new fence.
	ok( $node->poll_query_until(
			'postgres',
			'SELECT count(*) = 0 FROM sandbox_store.claims WHERE key = '
			  . lit($retired->{key})),
		"$name: the retired key's 1-second lease expires");
	is( sql(
			"BEGIN;\nSELECT action FROM sandbox_store.sandbox_ensure(key => "
			  . lit($retired->{key})
			  . ", run_id => 'run-lock');\nCOMMIT;"),
		'create',
		"$name: a lock-mode ensure takes the expired claim's key over");
	my $retired_fence = sql(
		"SELECT fence || '|' || (owner_token IS NULL) FROM sandbox_store.leases WHERE key = "
		  . lit($retired->{key}));
	like($retired_fence, qr/^\d+\|true$/, "$name: the lock-mode takeover ended the claim");
	$retired_fence =~ s/\|.*//;

	# Every fence given after the crash is new.
	my @new_fences = ((map { $_->{fence} } @new), $retired_fence);
	my %distinct = map { $_ => 1 } @new_fences;
	is(scalar(keys %distinct), scalar(@new_fences),
		"$name: the " . scalar(@new_fences) . " fences given after the restart are distinct");
	my $new_min = min_of(@new_fences);
	note "$name: fences after the restart: $new_min .. " . max_of(@new_fences);
	cmp_ok($new_min, '>', $fence_bound,
		"$name: every fence after the restart is greater than every fence handed out before it"
		  . ' (acknowledged claims, the rolled-back and the open transaction, earlier rounds)');
	my %old = map { $_ => 1 } @handed;
	is(join(',', grep { $old{$_} } @new_fences),
		'', "$name: no fence handed out before the crash is handed out again");
	if ($r{unflushed})
	{
		# The new holder of the unflushed key records its sandbox; the
		# holder of the dead transaction's fence then tries its fenced upsert.
		my $k = lit("${p}unflushed");
		is( sql(
				"SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert(key => $k,"
				  . " provider => 'provider-x', provider_sandbox_id => 'sbx-new',"
				  . " thread_id => 'thread-1', latest_run_id => 'run-new', fence => $new[0]{fence})"
			),
			'sbx-new',
			"$name: the unflushed key's new holder records its sandbox with a fenced upsert");
		my $dead_upsert = sqlstate_of($node, 
			"SELECT sandbox_store.sandbox_upsert(key => $k, provider => 'provider-x',"
			  . " provider_sandbox_id => 'sbx-dead', thread_id => 'thread-1',"
			  . " latest_run_id => 'run-dead', fence => $unflushed->{fence})");
	  TODO:
		{
			local $TODO = $UNFLUSHED_TODO;
			cmp_ok($new_min, '>', $unflushed->{fence},
				"$name: every fence after the restart is greater than the fence of the open"
				  . ' transaction whose sequence WAL record was not flushed');
			is($dead_upsert, 'SB001',
				"$name: a fenced upsert with the dead transaction's fence raises SB001");
			is(record_of("${p}unflushed"), 'sbx-new|run-new',
				"$name: the new holder's record is intact");
		}
	}
	cmp_ok($new_min, '>', $seq_last,
		"$name: every fence after the restart is greater than the sequence's last value before the crash"
	) unless $r{unflushed};

	is(sql($EXT_LOCKS), '0', "$name: no lock of the extension is left");
	$handed_max = max_of($fence_bound, @new_fences);
	return;
}

crash_round(
	name => 'immediate',
	many => 40,
	unflushed => 1,
	crash => sub { $node->stop('immediate'); $node->start; });

crash_round(name => 'kill9', many => 40, crash => sub { kill9_and_start($node) });

crash_round(
	name => 'immediate-many',
	many => 300,
	crash => sub { $node->stop('immediate'); $node->start; });

my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|was terminated by exception/, 'no backend crashed');

$node->stop;
done_testing();

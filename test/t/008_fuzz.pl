# 008_fuzz.pl
#
# Hostile input, as an unprivileged role that has only the README's grants
# (USAGE on the schema, EXECUTE on every function):
#
#   (a) the targeted fuzzer of test/fuzz/fuzz.sql: two sessions at once call
#       every function thousands of times with random, NULL, empty, huge (up
#       to a few MB), toasted, odd-encoding (controls, combining marks, bidi
#       overrides, emoji, U+10FFFF: all valid UTF-8) and boundary arguments
#       (1023/1024/1025 bytes, intervals 0, 1 microsecond, 178000000 years,
#       negative, '1 mon -31 days', fences 0/1/-1/max, max_rows 0/1/2^31-1,
#       'infinity' timestamps ...), inside autocommit-like, multi-call,
#       REPEATABLE READ, SERIALIZABLE, READ ONLY, cursor and rolled-back
#       subtransaction shapes, under varied lock_timeout, TimeZone,
#       DateStyle, IntervalStyle and search_path, while a third session holds
#       some keys (lock mode) and claims others (lease mode).  Every call's SQLSTATE must be
#       one the contract allows (sbfuzz.verdict), every result must be
#       consistent (one ensure row, round trips, lock held after lock ...),
#       every accepted fenced write must have been made with the fence of
#       the key's current claim (no record is written with a fence older
#       than the key's or after its claim ended, however takeovers, releases
#       and reaps race with it), a write retried with a released claim's
#       fence must get SB001,
#       and no lock or lock_timeout change may outlive a transaction.  Then
#       calls that wait without bound are canceled (pg_cancel_backend).
#       Then two workers again while an admin changes the tables between
#       their calls (columns added and dropped, primary keys rebuilt
#       concurrently, an index created and dropped, ANALYZE).
#   (b) a bounded sqlsmith run (Debian package sqlsmith) as that role, once
#       with sqlsmith's routine list narrowed to the extension's functions
#       and a few builtins, once as it comes.  sqlsmith's queries mostly
#       fail; only crashes count.
#
# After each part: the server is up, its log shows no backend terminated by
# a signal, no lock of the extension is left, and amcheck passes
# (bt_index_check with heapallindexed on every index of instances and
# leases, verify_heapam on both tables).
#
# Reproducible: SB_FUZZ_SEED (printed) fixes every generated call.  Other
# knobs: SB_FUZZ_CALLS (per worker), SB_FUZZ_SECONDS (per worker bound),
# SB_SQLSMITH_QUERIES.  A call that kills a backend is the last line of the
# worker's trace (tmp_check/.../fuzz_wN.trace), printed on failure.

use strict;
use warnings FATAL => 'all';

use FindBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use lib "$FindBin::RealBin/../perl";
use SandboxStoreTest;

my $seed = $ENV{SB_FUZZ_SEED} // 20261129;
my $calls = $ENV{SB_FUZZ_CALLS} // 8000;
my $seconds = $ENV{SB_FUZZ_SECONDS} // 40;
my $smith_queries = $ENV{SB_SQLSMITH_QUERIES} // 4000;
my $fuzz_sql = "$FindBin::RealBin/../fuzz/fuzz.sql";
my $tmp = PostgreSQL::Test::Utils::tempdir;

diag("fuzz seed $seed (set SB_FUZZ_SEED to repeat), $calls calls per worker, at most $seconds s");

my $node = PostgreSQL::Test::Cluster->new('fuzz');
$node->init;
# Keep the log to what matters here (sqlsmith sends thousands of statements,
# most of them failing): errors and the postmaster's messages, no statements.
$node->append_conf('postgresql.conf', "log_statement = none\nlog_min_error_statement = panic\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION sandbox_store; CREATE EXTENSION amcheck;');
$node->command_ok(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $fuzz_sql ],
	'the fuzz driver installs (role sbfuzz_app with the README grants only)');
$node->safe_psql('postgres', q{ALTER ROLE sbfuzz_app SET lock_timeout = '20ms';});

my $app = $node->connstr('postgres') . ' user=sbfuzz_app';

# The app role really has no privilege on the extension's objects.
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (VALUES ('sandbox_store.instances'), ('sandbox_store.leases'),
                             ('sandbox_store.claims'), ('sandbox_store.fence_seq')) v(t),
       LATERAL unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p
 WHERE has_table_privilege('sbfuzz_app', v.t, p)
    OR has_sequence_privilege('sbfuzz_app', 'sandbox_store.fence_seq', 'USAGE, SELECT, UPDATE')}),
	'0',
	'sbfuzz_app has no privilege on the tables, the view or the sequence');

# Some records, as the app would write them.
$node->safe_psql(
	'postgres', q{
SELECT sandbox_store.sandbox_upsert(k, 'e2b', 'sbx-' || k, 't' || (n % 3), NULL, 'run-0')
  FROM unnest(ARRAY['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'busy-1', 'busy-2', 'busy-3',
                    'claimed-1', 'claimed-2', 'tenant-1/thread-é/😀/e2b']) WITH ORDINALITY u(k, n);},
	extra_params => [ '-U', 'sbfuzz_app' ]);

# Another app server: claims two keys, and holds three in an open transaction.
my $holder = $node->background_psql('postgres', extra_params => [ '-U', 'sbfuzz_app' ]);
my %token;
for my $k ('claimed-1', 'claimed-2')
{
	$token{$k} = $holder->query_safe(
		qq{SELECT owner_token FROM sandbox_store.sandbox_ensure('$k', 'holder', lease => '1 hour')});
}
$holder->query_safe(
	q{BEGIN; SELECT sandbox_store.sandbox_lock('busy-1'); SELECT sandbox_store.sandbox_lock('busy-2');
	  SELECT action FROM sandbox_store.sandbox_ensure('busy-3', 'holder');});

# Everything the test checks after each part.
sub check_aftermath
{
	my ($part) = @_;
	is($node->safe_psql('postgres', 'SELECT 1'), '1', "$part: the server is up");
	my $log = slurp_file($node->logfile);
	my @crashes = grep { /terminated by signal|was terminated by exception|\bPANIC:|TRAP:/ } split /\n/, $log;
	is(scalar(@crashes), 0, "$part: no backend terminated by a signal in the server log")
	  or diag(join("\n", @crashes));
	is($node->safe_psql('postgres', $EXT_LOCKS), '0', "$part: no lock of the extension is left");
	my ($rc, $indexes, $err) = $node->psql(
		'postgres', q{
SELECT string_agg(c.relname, ' ' ORDER BY c.relname)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid,
       LATERAL (SELECT bt_index_check(c.oid, true)) x
 WHERE i.indrelid IN ('sandbox_store.instances'::regclass, 'sandbox_store.leases'::regclass)});
	my $expected = $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM pg_index
 WHERE indrelid IN ('sandbox_store.instances'::regclass, 'sandbox_store.leases'::regclass)});
	ok($rc == 0 && $expected >= 3 && scalar(split / /, $indexes) == $expected,
		"$part: amcheck bt_index_check (heapallindexed) passes on every index: $indexes")
	  or diag($err);
	is( $node->safe_psql(
			'postgres', q{
SELECT (SELECT count(*) FROM verify_heapam('sandbox_store.instances'))
     + (SELECT count(*) FROM verify_heapam('sandbox_store.leases'))}),
		'0',
		"$part: amcheck verify_heapam finds nothing in instances and leases");
	is( $node->safe_psql(
			'postgres', q{
SELECT count(*) FROM sandbox_store.leases
 WHERE fence > (SELECT last_value FROM sandbox_store.fence_seq)}),
		'0',
		"$part: no fence above the sequence");
}

# Print a worker's last traced calls (the one that was running when it died).
sub trace_tail
{
	my ($file) = @_;
	return '' unless -e $file;
	my @lines = split /\n/, slurp_file($file);
	@lines = @lines[ -5 .. -1 ] if @lines > 5;
	return join("\n", map { length > 2000 ? substr($_, 0, 2000) . '...' : $_ } @lines);
}

# (a) The targeted fuzzer: two workers at once.
my (@runs, %trace);
for my $w (1, 2)
{
	$trace{$w} = "$tmp/fuzz_w$w.trace";
	my $out = '';
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $app, '-c',
			"CALL sbfuzz.run($w, $seed, $calls, $seconds, true)" ],
		'<', \undef, '>', \$out, '2>', $trace{$w},
		IPC::Run::timeout($seconds + 90));
	push @runs, [ $w, $h ];
}
for my $r (@runs)
{
	my ($w, $h) = @$r;
	my $ok = eval { $h->finish };
	ok($ok, "fuzz worker $w finished") or diag("worker $w, last calls:\n" . trace_tail($trace{$w}));
}

# Calls that wait without bound, canceled while they wait.
{
	my $trace = "$tmp/fuzz_cancel.trace";
	my $canceller = $node->background_psql('postgres');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', "$app application_name=sbfuzz-cancel", '-c',
			"CALL sbfuzz.cancel_run(3, $seed, 100)" ],
		'<', \undef, '>', \my $out, '2>', $trace, IPC::Run::timeout(120));
	my ($seen, $cancels, $t0) = (0, 0, time);
	while (time - $t0 < 110)
	{
		my ($alive, $n) = split /\|/, $canceller->query_safe(
			q{SELECT count(*), count(*) FILTER (WHERE c)
			    FROM (SELECT pid, wait_event_type IN ('Lock', 'Extension') AS waiting
			            FROM pg_stat_activity WHERE application_name = 'sbfuzz-cancel' OFFSET 0) a,
			         LATERAL (SELECT CASE WHEN a.waiting THEN pg_cancel_backend(a.pid) ELSE false END AS c) x});
		$cancels += $n;
		$seen ||= $alive;
		last if ($seen && !$alive) || (!$seen && time - $t0 > 15);
		usleep(3000);
	}
	$canceller->quit;
	my $ok = eval { $h->finish };
	ok($ok, 'cancel worker finished') or diag("cancel worker, last calls:\n" . trace_tail($trace));
	cmp_ok($cancels, '>=', 50, "$cancels calls canceled while they waited for a key");
}

# The holder lets go.
$holder->query_safe('COMMIT');
for my $k (sort keys %token)
{
	is($holder->query_safe(qq{SELECT sandbox_store.sandbox_release('$k', '$token{$k}')}),
		't', "the holder's claim on $k is still its own, and released");
}
$holder->quit;

# (a2) An admin changes the managed tables between the workers' calls:
# columns added (one NOT NULL with a default) and dropped, primary keys
# rebuilt concurrently, an index created and dropped concurrently, new
# statistics.  None of these rewrites the table, so every check of the
# fuzzer still holds (a rewrite is not MVCC-safe for REPEATABLE READ
# snapshots; specs table-rewrite and update-in-flight cover rewrites).  The
# workers run the same calls and checks as in (a); the admin's statements
# take their turn between transactions (lock_timeout 2 s, a failure to get
# the lock is not an error of the product).  Since 1.4 the extension's event
# trigger refuses added and dropped columns (pg_dump cannot carry them;
# regression test guard); a superuser can disable it, so this phase does,
# and enables it again after.
{
	$node->safe_psql('postgres', 'ALTER EVENT TRIGGER sandbox_store_guard DISABLE');
	my $ddl_seconds = int($seconds / 2) || 1;
	my @ddl = (
		'ALTER TABLE sandbox_store.instances ADD COLUMN admin_note text',
		'REINDEX INDEX CONCURRENTLY sandbox_store.instances_pkey',
		'ALTER TABLE sandbox_store.instances ADD COLUMN admin_n int8 NOT NULL DEFAULT 7',
		'ALTER TABLE sandbox_store.leases ADD COLUMN admin_note text',
		'REINDEX INDEX CONCURRENTLY sandbox_store.leases_pkey',
		'ALTER TABLE sandbox_store.instances DROP COLUMN admin_note',
		'CREATE INDEX CONCURRENTLY admin_thread ON sandbox_store.instances (thread_id)',
		'ANALYZE sandbox_store.instances',
		'ALTER TABLE sandbox_store.leases DROP COLUMN admin_note',
		'ALTER TABLE sandbox_store.instances DROP COLUMN admin_n',
		'DROP INDEX CONCURRENTLY sandbox_store.admin_thread');
	my (@ddl_runs, %ddl_trace);
	for my $w (4, 5)
	{
		$ddl_trace{$w} = "$tmp/fuzz_w$w.trace";
		my $h = IPC::Run::start(
			[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $app, '-c',
				"CALL sbfuzz.run($w, $seed, $calls, $ddl_seconds, true)" ],
			'<', \undef, '>', \my $out, '2>', $ddl_trace{$w},
			IPC::Run::timeout($ddl_seconds + 90));
		push @ddl_runs, [ $w, $h ];
	}
	my ($applied, $i, $t0) = (0, 0, time);
	while (grep { $_->[1]->pumpable } @ddl_runs)
	{
		my $sql = $ddl[ $i % @ddl ];
		my ($rc) = $node->psql('postgres', "SET lock_timeout = '2s'; $sql");
		if ($rc == 0) { $applied++; $i++; }
		last if time - $t0 > $ddl_seconds + 60;
		usleep(50_000);
	}
	# Leave the tables as the extension made them.
	for my $sql (
		'ALTER TABLE sandbox_store.instances DROP COLUMN IF EXISTS admin_note',
		'ALTER TABLE sandbox_store.instances DROP COLUMN IF EXISTS admin_n',
		'ALTER TABLE sandbox_store.leases DROP COLUMN IF EXISTS admin_note',
		'DROP INDEX IF EXISTS sandbox_store.admin_thread',
		'ALTER EVENT TRIGGER sandbox_store_guard ENABLE')
	{
		$node->safe_psql('postgres', $sql);
	}
	for my $r (@ddl_runs)
	{
		my ($w, $h) = @$r;
		my $ok = eval { $h->finish };
		ok($ok, "fuzz worker $w (admin changes meanwhile) finished")
		  or diag("worker $w, last calls:\n" . trace_tail($ddl_trace{$w}));
	}
	cmp_ok($applied, '>=', scalar(@ddl), "the admin changed the tables $applied times while the workers ran");
	my $runs = $node->safe_psql('postgres', q{SELECT coalesce(sum(calls), 0) FROM sbfuzz.report WHERE kind = 'run' AND worker IN (4, 5)});
	cmp_ok($runs, '>=', 500, "the workers made $runs calls meanwhile");
}

# What the workers saw.
my $report = $node->safe_psql(
	'postgres', q{
SELECT kind, worker, calls, episodes, seconds, jsonb_array_length(bad) FROM sbfuzz.report ORDER BY kind, worker});
note("fuzz runs (kind|worker|calls|episodes|seconds|unexpected):\n$report");
my $total = $node->safe_psql('postgres', q{SELECT coalesce(sum(calls), 0) FROM sbfuzz.report WHERE kind = 'run'});
cmp_ok($total, '>=', 2000, "the fuzzer made thousands of calls ($total)");
note(
	"outcomes (function: SQLSTATE count ...):\n"
	  . $node->safe_psql(
		'postgres', q{
SELECT split_part(key, ' ', 1) || ': ' || string_agg(split_part(key, ' ', 2) || ' ' || n, ', ' ORDER BY split_part(key, ' ', 2))
  FROM (SELECT s.key, sum(s.value::int) AS n FROM sbfuzz.report, jsonb_each_text(stats) s GROUP BY s.key) t
 GROUP BY split_part(key, ' ', 1) ORDER BY 1}));

# Every function was reached and succeeded at least once.
my $unreached = $node->safe_psql(
	'postgres', q{
SELECT string_agg(f, ', ' ORDER BY f)
  FROM unnest(ARRAY['sandbox_upsert', 'sandbox_get', 'sandbox_delete', 'sandbox_list', 'sandbox_ensure',
                    'sandbox_lock', 'sandbox_try_lock', 'sandbox_lock_id', 'sandbox_lock_holder',
                    'sandbox_renew', 'sandbox_release', 'sandbox_reap', 'sandbox_upsert_release']) f
 WHERE NOT EXISTS (SELECT FROM sbfuzz.report r WHERE (r.stats ->> (f || ' 00000'))::int > 0)});
is($unreached, '', 'every function was called and succeeded at least once');

my $bad = $node->safe_psql(
	'postgres', q{
SELECT count(*) FROM sbfuzz.report, jsonb_array_elements(bad)});
is($bad, '0', 'no call raised an SQLSTATE the contract does not allow, returned a wrong result, or left a lock or setting behind')
  or diag(
	"unexpected outcomes (count, function, mode, SQLSTATE, message; then one call that caused it):\n"
	  . $node->safe_psql(
		'postgres', q{
SELECT count(*) || ' x ' || (j ->> 'fn') || ' [' || (j ->> 'mode') || '] ' || (j ->> 'sqlstate') || ' '
       || left(j ->> 'message', 300) || E'\n    ' || left(min(j ->> 'sql'), 1500)
  FROM sbfuzz.report, jsonb_array_elements(bad) j
 GROUP BY j ->> 'fn', j ->> 'mode', j ->> 'sqlstate', j ->> 'message'
 ORDER BY count(*) DESC LIMIT 40}));

check_aftermath('fuzzer');

# (b) sqlsmith.
SKIP:
{
	my $sqlsmith = `command -v sqlsmith 2>/dev/null`;
	chomp $sqlsmith;
	skip 'sqlsmith is not installed (Debian package sqlsmith, see test/scripts/install-deps.sh): no sqlsmith run', 1
	  unless $sqlsmith;

	# A routine list narrowed to the extension's functions and builtins that
	# make their argument types: sqlsmith reads pg_proc unqualified, so a view
	# of that name first on its search_path is what it sees.  Plus a table of
	# plausible values.  (Neither gives sbfuzz_app any privilege on the
	# extension.)
	$node->safe_psql(
		'postgres', q{
CREATE SCHEMA sbsmith;
CREATE VIEW sbsmith.pg_proc AS
SELECT * FROM pg_catalog.pg_proc p
 WHERE pronamespace = 'sandbox_store'::regnamespace
    OR (proname IN ('repeat', 'chr', 'concat', 'left', 'right', 'md5', 'now', 'clock_timestamp',
                    'gen_random_uuid', 'lower', 'upper', 'substr', 'make_interval', 'justify_interval',
                    'textcat', 'convert_from', 'decode', 'random', 'to_timestamp', 'text', 'int8', 'int4',
                    'interval_pl', 'interval_mi', 'interval_um', 'interval_mul', 'timestamptz_pl_interval',
                    'timestamptz_mi', 'int8pl', 'int8mi', 'int8um', 'int4pl', 'overlay', 'lpad', 'rpad',
                    'btrim', 'translate', 'replace', 'timezone', 'date_trunc', 'age', 'isfinite',
                    'pg_backend_pid', 'starts_with', 'reverse', 'initcap', 'length', 'octet_length', 'abs',
                    'to_char', 'encode', 'sha256', 'count', 'max', 'min', 'string_agg')
        AND NOT EXISTS (SELECT FROM unnest(proargtypes) t WHERE t::regtype::text LIKE 'any%')
        AND prorettype::regtype::text NOT LIKE 'any%');
CREATE TABLE sbsmith.vals (key text, provider text, run_id text, ts timestamptz, iv interval,
                           fence int8, tok uuid, n int4);
INSERT INTO sbsmith.vals
SELECT 'k' || g, 'e2b', 'run-' || g, now() - g * interval '1 hour', g * interval '1 ms', g, gen_random_uuid(), g
  FROM generate_series(1, 20) g;
INSERT INTO sbsmith.vals VALUES
  (repeat('x', 1025), '', NULL, 'infinity', '-1 day', -1, NULL, 0),
  ('smith-busy', 'modal', 'r', '-infinity', '1 mon -31 days', 9223372036854775807, NULL, 2147483647),
  ('smith-claimed', repeat('é', 513), 'r', '2000-01-01 00:00:00+00', '178000000 years', 0, NULL, -1);
GRANT USAGE ON SCHEMA sbsmith TO sbfuzz_app;
GRANT SELECT ON sbsmith.pg_proc, sbsmith.vals TO sbfuzz_app;
});

	# The holder again, so sqlsmith's calls meet held and claimed keys: keys
	# of their own, since a fuzz worker may have left a claim on one of its
	# keys (with any lease the contract accepts), and the role's lock_timeout
	# of 20 ms would then refuse the holder (this failed CI once).
	my $holder2 = $node->background_psql('postgres', extra_params => [ '-U', 'sbfuzz_app' ]);
	my $tok = $holder2->query_safe(
		q{SELECT owner_token FROM sandbox_store.sandbox_ensure('smith-claimed', 'holder', lease => '1 hour')});
	$holder2->query_safe(q{BEGIN; SELECT sandbox_store.sandbox_lock('smith-busy');});

	my $host = $node->host;
	my $port = $node->port;
	my @smith = (
		[
			'focused', 35, $smith_queries,
			"host=$host port=$port dbname=postgres user=sbfuzz_app options='-c search_path=sbsmith,pg_catalog'",
			[ '--exclude-catalog' ]
		],
		[ 'plain', 20, int($smith_queries / 5), "host=$host port=$port dbname=postgres user=sbfuzz_app", [] ]);
	for my $s (@smith)
	{
		my ($name, $limit, $queries, $target, $extra) = @$s;
		my ($out, $err) = ("$tmp/sqlsmith_$name.sql", "$tmp/sqlsmith_$name.err");
		my $t0 = time;
		IPC::Run::run(
			[ 'timeout', $limit, $sqlsmith, "--target=$target", "--seed=$seed", "--max-queries=$queries",
				'--verbose', '--dump-all-queries', @$extra ],
			'<', \undef, '>', $out, '2>', $err);
		my $rc = $? >> 8;
		my $progress = slurp_file($err);
		my $ran = 0;
		$ran += length($_) for grep { /^[.a-zA-Z]+$/ && !/done/ } split /\n/, $progress;
		my $sql = slurp_file($out);
		my $ours = () = $sql =~ /sandbox_store\.sandbox_\w+\(/g;
		ok( ($rc == 0 || $rc == 124) && $progress =~ /Generating indexes\.\.\.done/,
			sprintf("sqlsmith %s ran (exit %d, %.0f s, about %d queries, %d calls of the extension's functions in them)",
				$name, $rc, time - $t0, $ran, $ours))
		  or diag(substr($progress, 0, 3000));
	}

	$holder2->query_safe('COMMIT');
	is($holder2->query_safe(qq{SELECT sandbox_store.sandbox_release('smith-claimed', '$tok')}),
		't', "after sqlsmith, the holder's claim is still its own");
	$holder2->quit;

	check_aftermath('sqlsmith');
}

$node->stop;
done_testing();

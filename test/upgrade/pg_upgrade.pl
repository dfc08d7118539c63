# test/upgrade/pg_upgrade.pl: from PostgreSQL 15 to a newer major, nothing
# of sandbox_store is lost.
#
# make matrix runs it for 18 and 19 with the new server's Perl test modules
# and binaries first in PATH, and
#
#   SB_OLD_BINDIR  bin directory of the 15 server (Debian's)
#   SB_NEW_BINDIR  bin directory of the newer server
#
# sandbox_store must be installed into both.  A 15 cluster holds the
# extension at 1.2 (so that an update is left to do afterwards), records,
# a live claim, a released and an expired one, an advanced fence sequence,
# an app role with the README's grants, and a monitor role with SELECT on
# the claims view.  Then, into two clusters of the newer version:
#
#   pg_upgrade   records, lease rows, the live claim (it still excludes
#                others and its holder still renews it), fences (every new
#                one above every earlier one; a write fenced with a superseded
#                fence is refused), grants and pg_init_privs all as before;
#                ALTER EXTENSION sandbox_store UPDATE then goes to the newest
#                version and the app role works on the upgraded records; a
#                second database, at the newest version, keeps its guard (the event trigger the
#                extension owns) enabled, its records and its checkpoints
#                (the writer goes on appending), and the guard still refuses
#                a column;
#   dump/restore pg_dump (the newer version's) of the 15 database, restored
#                into a fresh database of the newer version: the same checks.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SandboxStoreTest;
use Test::More;

my $old_bindir = $ENV{SB_OLD_BINDIR} or plan skip_all => 'SB_OLD_BINDIR not set';
my $new_bindir = $ENV{SB_NEW_BINDIR} or plan skip_all => 'SB_NEW_BINDIR not set';
(my $old_install = $old_bindir) =~ s{/bin/?$}{};
(my $new_install = $new_bindir) =~ s{/bin/?$}{};

my $old = PostgreSQL::Test::Cluster->new('old', install_path => $old_install);
$old->init;
$old->start;
my ($old_major) = $old->safe_psql('postgres', 'SHOW server_version_num') =~ /^(\d+)\d{4}$/;
is($old_major, '15', 'the old cluster runs PostgreSQL 15');

$old->safe_psql(
	'postgres', q{
CREATE ROLE sb_app LOGIN;
CREATE ROLE sb_monitor LOGIN;
CREATE EXTENSION sandbox_store VERSION '1.2';
GRANT USAGE ON SCHEMA sandbox_store TO sb_app, sb_monitor;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO sb_app;
GRANT SELECT ON sandbox_store.claims TO sb_monitor;
SET ROLE sb_app;
SELECT count(*) FROM generate_series(1, 30) i,
  sandbox_store.sandbox_upsert('key-' || i, 'prov', 'sbx-' || i, 'thread-' || (i % 3),
    latest_snapshot_id => CASE WHEN i % 2 = 0 THEN 'snap-' || i END,
    updated_at => '2026-01-01 00:00:00.123456+00'::timestamptz + i * interval '1 minute');
SELECT sandbox_store.sandbox_upsert(E'odd ''key''; ключ', 'prov', 'sbx-odd', 'thread-odd');
SELECT count(*) FROM generate_series(1, 40) i,
  sandbox_store.sandbox_ensure('many-' || i, 'run-1', lease => '1 hour');
SELECT sandbox_store.sandbox_release('claim-released', owner_token)
  FROM sandbox_store.sandbox_claim('claim-released', '1 hour');
SELECT fence FROM sandbox_store.sandbox_ensure('claim-expired', 'run-1', lease => '1 millisecond');
SELECT fence FROM sandbox_store.sandbox_ensure('claim-live', 'run-1', lease => '1 hour');
});

# A database at 1.4: binary-upgrade mode restores the extension's members one
# by one (the event trigger last), which the guard must let through.
$old->safe_psql('postgres', 'CREATE DATABASE guarded');
$old->safe_psql(
	'guarded', q{
CREATE EXTENSION sandbox_store;
SELECT count(*) FROM generate_series(1, 20) i,
  sandbox_store.sandbox_upsert('g-' || i, 'prov', 'sbx-' || i, 'thread-g');
CREATE TABLE public.cp_writer AS
  SELECT fence, owner_token FROM sandbox_store.checkpoint_acquire_writer('cp-thread', 3600000);
SELECT sandbox_store.checkpoint_append(
  jsonb_build_object('id', 'cp-' || i, 'threadId', 'cp-thread', 'parentCheckpointId', CASE WHEN i > 1 THEN 'cp-' || (i - 1) END,
    'createdAt', 1000 * i, 'reason', 'automatic', 'conversation', jsonb_build_array(repeat('m', 5000)),
    'files', jsonb_build_array(jsonb_build_object('path', 'a', 'kind', 'file', 'size', 1,
      'blobKey', 'sandbox-files/sha256/' || repeat('c', 64))),
    'artifacts', '[]'::jsonb),
  CASE WHEN i > 1 THEN 'cp-' || (i - 1) END, 'cp-thread', owner_token, fence)
  FROM generate_series(1, 3) i, public.cp_writer ORDER BY i;
});
my $guarded_before = $old->safe_psql('guarded', $RECORDS_QUERY);
my $checkpoints_query = q{SELECT sandbox_store.checkpoint_head('cp-thread'),
  (SELECT string_agg(c::text, E'\n') FROM sandbox_store.checkpoint_list('cp-thread') c),
  (SELECT string_agg(key || '=' || refs, ' ') FROM sandbox_store.checkpoint_blob_references())};
my $checkpoints_before = $old->safe_psql('guarded', $checkpoints_query);

# Privileges of the extension's functions and relations, described (OIDs
# differ between clusters): their ACLs, and the initial privileges pg_dump
# compares them with, taken as pg_dump takes them: the pg_init_privs entry,
# else the object's default ACL.  (pg_upgrade does not copy a pg_init_privs
# entry that equals the default ACL: it restores initial privileges by
# replaying grants, and there are none to replay.  pg_dump reads both the
# same way.)  MAINTAIN, which 17 and later add to an owner's privileges on
# tables and views, is left out: 15 has no such thing.
my $privileges_query = q{
WITH members AS (
  SELECT d.classid, d.objid,
         CASE WHEN d.classid = 'pg_proc'::regclass THEN (SELECT proacl FROM pg_proc WHERE oid = d.objid)
              ELSE (SELECT relacl FROM pg_class WHERE oid = d.objid) END AS acl,
         CASE WHEN d.classid = 'pg_proc'::regclass
              THEN acldefault('f', (SELECT proowner FROM pg_proc WHERE oid = d.objid))
              ELSE (SELECT acldefault(CASE relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", relowner)
                      FROM pg_class WHERE oid = d.objid) END AS default_acl
    FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
   WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'sandbox_store'
     AND d.deptype = 'e' AND d.classid IN ('pg_proc'::regclass, 'pg_class'::regclass)
     -- new in 1.3 and 1.4: not in the 1.2 database the test starts from, but
     -- in the restored one (a restore creates the extension at its newest
     -- version)
     AND d.objid IS DISTINCT FROM to_regprocedure('sandbox_store.distribute()')
     AND d.objid IS DISTINCT FROM to_regprocedure('sandbox_store.unsupported_changes()')
     AND d.objid IS DISTINCT FROM to_regprocedure('sandbox_store.guard()')
     AND d.objid IS DISTINCT FROM
         to_regprocedure('sandbox_store.sandbox_upsert_release(text, bigint, text, text, text, text, text, timestamptz)')
     AND d.objid IS DISTINCT FROM to_regclass('sandbox_store.key_locks')
     -- and the rest of 1.4: edition(), the checkpoint store and its
     -- helpers; and 1.5's runs and run logs
     AND NOT (d.classid = 'pg_proc'::regclass
              AND (SELECT proname FROM pg_proc WHERE oid = d.objid) ~ '^(edition$|checkpoint_|run_|_)')
     AND NOT (d.classid = 'pg_class'::regclass
              AND (SELECT relname FROM pg_class WHERE oid = d.objid) ~ '^(checkpoint|runs$|run_)')),
acls AS (
  SELECT 'acl' AS source, m.classid, m.objid, coalesce(m.acl, m.default_acl) AS acl FROM members m
  UNION ALL
  SELECT 'initprivs', m.classid, m.objid, coalesce(ip.initprivs, m.default_acl)
    FROM members m LEFT JOIN pg_init_privs ip
      ON ip.classoid = m.classid AND ip.objoid = m.objid AND ip.objsubid = 0
  UNION ALL
  SELECT 'acl', 'pg_namespace'::regclass, n.oid, n.nspacl
    FROM pg_namespace n WHERE n.nspname = 'sandbox_store')
SELECT string_agg(line, E'\n' ORDER BY line) FROM (
  SELECT format('%s %s %s %s %s', a.source, pg_describe_object(a.classid, a.objid, 0),
                x.grantee::regrole, x.privilege_type, x.is_grantable) AS line
    FROM acls a CROSS JOIN LATERAL aclexplode(a.acl) x
   WHERE x.privilege_type <> 'MAINTAIN') s};

my $records_before = $old->safe_psql('postgres', $RECORDS_QUERY);
my $leases_before = $old->safe_psql('postgres', $LEASES_QUERY);
my $privileges_before = $old->safe_psql('postgres', $privileges_query);
my $max_fence_before = $old->safe_psql('postgres', 'SELECT max(fence) FROM sandbox_store.leases');
my $seq_before = $old->safe_psql('postgres', 'SELECT last_value FROM sandbox_store.fence_seq');
my ($live_token, $live_fence) = split /\|/,
  $old->safe_psql('postgres',
	"SELECT owner_token, fence FROM sandbox_store.leases WHERE key = 'claim-live'");
my $expired_fence =
  $old->safe_psql('postgres', "SELECT fence FROM sandbox_store.leases WHERE key = 'claim-expired'");
cmp_ok($max_fence_before, '>=', 43, "fences were handed out on 15 (newest $max_fence_before)");
like($privileges_before, qr/initprivs/, 'the privilege listing includes pg_init_privs');

# The dump for the second half, taken with the newer version's pg_dump.
my $dump = PostgreSQL::Test::Utils::tempdir() . '/from15.dump';
command_ok([ "$new_bindir/pg_dump", '-Fc', '-f', $dump, '-d', $old->connstr('postgres') ],
	'pg_dump (newer version) of the 15 database');

# PostgreSQL 15.20 (Debian's 15.20-0+deb12u1) keeps an attribute option,
# pg_attver, on every column of every table, which it sets again on every
# ALTER (RESET does not remove it).  18.6 and 19beta1 do not know it: in
# binary-upgrade mode pg_dump carries attribute options over, so pg_upgrade's
# schema restore fails at the first table ('unrecognized parameter
# "pg_attver"'), for any database, with or without sandbox_store.  Until the
# newer majors accept it, the way through is to clear the option in the old
# cluster right before pg_upgrade (a superuser's UPDATE of pg_attribute,
# nothing else changes), as the README's upgrading section says.
for my $db ('postgres', 'guarded')
{
	my $attver = $old->safe_psql($db,
		q{SELECT count(*) FROM pg_attribute WHERE attoptions::text LIKE '%pg_attver=%'});
	note "columns with pg_attver in database $db of the 15 cluster: $attver";
	$old->safe_psql(
		$db, q{
UPDATE pg_catalog.pg_attribute
   SET attoptions = (SELECT pg_catalog.array_agg(o) FROM pg_catalog.unnest(attoptions) o
                      WHERE o NOT LIKE 'pg\_attver=%')
 WHERE attoptions::text LIKE '%pg\_attver=%'}) if $attver > 0;
}
$old->stop;

# Compare a cluster of the newer version with what the 15 one held.
sub check_carried_over
{
	my ($node, $how) = @_;
	is($node->safe_psql('postgres', $RECORDS_QUERY), $records_before, "$how: every record, to the microsecond");
	is($node->safe_psql('postgres', $LEASES_QUERY), $leases_before, "$how: every lease row (fence, token, expiry)");
	is($node->safe_psql('postgres', $privileges_query), $privileges_before,
		"$how: grants and pg_init_privs as on 15");
	is($node->safe_psql('postgres', 'SELECT last_value FROM sandbox_store.fence_seq'),
		$seq_before, "$how: the fence sequence where it was");
	is( $node->safe_psql('postgres', "SET ROLE sb_monitor; SELECT count(*) FROM sandbox_store.claims"),
		'41', "$how: the 41 live claims are still live (the monitor role still reads them)");
	is( sqlstate_of(
			$node,
			"SET ROLE sb_app; SELECT * FROM sandbox_store.sandbox_claim('claim-live', '1 minute', wait => '0')"),
		'55P03',
		"$how: the live claim still excludes a new claim");
	like( $node->safe_psql('postgres',
			"SET ROLE sb_app; SELECT sandbox_store.sandbox_renew('claim-live', '$live_token', '1 hour') > now()"),
		qr/^t$/,
		"$how: the live claim's holder still renews it");
	my $fences = $node->safe_psql(
		'postgres', q{
SET ROLE sb_app;
SELECT string_agg((SELECT fence FROM sandbox_store.sandbox_ensure(k, 'run-2', lease => '1 minute'))::text, ','
                  ORDER BY k)
  FROM unnest(ARRAY['claim-released', 'claim-expired', 'never-claimed', 'key-1']) k});
	my @new = split /,/, $fences;
	is(scalar(@new), 4, "$how: four new claims");
	ok((!grep { $_ <= $max_fence_before } @new),
		"$how: every new fence ($fences) is above every fence from 15 (newest $max_fence_before)");
	is( sqlstate_of(
			$node,
			"SET ROLE sb_app; SELECT sandbox_store.sandbox_upsert('claim-expired', 'p', 's', 't', fence => $expired_fence)"
		),
		'SB001',
		"$how: a write fenced with a superseded fence from 15 is refused");
	is( $node->safe_psql('postgres',
			"SET ROLE sb_app; SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert('claim-live', 'p', 'sbx-live', 't', fence => $live_fence)"
		),
		'sbx-live',
		"$how: the live claim's fence from 15 still writes");
}

# pg_upgrade into a new cluster of the newer version.  Data checksums, the
# default from 18 on, must match the old cluster's (off).
my $new = PostgreSQL::Test::Cluster->new('new', install_path => $new_install);
my ($new_major) = `$new_bindir/pg_config --version` =~ /PostgreSQL (\d+)/;
$new->init(extra => $new_major >= 18 ? ['--no-data-checksums'] : []);
my $workdir = PostgreSQL::Test::Utils::tempdir();
chdir $workdir;
command_ok(
	[
		"$new_bindir/pg_upgrade", '--no-sync',
		'-b', $old_bindir, '-B', $new_bindir,
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-p', $old->port, '-P', $new->port,
		'-s', $new->host, '--copy'
	],
	"pg_upgrade from 15 to $new_major");
$new->start;
is($new->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'"),
	'1.2', 'pg_upgrade keeps the extension at its version (1.2)');
check_carried_over($new, "pg_upgrade to $new_major");

my $newest = $new->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'sandbox_store'");
$new->safe_psql('postgres', 'ALTER EXTENSION sandbox_store UPDATE');
is($new->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'"),
	$newest, "ALTER EXTENSION UPDATE after pg_upgrade goes to the newest version, $newest");
is( $new->safe_psql('postgres',
		"SET ROLE sb_app; SELECT action || ' ' || provider_sandbox_id FROM sandbox_store.sandbox_ensure('key-7', 'run-3')"),
	'resume sbx-7',
	'after the update the app role resumes a record written on 15');
is( $new->safe_psql('postgres',
		"SET ROLE sb_app; SELECT count(*) FROM sandbox_store.sandbox_list('thread-1')"),
	'10', 'sandbox_list reads the records written on 15');
is($new->safe_psql('guarded', $RECORDS_QUERY), $guarded_before,
	'pg_upgrade keeps the records of the 1.4 database');
is($new->safe_psql('guarded', $checkpoints_query), $checkpoints_before,
	'pg_upgrade keeps the checkpoints, their head and blob references');
is( $new->safe_psql('guarded', q{
SELECT sandbox_store.checkpoint_append(jsonb_build_object('id', 'cp-4', 'threadId', 'cp-thread',
    'parentCheckpointId', 'cp-3', 'createdAt', 4000, 'reason', 'automatic', 'conversation', '[]'::jsonb,
    'files', '[]'::jsonb, 'artifacts', '[]'::jsonb), 'cp-3', 'cp-thread', owner_token, fence)
  FROM public.cp_writer}),
	'cp-4', 'after pg_upgrade the checkpoint writer goes on appending');
is( $new->safe_psql('guarded',
		q{SELECT extversion || ' ' || evtenabled::text FROM pg_extension, pg_event_trigger
		   WHERE extname = 'sandbox_store' AND evtname = 'sandbox_store_guard'}),
	"$newest O", 'the database made at the newest version keeps its guard, enabled');
my (undef, undef, $guard_err) = $new->psql('guarded',
	"\\set VERBOSITY verbose\nALTER TABLE sandbox_store.instances ADD COLUMN region text");
like($guard_err, qr/ERROR:\s+0A000:/, 'after pg_upgrade the guard still refuses a column');
$new->stop;

# A dump of the 15 database restored into a fresh cluster of the newer
# version (the restore creates the extension at its newest version, 1.4).
my $restored = PostgreSQL::Test::Cluster->new('restored', install_path => $new_install);
$restored->init;
$restored->start;
$restored->safe_psql('postgres', 'CREATE ROLE sb_app LOGIN; CREATE ROLE sb_monitor LOGIN');
command_ok([ "$new_bindir/pg_restore", '--exit-on-error', '-d', $restored->connstr('postgres'), $dump ],
	"pg_restore of the 15 dump into $new_major");
check_carried_over($restored, "dump from 15 restored into $new_major");
$restored->stop;

done_testing();

# 016_pg_tle_registration.pl
#
# The pg_tle registration script (sandbox_store-VERSION-pg_tle.sql of make
# sql-edition) refuses, before it changes anything, and says what to do:
#
#   * in a database where pg_tle is not created (pg_tle is an extension of
#     each database: another database's does not count): 42704, with the
#     hint to run CREATE EXTENSION pg_tle in this database;
#   * run by a role without the privileges of pgtle_admin: 42501, naming
#     pgtle_admin and the role;
#
# and registers the SQL edition when both hold, so that CREATE EXTENSION
# sandbox_store works.  It runs where the suites run the SQL edition
# through pg_tle (SB_EDITION=pg_tle, set by test/scripts/with-sql-edition.sh,
# whose server has pg_tle); elsewhere it is skipped.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

plan skip_all => 'needs a server with pg_tle: test/scripts/with-sql-edition.sh pg_tle make tapcheck'
  unless ($ENV{SB_EDITION} // 'c') eq 'pg_tle';
my $script = $ENV{SB_PG_TLE_SCRIPT};
BAIL_OUT('no registration script in SB_PG_TLE_SCRIPT') unless defined $script && -f $script;

my $node = PostgreSQL::Test::Cluster->new('registration');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_tle'");
$node->start;

# pg_tle is created in database postgres only, so the role pgtle_admin
# exists; database other has no pg_tle.  admin has pgtle_admin, nobody
# does not; both may create in both databases.
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_tle;
CREATE ROLE admin LOGIN;
GRANT pgtle_admin TO admin;
CREATE ROLE nobody LOGIN;
GRANT CREATE ON DATABASE postgres TO admin, nobody;
CREATE DATABASE other OWNER admin;
GRANT CREATE ON DATABASE other TO nobody;
});

# register(DB, ROLE): run the script as psql -f does, stopping at the first
# error; returns psql's exit code and its stderr (verbose: with SQLSTATE).
sub register
{
	my ($db, $role) = @_;
	my ($rc, $out, $err) = $node->psql($db, undef,
		extra_params => [ '-U', $role, '-v', 'ON_ERROR_STOP=1', '-v', 'VERBOSITY=verbose', '-f', $script ]);
	return ($rc, $err);
}

# What pg_tle has registered in database postgres.
sub registered
{
	return $node->safe_psql('postgres',
		q{SELECT count(*) FROM pgtle.available_extensions() WHERE name = 'sandbox_store'});
}

# A database without pg_tle.
my ($rc, $err) = register('other', 'admin');
isnt($rc, 0, 'no pg_tle in the database: the script fails');
like($err, qr/ERROR:  42704: pg_tle is not installed in database "other"/, 'no pg_tle: 42704, naming the database');
like($err, qr/DETAIL:  .*pg_tle is created per database/, 'no pg_tle: the detail says pg_tle is per database');
like($err, qr/HINT:  Run CREATE EXTENSION pg_tle in this database/, 'no pg_tle: the hint says what to run, and where');
unlike($err, qr/schema "pgtle" does not exist/, 'no pg_tle: not PostgreSQL\'s own error');
is($node->safe_psql('other', q{SELECT count(*) FROM pg_namespace WHERE nspname IN ('pgtle', 'sandbox_store')}),
	'0', 'no pg_tle: nothing is made');

# A role without pgtle_admin, in a database with pg_tle.
($rc, $err) = register('postgres', 'nobody');
isnt($rc, 0, 'without pgtle_admin: the script fails');
like($err, qr/ERROR:  42501: permission denied to register sandbox_store with pg_tle/,
	'without pgtle_admin: 42501');
like($err, qr/DETAIL:  .*pgtle_admin.*role "nobody"|DETAIL:  .*role "nobody".*pgtle_admin/,
	'without pgtle_admin: the detail names pgtle_admin and the role');
like($err, qr/HINT:  .*pgtle_admin/, 'without pgtle_admin: the hint names pgtle_admin');
unlike($err, qr/permission denied for function/, 'without pgtle_admin: not pg_tle\'s own error');
is(registered(), '0', 'without pgtle_admin: nothing is registered');

# The same role through a role that has pgtle_admin: registered, and
# CREATE EXTENSION works.
$node->safe_psql('postgres', 'GRANT admin TO nobody');
($rc, $err) = register('postgres', 'nobody');
is($rc, 0, 'with pgtle_admin (inherited) in a database with pg_tle: registered') or diag($err);
is(registered(), '1', 'pg_tle lists sandbox_store');
$node->safe_psql('postgres', 'SET ROLE nobody; CREATE EXTENSION sandbox_store');
is($node->safe_psql('postgres', 'SELECT edition FROM sandbox_store.edition()'),
	'pg_tle', 'CREATE EXTENSION sandbox_store after the registration');

$node->stop;
done_testing();

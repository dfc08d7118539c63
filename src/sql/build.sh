#!/bin/sh
# build.sh EDITION VERSION: write one install script of sandbox_store to
# stdout, put together from the parts in src/sql/parts (each written once):
#
#   expand  (build.sh expand FILE.in VERSION [c|sql]) an update script of
#           the C edition (c, the default) or the SQL edition (sql): FILE.in
#           with each line "-- @include NAME" replaced by the part NAME and
#           each line "-- @replace NAME" by the part NAME with its CREATE
#           FUNCTION made CREATE OR REPLACE FUNCTION (a function part grants
#           nothing, so making it again keeps the grants an admin gave)
#   plain-update  (build.sh plain-update FILE.in FROM TO) the SQL edition's
#           update script FILE.in as a plain script: for a database that has
#           the plain script of FROM, run with psql -f
#
#   c       the C edition's sandbox_store--VERSION.sql, run by CREATE EXTENSION
#   plain   the SQL edition as a plain script, run with psql -f
#   pg_tle  the SQL edition as a pg_tle registration: after it,
#           CREATE EXTENSION sandbox_store and ALTER EXTENSION ... UPDATE work
#
# The parts are in three places: parts/shared (both editions), parts/c-edition
# and parts/sql-edition (one edition's only).  A part NAME is parts/NAME.sql,
# a directory parts/NAME (shared/helpers, shared/checkpoints, shared/runs:
# one function per file), whose *.sql files are taken in name order (as
# bytes: helpers, whose names start with an underscore, come first), or sql-edition/functions: the
# SQL edition's functions, parts/sql-edition/GROUP.FUNCTION.sql, in the
# order of the list sql_functions below.  The checks a script of the SQL
# edition runs before it changes anything are parts too,
# parts/sql-edition/preflight/SCRIPT.sql (preflight, below).  The
# conventions every function part follows, and the map of the SQL edition's
# groups to the C files, are in parts/README.md.
#
# The editions share the schema, the comments, distribute() and the grants;
# each has its own functions (c-edition/functions.sql, sql-edition/).  The C
# edition also has the guard, the event trigger and its function (an event
# trigger needs a superuser); both have unsupported_changes().  The key
# lock's class in pg_locks (@KEY_LOCK_CLASS@, in the view key_locks) differs:
# the C edition's own objsubid, SB_LOCK_CLASS of src/sandbox_store.h (read
# from there, so it is written once), pg_advisory_xact_lock(bigint)'s 1.
# Both editions' limit of a record's text values and of a run id
# (@MAX_TEXT_BYTES@) is SB_MAX_TEXT_BYTES of src/sandbox_store.h, read
# from there too; @VERSION@ is the version built.
# The SQL edition's update scripts are
# src/sql/sql-edition/sandbox_store--FROM--TO.sql.in (those of released
# versions kept as built, src/sql/released/sql-edition/): the pg_tle
# registration carries them, and each is also a dist file of its own for the
# plain script (plain-update).
set -eu

edition=$1
version=$2
parts=$(dirname "$0")/parts
# shellcheck disable=SC2016  # a dollar-quote tag of SQL, not an expansion
tag='$_sandbox_store_$'
c_class=$(sed -n 's/^#define SB_LOCK_CLASS \(0x[0-9A-Fa-f]*\)$/\1/p' "$(dirname "$0")/../sandbox_store.h")
if [ -z "$c_class" ]; then
	echo "build.sh: no #define SB_LOCK_CLASS 0x... in src/sandbox_store.h" >&2
	exit 1
fi
c_class=$((c_class))
# The limit of a record's text values and of a run id, 1..N bytes
# (@MAX_TEXT_BYTES@ in the parts): SB_MAX_TEXT_BYTES of src/sandbox_store.h,
# read from there as the lock class is.  The checkpoint store's limits (a
# checkpoint id, a blob key: 1024; a thread id: 1000) are its own, written
# in its parts as checkpoint_check.c writes them.
max_text=$(sed -n 's/^#define SB_MAX_TEXT_BYTES \([0-9][0-9]*\)$/\1/p' "$(dirname "$0")/../sandbox_store.h")
if [ -z "$max_text" ]; then
	echo "build.sh: no #define SB_MAX_TEXT_BYTES N in src/sandbox_store.h" >&2
	exit 1
fi

# preflight NAME [FROM]: a script's checks before it changes anything, the
# DO block parts/sql-edition/preflight/NAME.sql with @VERSION@ (and @FROM@)
# put in.
preflight() {
	sed -e "s/@VERSION@/$version/g" -e "s/@FROM@/${2:-}/g" "$parts/sql-edition/preflight/$1.sql"
}

# The SQL edition's functions (part sql-edition/functions), each
# parts/sql-edition/GROUP.FUNCTION.sql, GROUP named after the C file that
# holds the same entry points (parts/README.md), in the order the install
# script makes them: a LANGUAGE sql function after those it calls
# (keys._try_writer_lock after locks._lock_id); PL/pgSQL bodies are checked
# only when they run.
# The order is the install script's text: changing it changes the script.
# Two of the directory's files are parts of their own, made elsewhere in the
# script: checkpoint_check._checkpoint_check and run_log.run_log_append.
sql_functions="
args._bad_text args._check_fence_arg args._check_interval args._check_record_args
args._cutoff args._interval_parts sandbox_store._max_checkpoint_bytes args._null_arg
args._refuse_on_standby args._snapshot_isolation
claims._changed claims._claim_lost keys._draw_claim_fence fences._draw_fence
fences._keep_fence claims._probe_hidden claims._retire
keys.sandbox_claim keys.sandbox_release keys.sandbox_renew
ensure.sandbox_ensure
locks._lock locks._lock_id take._lock_timeout_deadline take._lock_within
take._not_obtained take._take take._try_take keys._try_writer_lock
keys.sandbox_lock locks.sandbox_lock_holder locks.sandbox_lock_id keys.sandbox_try_lock
reap._reap_candidates reap.sandbox_reap
store._check_fence store._current_record store._upsert store.sandbox_delete
store.sandbox_get store.sandbox_list store.sandbox_upsert store.sandbox_upsert_release
"
# Every file of parts/sql-edition is taken, and each once.
sql_edition_files=$(for f in $sql_functions checkpoint_check._checkpoint_check run_log.run_log_append; do echo "$f.sql"; done | LC_ALL=C sort)
if [ "$sql_edition_files" != "$(cd "$parts/sql-edition" && find . -maxdepth 1 -type f -name '*.sql' | sed 's|^\./||' | LC_ALL=C sort)" ]; then
	echo "build.sh: the files of parts/sql-edition are not those of sql_functions (and checkpoint_check._checkpoint_check, run_log.run_log_append), each once" >&2
	exit 1
fi

# part NAME: the text of the part NAME (a file, or a directory's files in
# name order, a blank line after each).  One part is made, not written:
# sql-edition/run_log.run_log_append-3 (below).
part() {
	if [ "$1" = sql-edition/run_log.run_log_append-3 ]; then
		append3
	elif [ "$1" = sql-edition/functions ]; then
		for f in $sql_functions; do
			cat "$parts/sql-edition/$f.sql"
			echo
		done
	elif [ -d "$parts/$1" ]; then
		for f in $(find "$parts/$1" -maxdepth 1 -type f -name '*.sql' | LC_ALL=C sort); do
			cat "$f"
			echo
		done
	elif [ -f "$parts/$1.sql" ]; then
		cat "$parts/$1.sql"
	else
		echo "build.sh: no part $1 (parts/$1.sql or the directory parts/$1)" >&2
		return 1
	fi
}

# append3: the SQL edition's run_log_append without notify (its only form
# before 1.7.0), made from the one with notify
# (sql-edition/run_log.run_log_append.sql) with notify true written in: the
# same body, no argument check of notify, no wrapper's call in between.
# Each of the four changes must apply exactly once, or the build fails.
append3() {
	awk '
		/^-- The SQL edition.s run_log_append \(the C edition.s is C/ && !h {
			print "-- The SQL edition'"'"'s run_log_append without notify (before 1.7.0 its"
			print "-- only form), made by src/sql/build.sh from"
			print "-- sql-edition/run_log.run_log_append.sql: the form with notify, with"
			print "-- notify true (a watched log'"'"'s append notifies at its commit).  Its"
			print "-- comment is in shared/comments.sql."
			h = 1; skip = 1; next
		}
		skip && /^--/ { next }
		{ skip = 0 }
		/^    epoch pg_catalog.int8,$/ { e = 1; next }
		e == 1 && /^    notify pg_catalog.bool\)$/ { print "    epoch pg_catalog.int8 DEFAULT NULL)"; e = 2; next }
		/^    IF run_log_append.notify IS NULL THEN$/ { drop = 1; n++; next }
		drop { if ($0 ~ /^    END IF;$/) drop = 0; next }
		/^    IF v_watched AND run_log_append.notify THEN$/ { print "    IF v_watched THEN"; w++; next }
		{ print }
		END { if (!h || e != 2 || n != 1 || w != 1) { print "build.sh: sql-edition/run_log.run_log_append.sql is not as append3 expects" > "/dev/stderr"; exit 1 } }
	' "$parts/sql-edition/run_log.run_log_append.sql"
}

# The extension's objects, for the edition's functions.
body() {
	case $1 in
	c) class=$c_class files="shared/schema shared/internal-schema shared/key-locks shared/edition
		c-edition/functions c-edition/internal
		shared/helpers shared/checkpoint-tables shared/checkpoint-ids-writers shared/claims-view shared/checkpoints shared/run-tables shared/runs
		shared/comments shared/distribute shared/guard-changes c-edition/guard c-edition/event-trigger
		shared/grants" ;;
	*) class=1 files="shared/schema shared/internal-schema shared/key-locks shared/edition
		sql-edition/functions sql-edition/checkpoint_check._checkpoint_check
		shared/helpers shared/checkpoint-tables shared/checkpoint-ids-writers shared/claims-view shared/checkpoints shared/run-tables shared/runs
		sql-edition/run_log.run_log_append sql-edition/run_log.run_log_append-3
		shared/comments shared/distribute shared/guard-changes
		shared/grants" ;;
	esac
	for f in $files; do
		part "$f"
		echo
	done | sed -e "s/@KEY_LOCK_CLASS@/$class/g" -e "s/@MAX_TEXT_BYTES@/$max_text/g" -e "s/@VERSION@/$version/g"
}

# expand FILE.in VERSION CLASS: FILE.in with its @include and @replace lines
# put in.
expand() {
	while IFS= read -r line; do
		case $line in
		"-- @include "*) part "${line#-- @include }" ;;
		"-- @replace "*) part "${line#-- @replace }" | sed -e 's/^CREATE FUNCTION /CREATE OR REPLACE FUNCTION /' ;;
		*) printf '%s\n' "$line" ;;
		esac
	done <"$1" | sed -e "s/@KEY_LOCK_CLASS@/$3/g" -e "s/@MAX_TEXT_BYTES@/$max_text/g" -e "s/@VERSION@/$2/g"
}

case $edition in
expand)
	# build.sh expand FILE.in VERSION [c|sql]
	case ${4:-c} in
	c) expand "$2" "$3" "$c_class" ;;
	*) expand "$2" "$3" 1 ;;
	esac
	;;
plain-update)
	# build.sh plain-update FILE.in FROM TO
	in=$2
	from=$3
	version=$4
	cat <<EOF
-- sandbox_store: the SQL edition's plain script, from $from to $version.
--
-- For a database that has the plain script of sandbox_store $from: run it
-- as the role that owns schema sandbox_store,
--
--     psql -v ON_ERROR_STOP=1 -f sandbox_store--$from--$version.sql
--
-- in one transaction: if anything fails, nothing changes.  A database that
-- has sandbox_store as an extension (the C edition, or the SQL edition
-- through pg_tle) is updated with ALTER EXTENSION sandbox_store UPDATE.

BEGIN;
SET LOCAL search_path = pg_catalog, pg_temp;
SET LOCAL client_min_messages = warning;

EOF
	preflight plain-update "$from"
	cat <<EOF

EOF
	expand "$in" "$version" 1 | sed -e '/pg_extension_config_dump/d' -e '/^\\echo /d'
	echo "COMMIT;"
	;;
c)
	cat <<EOF
/* sandbox_store--$version.sql: the whole extension at version $version, in one file */
/* Generated by src/sql/build.sh from src/sql/parts: edit those. */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\\echo Use "CREATE EXTENSION sandbox_store" to load this file. \\quit

-- A fresh install runs only this script; databases at an older version
-- reach $version through the update scripts, and the regression test upgrade
-- proves both give the same catalog, grants and initial privileges.  Every
-- name is schema-qualified: the script is safe whatever the installing
-- role's search_path holds.  Nothing here writes to pg_catalog.

EOF
	body c
	;;
plain)
	cat <<EOF
-- sandbox_store $version, SQL edition, plain script.
--
-- For a PostgreSQL server that cannot load the C library and has no pg_tle.
-- Run it once per database, as the role that is to own sandbox_store (it
-- needs CREATE on the database, not superuser):
--
--     psql -v ON_ERROR_STOP=1 -f sandbox_store-$version.sql
--
-- It makes the schema sandbox_store and everything in it, in one
-- transaction: if anything fails, nothing is left behind.
-- SELECT * FROM sandbox_store.edition() says what is installed.

BEGIN;
SET LOCAL search_path = pg_catalog, pg_temp;
SET LOCAL client_min_messages = warning;

-- One edition per database: refuse when sandbox_store is installed as an
-- extension (the C edition, or the SQL edition through pg_tle).
EOF
	preflight plain
	cat <<EOF

CREATE SCHEMA IF NOT EXISTS sandbox_store;

EOF
	body sql | sed -e '/pg_extension_config_dump/d'
	echo "COMMIT;"
	;;
pg_tle)
	if body sql | grep -qF "$tag"; then
		echo "build.sh: the script contains $tag" >&2
		exit 1
	fi
	cat <<EOF
-- sandbox_store $version, SQL edition, registered with pg_tle.
--
-- For a PostgreSQL server that cannot load the C library but has pg_tle
-- (Amazon RDS and Aurora, Supabase).  Run it once per database as a role
-- with pgtle_admin (it needs no superuser), in a database where pg_tle is
-- created (CREATE EXTENSION pg_tle, per database), then CREATE EXTENSION:
--
--     psql -v ON_ERROR_STOP=1 -f sandbox_store-$version-pg_tle.sql
--     psql -c 'CREATE EXTENSION sandbox_store'
--
-- It registers version $version (and the update paths to it, when there are
-- any) and makes $version the default, so on a database that has an older
-- version, ALTER EXTENSION sandbox_store UPDATE moves to it.  Running it
-- again changes nothing.

BEGIN;
SET LOCAL search_path = pg_catalog, pg_temp;

-- pg_tle is an extension of each database, and registering needs the
-- privileges of pgtle_admin: say so before anything else fails for want of
-- either.
EOF
	preflight pg_tle-admin
	cat <<EOF

-- One edition per server: pg_tle cannot register a name the C edition's
-- control file already uses.
EOF
	preflight pg_tle-edition
	cat <<EOF

DO \$_register_\$
DECLARE
    script pg_catalog.text := $tag
EOF
	body sql
	cat <<EOF
$tag;
BEGIN
    IF NOT EXISTS (SELECT FROM pgtle.available_extensions() a WHERE a.name OPERATOR(pg_catalog.=) 'sandbox_store') THEN
        PERFORM pgtle.install_extension('sandbox_store', '$version',
            'durable sandbox instance store and per-key lock for AI agent servers (SQL edition)',
            script, NULL, 'sandbox_store');
    ELSIF NOT EXISTS (SELECT FROM pgtle.available_extension_versions() v
                       WHERE v.name OPERATOR(pg_catalog.=) 'sandbox_store' AND v.version OPERATOR(pg_catalog.=) '$version') THEN
        PERFORM pgtle.install_extension_version_sql('sandbox_store', '$version', script);
    END IF;
END
\$_register_\$;
EOF
	# The update paths (none before the first version that has one): those
	# of released versions as built (.sql), the newest from its template
	# (.sql.in), in the order of the versions they start from.
	for up in $(find "$(dirname "$0")/released/sql-edition" "$(dirname "$0")/sql-edition" -maxdepth 1 \
		-name 'sandbox_store--*--*.sql*' | awk -F/ '{ print $NF, $0 }' | sort -V | cut -d' ' -f2); do
		name=$(basename "$up")
		name=${name%.in}
		name=${name%.sql}
		from=${name#sandbox_store--}
		from=${from%%--*}
		to=${name##*--}
		cat <<EOF
DO \$_update_\$
BEGIN
    IF NOT EXISTS (SELECT FROM pgtle.extension_update_paths('sandbox_store') u
                    WHERE u.source OPERATOR(pg_catalog.=) '$from' AND u.target OPERATOR(pg_catalog.=) '$to'
                      AND u.path IS NOT NULL) THEN
        PERFORM pgtle.install_update_path('sandbox_store', '$from', '$to', $tag
EOF
		expand "$up" "$to" 1 | sed -e '/^\\echo /d'
		cat <<EOF
$tag);
    END IF;
END
\$_update_\$;
EOF
	done
	cat <<EOF
SELECT pgtle.set_default_version('sandbox_store', '$version');
COMMIT;
EOF
	;;
*)
	echo "usage: build.sh c|plain|pg_tle VERSION, build.sh expand FILE.in VERSION [c|sql], build.sh plain-update FILE.in FROM TO" >&2
	exit 2
	;;
esac

#!/usr/bin/env bash
# bench/checkpoints.sh: the checkpoint store beside a bare table (phase
# checkpoints of bench/run.sh, or make bench-checkpoints; BENCHMARKS.md,
# "Checkpoints").
#
# A realistic checkpoint (bench/checkpoint-template.sql: 200 conversation
# messages of about 500 bytes each and 50 file entries, about 110 kB of
# JSON that TOAST compresses).  Each
# call runs in three databases side by side: the C edition (the extension,
# database bench_cp), the SQL edition (the plain script built from this
# tree, database bench_cp_sql) and the SQL an app would write by hand for
# the same guarantee, on tables of the same shape and index (in bench_cp:
# bare, bare_heads, bare_writers): the writer's lease row locked and
# checked (token, fence, unexpired), the blob keys the checkpoint points to
# stored with it (what checkpoint_blob_references reads), the head moved by
# a compare-and-set -- everything but the checks of the checkpoint's shape:
#
#   append       checkpoint_append, the head read inside the same statement
#                (one round trip, one statement)
#                            vs  by hand, one statement: the writer checked,
#                the row inserted on the current head and the head's
#                compare-and-set (UPDATE bare_heads ... WHERE head IS NOT
#                DISTINCT FROM the expected)
#   append_read  the head read first, in a statement of its own
#                (checkpoint_head, \gset), then checkpoint_append on it (two
#                round trips, autocommit: what a client does)
#                            vs  by hand the same way: SELECT head \gset, then
#                one statement that checks the writer, inserts the row on
#                :head and moves the head with UPDATE bare_heads SET head =
#                new WHERE thread = ... AND head = :head (raises when no row
#                moved: the writer or the CAS lost)
#   insert       checkpoint_append  vs  the INSERT of the same row alone (its
#                blob keys computed once, before the runs): the floor
#   get          checkpoint_get of a random stored checkpoint
#                                   vs  SELECT by primary key
#   list         checkpoint_list of a thread of 20 checkpoints (threads only
#                read)              vs  SELECT ... ORDER BY
#   writer       checkpoint_acquire_writer + checkpoint_release_writer
#                (the lease cycle, two statements, two commits; C edition)
#
# Each client works on a thread of its own (an append needs the thread's
# writer and head: a thread has one writer); every appended thread has a
# head before the runs start.  The three sides run alternately (the order
# rotated), BENCH_CP_REPEATS times, BENCH_CP_SECONDS each, at each client
# count; medians of tps and mean latency are reported with C / by-hand and
# SQL / by-hand.  After the runs every appended thread is checked to be one
# chain (no two checkpoints of a thread on one parent; the head is the end).
#
# glibc's allocator weighs on every side of this phase: a statement that
# builds a 109 kB value may grow the backend's heap and give it back to the
# kernel at its end, two brk calls and the pages faulted in again every
# call, or not, depending on whether that backend ever freed a block of more
# than 128 kB that glibc had mapped with mmap (glibc then raises its
# thresholds; docs/operations.md, "Capacity").  Fresh pgbench backends
# fall on either side by chance, so the ratios move with it.  GLIBC_TUNABLES
# in the environment of with-cluster.sh reaches its server's backends; with
# the thresholds fixed (e.g. glibc.malloc.trim_threshold=33554432:
# glibc.malloc.mmap_threshold=33554432) the runs measure the statements.
# The header reports the server's GLIBC_TUNABLES (a backend's environment,
# read from /proc; "unknown" where that cannot be read).
#
# The setup knobs the phase reports in its header (the append's ratio
# depends on what a commit costs; BENCHMARKS.md, "Checkpoints", shows how):
#   BENCH_CP_CLIENTS ("1 8")      client counts
#   BENCH_CP_SECONDS (5) / BENCH_CP_REPEATS (3)
#   BENCH_CP_WORKLOADS ("append append_read insert get list")
#   BENCH_CP_SYNC ("")            synchronous_commit of the runs (PGOPTIONS);
#                                 empty: the server's
#   BENCH_CP_PROTOCOL (prepared)  pgbench -M: prepared, simple or extended
#   BENCH_CP_BEFORE ("")          a version of the C edition (e.g. 1.8.0) to
#                                 run beside this one: a fourth side, the
#                                 extension created at that version in
#                                 database bench_cp_before (the same library),
#                                 reported as C / before
#   BENCH_SMOKE (0)               1: 2 clients, 20 transactions per client,
#                                 one round: checks the harness (and the
#                                 chains), measures nothing
#
# Runs against the server in PGHOST/PGPORT/PGUSER (a superuser, with
# sandbox_store installed); creates and drops databases bench_cp and
# bench_cp_sql (and bench_cp_before).  Writes BENCH_OUT/checkpoints.md and checkpoints.tsv
# (default bench/out/).
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=bench-checkpoints

SECONDS_EACH=${BENCH_CP_SECONDS:-5}
REPEATS=${BENCH_CP_REPEATS:-3}
CLIENTS=${BENCH_CP_CLIENTS:-"1 8"}
WORKLOADS=${BENCH_CP_WORKLOADS:-"append append_read insert get list"}
SYNC=${BENCH_CP_SYNC:-}
PROTOCOL=${BENCH_CP_PROTOCOL:-prepared}
SMOKE=${BENCH_SMOKE:-0}
OUT=${BENCH_OUT:-bench/out}
BEFORE=${BENCH_CP_BEFORE:-}
DB=bench_cp
SQLDB=bench_cp_sql
BEFOREDB=bench_cp_before
dur=(-T "$SECONDS_EACH")
if [ "$SMOKE" = 1 ]; then
	CLIENTS=2 REPEATS=1 dur=(-t 20)
fi
mkdir -p "$OUT"
rm -f "$OUT/checkpoints.md" "$OUT/checkpoints.tsv"
sb_tempdir sb_bench_cp; work=$sb_dir

# The C edition in bench_cp, the SQL edition (the plain script of this
# tree's version) in bench_cp_sql.
sb_fresh_db "$DB"
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -c "CREATE EXTENSION sandbox_store"
sb_fresh_db "$SQLDB"
"$sb_top/src/sql/build.sh" plain "$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$sb_top/sandbox_store.control")" \
	>"$work/sandbox_store-sql.sql"
psql -X -q -v ON_ERROR_STOP=1 -d "$SQLDB" -f "$work/sandbox_store-sql.sql" >/dev/null
dbs=("$DB" "$SQLDB")
if [ -n "$BEFORE" ]; then
	sb_fresh_db "$BEFOREDB"
	psql -X -q -v ON_ERROR_STOP=1 -d "$BEFOREDB" -c "CREATE EXTENSION sandbox_store VERSION '$BEFORE'"
	dbs+=("$BEFOREDB")
fi

for db in "${dbs[@]}"; do
	psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$sb_top/bench/checkpoint-template.sql" >/dev/null
	psql -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
-- The by-hand table: the extension's shape and index, no checks.
CREATE TABLE bare (id text PRIMARY KEY, thread_id text NOT NULL, parent_id text,
                   created_at int8 NOT NULL, checkpoint jsonb NOT NULL, blob_keys text[] NOT NULL);
CREATE INDEX ON bare (thread_id, created_at, id COLLATE "C");
CREATE SEQUENCE ids;
-- The by-hand chain's heads (thread-0..63; a NULL head: no checkpoint yet).
CREATE TABLE bare_heads (thread text PRIMARY KEY, head text);
INSERT INTO bare_heads SELECT 'thread-' || c, NULL FROM generate_series(0, 63) c;
-- Each client's thread and writer (client ids 0..63), and 64 threads only
-- read (list-0..63: the appends do not make them longer).
CREATE TABLE writers (client int PRIMARY KEY, thread text, fence int8, token uuid);
INSERT INTO writers SELECT c, 'thread-' || c, w.fence, w.owner_token
  FROM generate_series(0, 63) c, sandbox_store.checkpoint_acquire_writer('thread-' || c, 86400000) w;
INSERT INTO writers SELECT 100 + c, 'list-' || c, w.fence, w.owner_token
  FROM generate_series(0, 63) c, sandbox_store.checkpoint_acquire_writer('list-' || c, 86400000) w;
-- A by-hand append that moved no head raises (volatile: never folded into
-- a plan).
CREATE FUNCTION lost(thread text) RETURNS text LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  RAISE EXCEPTION 'the writer or the head of % moved', thread;
END
$f$;
-- The by-hand writers' leases: the same tokens and fences, a day long.
CREATE TABLE bare_writers (thread text PRIMARY KEY, token uuid NOT NULL, fence int8 NOT NULL,
                           expires_at timestamptz NOT NULL);
INSERT INTO bare_writers SELECT thread, token, fence, now() + interval '1 day' FROM writers;
SQL
done

# The statements each side sends, written once: CLIENT stands for the
# client's id and HEAD for the head it read.  The pgbench scripts send them
# as they are (prepared by -M prepared, as an app would); the setup calls
# them through functions made of the same text.
#
# One append step: on the thread's head, read inside the statement.
ext_append="SELECT sandbox_store.checkpoint_append(
           t.c || jsonb_build_object('id', 'cp-' || nextval('ids'), 'threadId', w.thread, 'parentCheckpointId', h.head),
           h.head, w.thread, w.token, w.fence)
    FROM template t, writers w, LATERAL (SELECT sandbox_store.checkpoint_head(w.thread) OFFSET 0) h(head)
   WHERE w.client = CLIENT"
# The same on a head the client read before (append_read).
ext_append_read="SELECT sandbox_store.checkpoint_append(
           t.c || jsonb_build_object('id', 'cp-' || nextval('ids'), 'threadId', w.thread, 'parentCheckpointId', HEAD),
           HEAD, w.thread, w.token, w.fence)
    FROM template t, writers w WHERE w.client = CLIENT"
# The bare insert of the same row (its blob keys computed before the runs).
bare_insert="INSERT INTO bare SELECT 'cp-' || n, 'thread-' || CLIENT, NULL, 1700000000000,
                          t.c || jsonb_build_object('id', 'cp-' || n, 'threadId', 'thread-' || CLIENT), t.keys
    FROM template t, nextval('ids') n"
# By hand, head read inside: the writer's lease row locked and checked, the
# row (with its blob keys) on the current head and the head's
# compare-and-set, in one statement (one transaction, one round trip); a
# lost writer (no row inserted) raises.
keys="ARRAY(SELECT DISTINCT e ->> 'blobKey' COLLATE \"C\" FROM jsonb_array_elements(x.c -> 'files') e
                  WHERE e ? 'blobKey' ORDER BY 1)"
bare_append="WITH wr AS (SELECT b.thread FROM bare_writers b JOIN writers w ON w.thread = b.thread
               WHERE w.client = CLIENT AND b.token = w.token AND b.fence = w.fence
                 AND b.expires_at > clock_timestamp() FOR UPDATE OF b),
  cur AS (SELECT head FROM bare_heads WHERE thread = 'thread-' || CLIENT),
  ins AS (INSERT INTO bare SELECT 'cp-' || n, 'thread-' || CLIENT, cur.head, 1700000000000, x.c, $keys
            FROM template t, wr, cur, nextval('ids') n,
                 LATERAL (SELECT t.c || jsonb_build_object('id', 'cp-' || n, 'threadId', 'thread-' || CLIENT,
                                                           'parentCheckpointId', cur.head) OFFSET 0) x(c)
          RETURNING id, parent_id),
  cas AS (UPDATE bare_heads h SET head = ins.id FROM ins
           WHERE h.thread = 'thread-' || CLIENT AND h.head IS NOT DISTINCT FROM ins.parent_id RETURNING h.head)
  SELECT COALESCE((SELECT head FROM cas), lost('thread-' || CLIENT))"
# By hand on a head the client read before (append_read): the writer
# checked, the row on HEAD and UPDATE ... WHERE head = HEAD; a lost writer
# or compare-and-set (no row moved) raises, which rolls the row back.
bare_append_read="WITH wr AS (SELECT b.thread FROM bare_writers b JOIN writers w ON w.thread = b.thread
               WHERE w.client = CLIENT AND b.token = w.token AND b.fence = w.fence
                 AND b.expires_at > clock_timestamp() FOR UPDATE OF b),
  ins AS (INSERT INTO bare SELECT 'cp-' || n, 'thread-' || CLIENT, HEAD, 1700000000000, x.c, $keys
            FROM template t, wr, nextval('ids') n,
                 LATERAL (SELECT t.c || jsonb_build_object('id', 'cp-' || n, 'threadId', 'thread-' || CLIENT,
                                                           'parentCheckpointId', HEAD) OFFSET 0) x(c)
          RETURNING id),
  cas AS (UPDATE bare_heads h SET head = ins.id FROM ins
           WHERE h.thread = 'thread-' || CLIENT AND h.head = HEAD RETURNING h.head)
  SELECT COALESCE((SELECT head FROM cas), lost('thread-' || CLIENT))"
as_function() { # as_function NAME RETURNS STATEMENT: CLIENT is $1, HEAD $2
	local body=${3//CLIENT/\$1}
	# shellcheck disable=SC2016 # ($f$ quotes the body in SQL)
	printf 'CREATE FUNCTION %s(client int, head text DEFAULT NULL) RETURNS %s LANGUAGE sql AS $f$\n%s\n$f$;\n' \
		"$1" "$2" "${body//HEAD/\$2::text}"
}
for db in "${dbs[@]}"; do
	{
		as_function ext_append text "$ext_append"
		as_function hand_append text "$bare_append"
		cat <<'SQL'
-- Every appended thread has a head before the runs (a read head is never
-- NULL), and stored checkpoints to read: 20 in each list thread, in both
-- tables.
SELECT count(ext_append(c)), count(hand_append(c)) FROM generate_series(0, 63) c;
SELECT count(ext_append(100 + c)) FROM generate_series(0, 63) c, generate_series(1, 20);
INSERT INTO bare SELECT id, thread_id, parent_id, created_at, checkpoint, blob_keys FROM sandbox_store.checkpoints
 WHERE thread_id LIKE 'list-%';
ANALYZE;
SQL
	} | psql -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null
done
max_id=$(psql -X -qAt -d "$DB" -c "SELECT last_value FROM ids")

as_script() { # as_script STATEMENT: CLIENT is :client_id, HEAD :head
	local body=${1//CLIENT/:client_id}
	printf '%s;\n' "${body//HEAD/:head::text}"
}
as_script "$ext_append" >"$work/ext_append.pgbench"
as_script "$bare_append" >"$work/bare_append.pgbench"
# (-M simple writes :head into the text as it is: read it quoted there.)
q=("" ""); [ "$PROTOCOL" != simple ] || q=("quote_literal(" ")")
{
	echo "SELECT ${q[0]}sandbox_store.checkpoint_head('thread-' || :client_id)${q[1]} AS head \\gset"
	as_script "$ext_append_read"
} >"$work/ext_append_read.pgbench"
{
	echo "SELECT ${q[0]}head${q[1]} AS head FROM bare_heads WHERE thread = 'thread-' || :client_id \\gset"
	as_script "$bare_append_read"
} >"$work/bare_append_read.pgbench"
cp "$work/ext_append.pgbench" "$work/ext_insert.pgbench"
as_script "$bare_insert" >"$work/bare_insert.pgbench"
cat >"$work/ext_get.pgbench" <<EOF
\set n random(1, $max_id)
SELECT sandbox_store.checkpoint_get('cp-' || :n);
EOF
cat >"$work/bare_get.pgbench" <<EOF
\set n random(1, $max_id)
SELECT checkpoint FROM bare WHERE id = 'cp-' || :n;
EOF
cat >"$work/ext_list.pgbench" <<'EOF'
\set t random(0, 63)
SELECT c FROM sandbox_store.checkpoint_list('list-' || :t) c;
EOF
cat >"$work/bare_list.pgbench" <<'EOF'
\set t random(0, 63)
SELECT checkpoint FROM bare WHERE thread_id = 'list-' || :t ORDER BY created_at, id COLLATE "C";
EOF
cat >"$work/ext_writer.pgbench" <<EOF
SELECT fence AS f, ${q[0]}owner_token::text${q[1]} AS t FROM sandbox_store.checkpoint_acquire_writer('lease-' || :client_id, 60000) \gset
SELECT sandbox_store.checkpoint_release_writer('lease-' || :client_id, :t::uuid, :f);
EOF
for f in "$work"/*.pgbench; do cp "$f" "${f%/*}/sql_${f##*/}"; done
for f in "$work"/sql_bare_*.pgbench; do rm -f "$f"; done
for f in "$work"/ext_*.pgbench; do cp "$f" "${f%/*}/before_${f##*/}"; done

pgopts=${PGOPTIONS:-}
[ -z "$SYNC" ] || pgopts+=" -c synchronous_commit=$SYNC"
run() { # run SIDE_WORKLOAD CLIENTS -> "tps latency_ms"; SIDE sql_ runs in bench_cp_sql, before_ in bench_cp_before
	local out db=$DB rc=0
	case $1 in sql_*) db=$SQLDB ;; before_*) db=$BEFOREDB ;; esac
	out=$(PGOPTIONS=$pgopts pgbench -n -M "$PROTOCOL" -c "$2" -j "$(($2 < 2 ? $2 : 2))" "${dur[@]}" \
		-f "$work/$1.pgbench" "$db" 2>&1) || rc=$?
	if [ $rc -ne 0 ] || grep -Eq "aborted|ERROR:|FATAL:|^number of failed transactions: [1-9]" <<<"$out"; then
		tail -n 20 <<<"$out" >&2
		fail "$1 clients=$2: pgbench failed (exit $rc)"
	fi
	echo "$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -n 1) $(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

{
	echo "| workload | clients | C tps | SQL edition tps | by-hand tps | C / by-hand | SQL / by-hand | C latency (ms) | SQL latency (ms) | by-hand latency (ms) |${BEFORE:+ $BEFORE tps | C / $BEFORE |}"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|${BEFORE:+---:|---:|}"
} >"$work/table"
printf 'workload\tclients\tside\trep\ttps\tlat_ms\n' >"$OUT/checkpoints.tsv"
start=$SECONDS
for c in $CLIENTS; do
	for w in $WORKLOADS; do
		sides=(ext sql bare)
		[ -z "$BEFORE" ] || sides+=(before)
		n=${#sides[@]}
		for side in "${sides[@]}"; do : >"$work/$side.tps"; : >"$work/$side.lat"; done
		for r in $(seq "$REPEATS"); do
			for i in $(seq 0 $((n - 1))); do
				side=${sides[$(((i + r - 1) % n))]}
				name=${side}_$w; [ "$side" != sql ] || name=sql_ext_$w; [ "$side" != before ] || name=before_ext_$w
				res=$(run "$name" "$c")
				read -r tps lat <<<"$res"
				{ [ -n "$tps" ] && [ -n "$lat" ]; } || fail "$name clients=$c: no throughput"
				echo "$tps" >>"$work/$side.tps"; echo "$lat" >>"$work/$side.lat"
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$c" "$side" "$r" "$tps" "$lat" >>"$OUT/checkpoints.tsv"
				say "$w c=$c $side rep=$r tps=$tps latency=$lat ms"
			done
		done
		et=$(median <"$work/ext.tps"); st=$(median <"$work/sql.tps"); bt=$(median <"$work/bare.tps")
		printf '| %s | %s | %.0f | %.0f | %.0f | %s | %s | %.2f | %.2f | %.2f |' "$w" "$c" "$et" "$st" "$bt" \
			"$(ratio "$et" "$bt")" "$(ratio "$st" "$bt")" \
			"$(median <"$work/ext.lat")" "$(median <"$work/sql.lat")" "$(median <"$work/bare.lat")" >>"$work/table"
		if [ -n "$BEFORE" ]; then
			pt=$(median <"$work/before.tps")
			printf ' %.0f | %s |' "$pt" "$(ratio "$et" "$pt")" >>"$work/table"
		fi
		echo >>"$work/table"
	done
	: >"$work/ext.tps"; : >"$work/ext.lat"
	for r in $(seq "$REPEATS"); do
		res=$(run ext_writer "$c")
		read -r tps lat <<<"$res"
		echo "$tps" >>"$work/ext.tps"; echo "$lat" >>"$work/ext.lat"
	done
	printf '| writer (acquire + release) | %s | %.0f | | | | | %.2f | | |%s\n' "$c" \
		"$(median <"$work/ext.tps")" "$(median <"$work/ext.lat")" "${BEFORE:+ | |}" >>"$work/table"
done

# Every appended thread is one chain, in each edition and by hand: no two
# checkpoints of a thread on one parent, and the head is one that no
# checkpoint has for its parent.
for db in "${dbs[@]}"; do
	check=$(psql -X -qAt -d "$db" -c "SELECT
	    NOT EXISTS (SELECT FROM sandbox_store.checkpoints WHERE thread_id LIKE 'thread-%'
	                 GROUP BY thread_id, parent_id HAVING count(*) > 1)
	AND NOT EXISTS (SELECT FROM sandbox_store.checkpoint_heads h
	                 WHERE h.thread_id LIKE 'thread-%'
	                   AND EXISTS (SELECT FROM sandbox_store.checkpoints c WHERE c.parent_id = h.head_id))
	AND NOT EXISTS (SELECT FROM bare WHERE thread_id LIKE 'thread-%' AND parent_id IS NOT NULL
	                 GROUP BY thread_id, parent_id HAVING count(*) > 1)
	AND NOT EXISTS (SELECT FROM bare_heads h WHERE EXISTS (SELECT FROM bare b WHERE b.parent_id = h.head))")
	[ "$check" = t ] || fail "$db: an appended thread is not one chain"
done

glibc=$(psql -X -qAt -d "$DB" -c "SELECT COALESCE((SELECT pg_catalog.substr(e, 16)
  FROM pg_catalog.regexp_split_to_table(pg_catalog.encode(pg_catalog.pg_read_binary_file(
         '/proc/' || pg_catalog.pg_backend_pid() || '/environ'), 'escape'), '\\\\000') e
 WHERE e LIKE 'GLIBC_TUNABLES=%'), 'unset')" 2>/dev/null) || glibc=unknown
size=$(psql -X -qAt -d "$DB" -c "SELECT pg_size_pretty(avg(octet_length(checkpoint::text))::int8) || ' of JSON, ' ||
  pg_size_pretty(avg(pg_column_size(checkpoint))::int8) || ' stored (TOAST-compressed)' FROM sandbox_store.checkpoints")
{
	echo "### Checkpoints: $(date -u '+%Y-%m-%d %H:%M UTC'), nproc=$(nproc), $(psql -X -At -d postgres -c 'SHOW server_version'), fsync=$(psql -X -At -d postgres -c 'SHOW fsync'), synchronous_commit=${SYNC:-$(psql -X -At -d postgres -c 'SHOW synchronous_commit')}, pgbench -M $PROTOCOL, GLIBC_TUNABLES=$glibc"
	echo
	[ "$SMOKE" != 1 ] || { echo "SMOKE RUN (20 transactions per client): checks the harness, measures nothing."; echo; }
	echo "One checkpoint: $size. ${dur[*]} runs, median of ${REPEATS}, C, SQL edition and by hand alternated."
	echo "append: the head read inside the append's statement; append_read: read first in a statement of its own (both sides)."
	echo
	cat "$work/table"
	echo
	echo "Phase time: $((SECONDS - start)) s; raw runs: checkpoints.tsv."
} >"$OUT/checkpoints.md"
cat "$OUT/checkpoints.md"

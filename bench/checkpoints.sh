#!/usr/bin/env bash
# bench/checkpoints.sh: the checkpoint store beside a bare table (phase
# checkpoints of bench/run.sh, or make bench-checkpoints; BENCHMARKS.md,
# "Checkpoints").
#
# A realistic checkpoint: 200 conversation messages of about 500 bytes each
# and 50 file entries (about 110 kB of JSON; TOAST compresses it).  Each
# call runs in three databases side by side: the C edition (the extension,
# database bench_cp), the SQL edition (the plain script built from this
# tree, database bench_cp_sql) and the bare SQL an app would write without
# the extension's checks, on a table of the same shape and index (in
# bench_cp: bare, bare_heads):
#
#   append       checkpoint_append, the head read inside the same statement
#                (one round trip: SELECT ext_append(client))
#                            vs  by hand, one statement: the row inserted on
#                the current head and the head's compare-and-set (UPDATE
#                bare_heads ... WHERE head IS NOT DISTINCT FROM the expected)
#   append_read  the head read first, in a statement of its own
#                (checkpoint_head, \gset), then checkpoint_append on it (two
#                round trips, autocommit: what a client does)
#                            vs  by hand the same way: SELECT head \gset, then
#                one statement that inserts the row on :head and moves the
#                head with UPDATE bare_heads SET head = new WHERE thread = ...
#                AND head = :head (raises when no row moved: the CAS lost)
#   insert       checkpoint_append  vs  the INSERT of the same row alone
#                (not run by default: BENCH_CP_WORKLOADS="append insert ...")
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
# The setup knobs the phase reports in its header (the append's ratio
# depends on what a commit costs; BENCHMARKS.md, "Checkpoints", shows how):
#   BENCH_CP_CLIENTS ("1 8")      client counts
#   BENCH_CP_SECONDS (5) / BENCH_CP_REPEATS (3)
#   BENCH_CP_WORKLOADS ("append append_read get list")
#   BENCH_CP_SYNC ("")            synchronous_commit of the runs (PGOPTIONS);
#                                 empty: the server's
#   BENCH_CP_PROTOCOL (prepared)  pgbench -M: prepared, simple or extended
#   BENCH_SMOKE (0)               1: 2 clients, 20 transactions per client,
#                                 one round: checks the harness (and the
#                                 chains), measures nothing
#
# Runs against the server in PGHOST/PGPORT/PGUSER (a superuser, with
# sandbox_store installed); creates and drops databases bench_cp and
# bench_cp_sql.  Writes BENCH_OUT/checkpoints.md and checkpoints.tsv
# (default bench/out/).
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
sb_name=bench-checkpoints

SECONDS_EACH=${BENCH_CP_SECONDS:-5}
REPEATS=${BENCH_CP_REPEATS:-3}
CLIENTS=${BENCH_CP_CLIENTS:-"1 8"}
WORKLOADS=${BENCH_CP_WORKLOADS:-"append append_read get list"}
SYNC=${BENCH_CP_SYNC:-}
PROTOCOL=${BENCH_CP_PROTOCOL:-prepared}
SMOKE=${BENCH_SMOKE:-0}
OUT=${BENCH_OUT:-bench/out}
DB=bench_cp
SQLDB=bench_cp_sql
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

for db in "$DB" "$SQLDB"; do
	psql -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
-- The checkpoint every workload writes (its id and thread set per call).
CREATE TABLE template (c jsonb);
INSERT INTO template SELECT jsonb_build_object(
  'id', 'x', 'threadId', 'x', 'parentCheckpointId', NULL, 'createdAt', 1700000000000, 'reason', 'automatic',
  'conversation', (SELECT jsonb_agg(jsonb_build_object('role', CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END,
                                                       'content', repeat(md5(i::text), 15)))
                     FROM generate_series(1, 200) i),
  'files', (SELECT jsonb_agg(jsonb_build_object('path', 'src/file' || i || '.ts', 'kind', 'file', 'size', 1000 + i,
                                                'blobKey', 'sandbox-files/sha256/' || encode(sha256(i::text::bytea), 'hex')))
              FROM generate_series(1, 50) i),
  'artifacts', '[]'::jsonb);
-- The bare table: the extension's shape and index, no checks.
CREATE TABLE bare (id text PRIMARY KEY, thread_id text NOT NULL, parent_id text,
                   created_at int8 NOT NULL, checkpoint jsonb NOT NULL);
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
-- One append step of a client: on the thread's head.
CREATE FUNCTION ext_append(client int) RETURNS text LANGUAGE sql AS $$
  SELECT sandbox_store.checkpoint_append(
           t.c || jsonb_build_object('id', 'cp-' || nextval('ids'), 'threadId', w.thread,
                                     'parentCheckpointId', sandbox_store.checkpoint_head(w.thread)),
           sandbox_store.checkpoint_head(w.thread), w.thread, w.token, w.fence)
    FROM template t, writers w WHERE w.client = $1
$$;
-- The same on a head the client read before (append_read).
CREATE FUNCTION ext_append_on(client int, head text) RETURNS text LANGUAGE sql AS $$
  SELECT sandbox_store.checkpoint_append(
           t.c || jsonb_build_object('id', 'cp-' || nextval('ids'), 'threadId', w.thread, 'parentCheckpointId', $2),
           $2, w.thread, w.token, w.fence)
    FROM template t, writers w WHERE w.client = $1
$$;
CREATE FUNCTION bare_append(client int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO bare SELECT 'cp-' || n, 'thread-' || $1, NULL, 1700000000000,
                          t.c || jsonb_build_object('id', 'cp-' || n, 'threadId', 'thread-' || $1)
    FROM template t, nextval('ids') n
$$;
-- The same append by hand: the row on the current head and the head's
-- compare-and-set, in one statement (one transaction, one round trip).
CREATE FUNCTION hand_append(client int) RETURNS void LANGUAGE sql AS $$
  WITH cur AS (SELECT head FROM bare_heads WHERE thread = 'thread-' || $1),
  ins AS (INSERT INTO bare SELECT 'cp-' || n, 'thread-' || $1, cur.head, 1700000000000,
                                  t.c || jsonb_build_object('id', 'cp-' || n, 'threadId', 'thread-' || $1,
                                                            'parentCheckpointId', cur.head)
            FROM template t, cur, nextval('ids') n RETURNING id, parent_id)
  UPDATE bare_heads h SET head = ins.id FROM ins
   WHERE h.thread = 'thread-' || $1 AND h.head IS NOT DISTINCT FROM ins.parent_id
$$;
-- By hand on a head the client read before (append_read): the row on
-- :head and UPDATE ... WHERE head = :head; a lost compare-and-set (no row
-- moved) raises, which rolls the row back.
CREATE FUNCTION hand_append_on(client int, expected text) RETURNS text LANGUAGE sql AS $$
  WITH ins AS (INSERT INTO bare SELECT 'cp-' || n, 'thread-' || $1, $2, 1700000000000,
                                       t.c || jsonb_build_object('id', 'cp-' || n, 'threadId', 'thread-' || $1,
                                                                 'parentCheckpointId', $2)
                 FROM template t, nextval('ids') n RETURNING id),
  cas AS (UPDATE bare_heads h SET head = ins.id FROM ins
           WHERE h.thread = 'thread-' || $1 AND h.head = $2 RETURNING h.head)
  SELECT COALESCE((SELECT head FROM cas), ('the head of thread-' || $1 || ' moved')::int::text)
$$;
-- Every appended thread has a head before the runs (a read head is never
-- NULL), and stored checkpoints to read: 20 in each list thread, in both
-- tables.
SELECT count(ext_append(c)), count(hand_append(c)) FROM generate_series(0, 63) c;
SELECT count(ext_append(100 + c)) FROM generate_series(0, 63) c, generate_series(1, 20);
INSERT INTO bare SELECT id, thread_id, parent_id, created_at, checkpoint FROM sandbox_store.checkpoints
 WHERE thread_id LIKE 'list-%';
ANALYZE;
SQL
done
max_id=$(psql -X -qAt -d "$DB" -c "SELECT last_value FROM ids")

cat >"$work/ext_append.pgbench" <<'EOF'
SELECT ext_append(:client_id);
EOF
cat >"$work/bare_append.pgbench" <<'EOF'
SELECT hand_append(:client_id);
EOF
# (-M simple writes :head into the text as it is: read it quoted there.)
q=("" ""); [ "$PROTOCOL" != simple ] || q=("quote_literal(" ")")
cat >"$work/ext_append_read.pgbench" <<EOF
SELECT ${q[0]}sandbox_store.checkpoint_head('thread-' || :client_id)${q[1]} AS head \gset
SELECT ext_append_on(:client_id, :head);
EOF
cat >"$work/bare_append_read.pgbench" <<EOF
SELECT ${q[0]}head${q[1]} AS head FROM bare_heads WHERE thread = 'thread-' || :client_id \gset
SELECT hand_append_on(:client_id, :head);
EOF
cp "$work/ext_append.pgbench" "$work/ext_insert.pgbench"
cat >"$work/bare_insert.pgbench" <<'EOF'
SELECT bare_append(:client_id);
EOF
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

pgopts=${PGOPTIONS:-}
[ -z "$SYNC" ] || pgopts+=" -c synchronous_commit=$SYNC"
run() { # run SIDE_WORKLOAD CLIENTS -> "tps latency_ms"; SIDE sql_ runs in bench_cp_sql
	local out db=$DB rc=0
	case $1 in sql_*) db=$SQLDB ;; esac
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
	echo "| workload | clients | C tps | SQL edition tps | by-hand tps | C / by-hand | SQL / by-hand | C latency (ms) | SQL latency (ms) | by-hand latency (ms) |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$work/table"
printf 'workload\tclients\tside\trep\ttps\tlat_ms\n' >"$OUT/checkpoints.tsv"
start=$SECONDS
for c in $CLIENTS; do
	for w in $WORKLOADS; do
		sides=(ext sql bare)
		for side in "${sides[@]}"; do : >"$work/$side.tps"; : >"$work/$side.lat"; done
		for r in $(seq "$REPEATS"); do
			for i in 0 1 2; do
				side=${sides[$(((i + r - 1) % 3))]}
				name=${side}_$w; [ "$side" != sql ] || name=sql_ext_$w
				res=$(run "$name" "$c")
				read -r tps lat <<<"$res"
				{ [ -n "$tps" ] && [ -n "$lat" ]; } || fail "$name clients=$c: no throughput"
				echo "$tps" >>"$work/$side.tps"; echo "$lat" >>"$work/$side.lat"
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$c" "$side" "$r" "$tps" "$lat" >>"$OUT/checkpoints.tsv"
				say "$w c=$c $side rep=$r tps=$tps latency=$lat ms"
			done
		done
		et=$(median <"$work/ext.tps"); st=$(median <"$work/sql.tps"); bt=$(median <"$work/bare.tps")
		printf '| %s | %s | %.0f | %.0f | %.0f | %s | %s | %.2f | %.2f | %.2f |\n' "$w" "$c" "$et" "$st" "$bt" \
			"$(ratio "$et" "$bt")" "$(ratio "$st" "$bt")" \
			"$(median <"$work/ext.lat")" "$(median <"$work/sql.lat")" "$(median <"$work/bare.lat")" >>"$work/table"
	done
	: >"$work/ext.tps"; : >"$work/ext.lat"
	for r in $(seq "$REPEATS"); do
		res=$(run ext_writer "$c")
		read -r tps lat <<<"$res"
		echo "$tps" >>"$work/ext.tps"; echo "$lat" >>"$work/ext.lat"
	done
	printf '| writer (acquire + release) | %s | %.0f | | | | | %.2f | | |\n' "$c" \
		"$(median <"$work/ext.tps")" "$(median <"$work/ext.lat")" >>"$work/table"
done

# Every appended thread is one chain, in each edition and by hand: no two
# checkpoints of a thread on one parent, and the head is one that no
# checkpoint has for its parent.
for db in "$DB" "$SQLDB"; do
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

size=$(psql -X -qAt -d "$DB" -c "SELECT pg_size_pretty(avg(octet_length(checkpoint::text))::int8) || ' of JSON, ' ||
  pg_size_pretty(avg(pg_column_size(checkpoint))::int8) || ' stored (TOAST-compressed)' FROM sandbox_store.checkpoints")
{
	echo "### Checkpoints: $(date -u '+%Y-%m-%d %H:%M UTC'), nproc=$(nproc), $(psql -X -At -d postgres -c 'SHOW server_version'), fsync=$(psql -X -At -d postgres -c 'SHOW fsync'), synchronous_commit=${SYNC:-$(psql -X -At -d postgres -c 'SHOW synchronous_commit')}, pgbench -M $PROTOCOL"
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

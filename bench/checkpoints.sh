#!/usr/bin/env bash
# bench/checkpoints.sh: the checkpoint store beside a bare table (make
# bench-checkpoints; BENCHMARKS.md, "Checkpoints").
#
# A realistic checkpoint: 200 conversation messages of about 500 bytes each
# and 50 file entries (about 110 kB of JSON; TOAST compresses it).  The
# extension's calls are compared with the bare SQL an app would write
# without the extension's checks, on a table of the same shape and index:
#
#   append   checkpoint_append (validation, writer and head checks, head
#            update, blob references)   vs  what an app writes by hand for
#            the same chain: one transaction that INSERTs the same row and
#            moves the thread's head with a compare-and-set (UPDATE ...
#            WHERE head IS NOT DISTINCT FROM the expected head)
#   insert   checkpoint_append          vs  the INSERT of the same row alone
#            (not run by default: BENCH_CP_WORKLOADS="append insert ...")
#   get      checkpoint_get of a random stored checkpoint
#                                       vs  SELECT by primary key
#   list     checkpoint_list of a thread of 20 checkpoints (threads only read)
#                                       vs  SELECT ... ORDER BY
#   writer   checkpoint_acquire_writer + checkpoint_release_writer
#            (the lease cycle, two statements, two commits)
#
# Each client works on a thread of its own (an append needs the thread's
# writer and head: a thread has one writer).  The pairs run alternately,
# BENCH_CP_REPEATS times, BENCH_CP_SECONDS each, at each client count;
# medians of tps and mean latency are reported with the ratio.
#
# Runs against the server in PGHOST/PGPORT/PGUSER (a superuser, with
# sandbox_store installed); creates and drops database bench_cp.  Writes
# BENCH_OUT/checkpoints.md (default bench/out/).
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"

SECONDS_EACH=${BENCH_CP_SECONDS:-5}
REPEATS=${BENCH_CP_REPEATS:-3}
CLIENTS=${BENCH_CP_CLIENTS:-"1 8"}
WORKLOADS=${BENCH_CP_WORKLOADS:-"append get list"}
OUT=${BENCH_OUT:-bench/out}
DB=bench_cp
mkdir -p "$OUT"
sb_tempdir sb_bench_cp; work=$sb_dir
sb_fresh_db "$DB"
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" <<'SQL'
CREATE EXTENSION sandbox_store;
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
-- Stored checkpoints to read: 20 in each list thread, in both tables.
SELECT count(ext_append(100 + c)) FROM generate_series(0, 63) c, generate_series(1, 20);
INSERT INTO bare SELECT id, thread_id, parent_id, created_at, checkpoint FROM sandbox_store.checkpoints;
ANALYZE;
SQL
max_id=$(psql -X -qAt -d "$DB" -c "SELECT last_value FROM ids")

cat >"$work/ext_append.pgbench" <<'EOF'
SELECT ext_append(:client_id);
EOF
cat >"$work/bare_append.pgbench" <<'EOF'
SELECT hand_append(:client_id);
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
cat >"$work/ext_writer.pgbench" <<'EOF'
SELECT fence AS f, owner_token AS t FROM sandbox_store.checkpoint_acquire_writer('lease-' || :client_id, 60000) \gset
SELECT sandbox_store.checkpoint_release_writer('lease-' || :client_id, :t, :f);
EOF

run() { # run NAME CLIENTS -> "tps latency_ms"
	local out
	out=$(pgbench -n -M prepared -c "$2" -j "$(( $2 < 2 ? $2 : 2 ))" -T "$SECONDS_EACH" -f "$work/$1.pgbench" "$DB" 2>&1) ||
		{ echo "$out" >&2; return 1; }
	echo "$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out") $(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

{
	echo "| workload | clients | extension tps | bare SQL tps | extension / bare | extension latency (ms) | bare latency (ms) |"
	echo "|---|---|---|---|---|---|---|"
} >"$work/table"
for c in $CLIENTS; do
	for w in $WORKLOADS; do
		: >"$work/ext.tps"; : >"$work/bare.tps"; : >"$work/ext.lat"; : >"$work/bare.lat"
		for r in $(seq "$REPEATS"); do
			order="ext bare"; [ $((r % 2)) -eq 0 ] && order="bare ext"
			for side in $order; do
				read -r tps lat < <(run "${side}_$w" "$c")
				echo "$tps" >>"$work/$side.tps"; echo "$lat" >>"$work/$side.lat"
			done
		done
		et=$(median <"$work/ext.tps"); bt=$(median <"$work/bare.tps")
		el=$(median <"$work/ext.lat"); bl=$(median <"$work/bare.lat")
		printf '| %s | %s | %.0f | %.0f | %.2f | %.2f | %.2f |\n' "$w" "$c" "$et" "$bt" \
			"$(awk -v a="$et" -v b="$bt" 'BEGIN {print a / b}')" "$el" "$bl" >>"$work/table"
	done
	: >"$work/ext.tps"; : >"$work/ext.lat"
	for r in $(seq "$REPEATS"); do
		read -r tps lat < <(run ext_writer "$c")
		echo "$tps" >>"$work/ext.tps"; echo "$lat" >>"$work/ext.lat"
	done
	printf '| writer (acquire + release) | %s | %.0f | | | %.2f | |\n' "$c" \
		"$(median <"$work/ext.tps")" "$(median <"$work/ext.lat")" >>"$work/table"
done

size=$(psql -X -qAt -d "$DB" -c "SELECT pg_size_pretty(avg(octet_length(checkpoint::text))::int8) || ' of JSON, ' ||
  pg_size_pretty(avg(pg_column_size(checkpoint))::int8) || ' stored (TOAST-compressed)' FROM sandbox_store.checkpoints")
{
	echo "## Checkpoints"
	echo
	echo "One checkpoint: $size. ${SECONDS_EACH} s runs, median of ${REPEATS}, pairs alternated."
	echo
	cat "$work/table"
} | tee "$OUT/checkpoints.md"

#!/usr/bin/env bash
# bench/profile-checkpoints.sh: CPU instructions per checkpoint append beside
# the hand-written statement and the bare insert of bench/checkpoints.sh,
# counted with valgrind --tool=callgrind on a single-user backend, as
# bench/profile-runlog.sh counts the run log's append (the difference between
# a run of PROFILE_WARM and one of PROFILE_WARM + PROFILE_CALLS calls, over
# PROFILE_CALLS).  Not part of `make bench`; needs valgrind.
#
#   bench/profile-checkpoints.sh
#
# Workloads, each a prepared statement appending bench/checkpoints.sh's
# checkpoint (109 kB of JSON) to one thread, on its head:
#
#   bare        the INSERT of the same row alone (its blob keys computed
#               before the runs): bench/checkpoints.sh's insert, by hand
#   append      checkpoint_head and checkpoint_append in one statement
#               (bench/checkpoints.sh's append and insert, the extension)
#   sql_append  the same with the SQL edition (the plain script built from
#               this tree) instead of the extension
#   hand        bench/checkpoints.sh's append by hand: the writer's lease row
#               locked and checked, the row with its blob keys, the head's
#               compare-and-set, in one statement
#
# Prints instructions per call and each one's ratio to bare; callgrind's
# inclusive costs of the long runs go to PROFILE_OUT/WORKLOAD.annotate.txt.
# Needs the extension installed (make install).  As root it runs as the
# postgres user on a copy of the tree and copies the results back.
#
#   PROFILE_CALLS (200)  PROFILE_WARM (50)  PROFILE_OUT (bench/out/profile-checkpoints)

set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
# shellcheck source=bench/profile-lib.sh
. "$(dirname "$0")/profile-lib.sh"
sb_name=profile-checkpoints
prof_begin profile-checkpoints 200 50 "$@"

# Two databases: the extension, and the SQL edition's plain script; in each
# the checkpoint, a writer of thread-0 and a first checkpoint as its head,
# and the by-hand tables beside them.
prof_sql_edition "$dir/sandbox_store-sql.sql"
psql -X -q -d postgres -c "CREATE DATABASE bench" -c "CREATE DATABASE bench_sql"
psql -X -q -v ON_ERROR_STOP=1 -d bench -c "CREATE EXTENSION sandbox_store"
psql -X -q -v ON_ERROR_STOP=1 -d bench_sql -f "$dir/sandbox_store-sql.sql" >/dev/null
for db in bench bench_sql; do
  psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$sb_top/bench/checkpoint-template.sql" >/dev/null
  psql -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
CREATE SEQUENCE ids;
CREATE TABLE writers (thread text PRIMARY KEY, fence int8, token uuid);
INSERT INTO writers SELECT 'thread-0', w.fence, w.owner_token FROM sandbox_store.checkpoint_acquire_writer('thread-0', 86400000) w;
SELECT sandbox_store.checkpoint_append(t.c || jsonb_build_object('id', 'cp-' || nextval('ids'), 'threadId', w.thread),
                                       NULL, w.thread, w.token, w.fence)
  FROM template t, writers w;
CREATE TABLE bare (id text PRIMARY KEY, thread_id text NOT NULL, parent_id text,
                   created_at int8 NOT NULL, checkpoint jsonb NOT NULL, blob_keys text[] NOT NULL);
CREATE INDEX ON bare (thread_id, created_at, id COLLATE "C");
CREATE TABLE bare_writers (thread text PRIMARY KEY, token uuid NOT NULL, fence int8 NOT NULL,
                           expires_at timestamptz NOT NULL);
INSERT INTO bare_writers SELECT thread, token, fence, now() + interval '1 day' FROM writers;
CREATE TABLE bare_heads (thread text PRIMARY KEY, head text);
INSERT INTO bare_heads VALUES ('thread-0', 'cp-0');
CREATE FUNCTION lost(thread text) RETURNS text LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  RAISE EXCEPTION 'the writer or the head of % moved', thread;
END
$f$;
SQL
done
prof_freeze

# The statement of a workload (postgres --single: one statement a line).
statement() {
  case $1 in
    bare)
      echo "INSERT INTO bare SELECT 'cp-' || n, 'thread-0', NULL, 1700000000000, t.c || jsonb_build_object('id', 'cp-' || n, 'threadId', 'thread-0'), t.keys FROM template t, nextval('ids') n"
      ;;
    append | sql_append)
      echo "SELECT sandbox_store.checkpoint_append(t.c || jsonb_build_object('id', 'cp-' || nextval('ids'), 'threadId', w.thread, 'parentCheckpointId', h.head), h.head, w.thread, w.token, w.fence) FROM template t, writers w, LATERAL (SELECT sandbox_store.checkpoint_head(w.thread) OFFSET 0) h(head)"
      ;;
    hand)
      echo "WITH wr AS (SELECT b.thread FROM bare_writers b JOIN writers w ON w.thread = b.thread WHERE b.token = w.token AND b.fence = w.fence AND b.expires_at > clock_timestamp() FOR UPDATE OF b), cur AS (SELECT head FROM bare_heads WHERE thread = 'thread-0'), ins AS (INSERT INTO bare SELECT 'cp-' || n, 'thread-0', cur.head, 1700000000000, x.c, ARRAY(SELECT DISTINCT e ->> 'blobKey' COLLATE \"C\" FROM jsonb_array_elements(x.c -> 'files') e WHERE e ? 'blobKey' ORDER BY 1) FROM template t, wr, cur, nextval('ids') n, LATERAL (SELECT t.c || jsonb_build_object('id', 'cp-' || n, 'threadId', 'thread-0', 'parentCheckpointId', cur.head) OFFSET 0) x(c) RETURNING id, parent_id), cas AS (UPDATE bare_heads h SET head = ins.id FROM ins WHERE h.thread = 'thread-0' AND h.head IS NOT DISTINCT FROM ins.parent_id RETURNING h.head) SELECT COALESCE((SELECT head FROM cas), lost('thread-0'))"
      ;;
  esac
}
prof_script() { # workload n
  local i
  echo "PREPARE s AS $(statement "$1")"
  for i in $(seq 1 "$2"); do echo "EXECUTE s"; done
}

prof_table 12 bare append sql_append hand

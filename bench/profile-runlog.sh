#!/usr/bin/env bash
# bench/profile-runlog.sh: CPU instructions per call of the run log's append
# beside the bare insert of bench/runlog.sh, counted with valgrind
# --tool=callgrind on a single-user backend, as bench/profile.sh counts the
# main workloads (the same method: the difference between a run of
# PROFILE_WARM and one of PROFILE_WARM + PROFILE_CALLS calls, over
# PROFILE_CALLS).  Not part of `make bench`; needs valgrind.
#
#   bench/profile-runlog.sh
#
# Workloads, each a prepared statement run with the 16 chunks of
# bench/runlog.sh (about 200 bytes of JSON each):
#
#   bare           INSERT of the 16 rows (16 parameters) into a table of
#                  run_log_entries' shape, at seqs counted by the script
#   append         run_log_append(run, chunks): a log without a runs row
#   append_fenced  run_log_append(run, chunks, 1) on a claimed run
#   append_statements  append_fenced with sandbox_store.direct_reads and
#                  sandbox_store.direct_inserts off: the C edition's
#                  statements (as before 1.7.2)
#   sql_append_fenced  append_fenced with the SQL edition (the plain script
#                  built from this tree) instead of the extension
#   hand_fenced    bench/runlog_hand.pgbench's hand-written statement that
#                  gives append_fenced's guarantee, on the same claimed run
#
# Prints instructions per call and each append's ratio to bare; callgrind's
# inclusive costs of the long runs go to PROFILE_OUT/WORKLOAD.annotate.txt.
# Needs the extension installed (make install).  As root it runs as the
# postgres user on a copy of the tree and copies the results back.
#
#   PROFILE_CALLS (400)  PROFILE_WARM (100)  PROFILE_OUT (bench/out/profile-runlog)

set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../test/scripts/lib.sh"
# shellcheck source=bench/profile-lib.sh
. "$(dirname "$0")/profile-lib.sh"
sb_name=profile-runlog
prof_begin profile-runlog 400 100 "$@"

# The chunks of bench/runlog.sh: an array for the append, one by one for bare.
chunks="["
bare_chunks=()
for i in $(seq 1 16); do
  c=$(printf '{"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-7f3a9c", "timestamp": %d, "delta": "%s"}' \
    $((1767225600000 + i)) \
    "$(printf 'Step %02d: the build passed, 42 tests green; now updating the README and the changelog for the release.' "$i")")
  chunks+=$c
  [ "$i" = 16 ] || chunks+=", "
  bare_chunks+=("$c")
done
chunks+="]"

# Two databases: the extension, and the SQL edition's plain script.
prof_sql_edition "$dir/sandbox_store-sql.sql"
psql -X -q -d postgres -c "CREATE DATABASE bench" -c "CREATE DATABASE bench_sql"
psql -X -q -v ON_ERROR_STOP=1 -d bench_sql -f "$dir/sandbox_store-sql.sql" >/dev/null
for db in bench bench_sql; do
  [ "$db" = bench_sql ] || psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION sandbox_store"
  psql -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
CREATE TABLE runlog_bare (run_id text NOT NULL, seq int8 NOT NULL, chunk jsonb NOT NULL, PRIMARY KEY (run_id, seq));
SELECT sandbox_store.run_create_or_resume('fenced', 'thread', 1767225600000);
SELECT sandbox_store.run_claim('fenced');
SQL
done
prof_freeze

# The script of a workload, n calls (postgres --single: one statement a line).
prof_script() { # workload n
  local i j values="" args
  case $1 in
    bare)
      for j in $(seq 1 16); do
        values+="(\$1, \$2 + $j, \$$((j + 2))::jsonb)"
        [ "$j" = 16 ] || values+=", "
      done
      echo "PREPARE s(text, int8$(printf ', text%.0s' $(seq 1 16))) AS INSERT INTO runlog_bare (run_id, seq, chunk) VALUES $values"
      args=""
      for j in "${bare_chunks[@]}"; do args+=", '$j'"; done
      for i in $(seq 1 "$2"); do echo "EXECUTE s('bare', $(((i - 1) * 16))$args)"; done
      ;;
    append | append_fenced | append_statements | sql_append_fenced)
      [ "$1" != append_statements ] || echo "SET sandbox_store.direct_reads = off; SET sandbox_store.direct_inserts = off"
      echo "PREPARE s(text, jsonb, int8) AS SELECT sandbox_store.run_log_append(\$1, \$2, \$3)"
      case $1 in
        append) args="'open', '$chunks', NULL" ;;
        *) args="'fenced', '$chunks', 1" ;;
      esac
      for i in $(seq 1 "$2"); do echo "EXECUTE s($args)"; done
      ;;
    hand_fenced)
      echo "PREPARE s(text, jsonb, int8) AS WITH r AS (SELECT FROM sandbox_store.runs WHERE run_id = \$1 AND driver_epoch = \$3 FOR SHARE), l AS (INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at) SELECT \$1, 16, clock_timestamp() FROM r ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET last_seq = l.last_seq + EXCLUDED.last_seq, updated_at = EXCLUDED.updated_at RETURNING l.last_seq - 16 AS before) INSERT INTO sandbox_store.run_log_entries (run_id, seq, chunk) SELECT \$1, l.before + x.i, x.c FROM l, jsonb_array_elements(\$2) WITH ORDINALITY x(c, i)"
      for i in $(seq 1 "$2"); do echo "EXECUTE s('fenced', '$chunks', 1)"; done
      ;;
  esac
}

prof_table 20 bare append append_fenced append_statements sql_append_fenced hand_fenced

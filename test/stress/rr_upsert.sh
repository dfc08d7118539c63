#!/usr/bin/env bash
# rr_upsert.sh: REPEATABLE READ writers read their own writes back while
# other sessions delete and re-create the same keys (correctness, not timing).
#
# Against the server in PGHOST/PGPORT/PGUSER (a superuser): in a fresh
# database, SB_RR_CLIENTS clients run rr_upsert.pgbench (REPEATABLE READ:
# sandbox_upsert of one of 3 keys, then sandbox_get of it, which must return
# exactly the record just written) against SB_RR_OTHERS clients of
# rr_other.pgbench (READ COMMITTED ensure, upsert, delete, lease ensure of the
# same keys), for SB_RR_SECONDS, once with sandbox_store.direct_reads on and
# once off.  It fails if any client aborts (a wrong read raises an error; a
# serialization failure, 40001, is retried) or nothing ran.
#
# Before 1.2 an unfenced upsert took no lock under REPEATABLE READ: a delete
# committing between its snapshot check and its write let it insert a second
# row, and the transaction then saw two records for the key.
#
#   SB_RR_DB (sandbox_store_rr)  SB_RR_CLIENTS (6)  SB_RR_OTHERS (4)  SB_RR_SECONDS (10)
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../scripts/lib.sh"
sb_name=rr_upsert
cd "$sb_top"
db=${SB_RR_DB:-sandbox_store_rr}
clients=${SB_RR_CLIENTS:-6}
others=${SB_RR_OTHERS:-4}
seconds=${SB_RR_SECONDS:-10}
out=test/stress/out
mkdir -p "$out"

sb_fresh_db "$db"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" <<'SQL'
CREATE EXTENSION sandbox_store;
CREATE FUNCTION sb_rr_check(k text, want text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    n int;
    got text;
BEGIN
    SELECT count(*), string_agg(provider_sandbox_id, ', ') INTO n, got FROM sandbox_store.sandbox_get(k);
    IF n <> 1 OR got <> want THEN
        RAISE EXCEPTION 'sandbox_get(%) under REPEATABLE READ returned % row(s) (%), not the record just written (%)',
            k, n, got, want;
    END IF;
    RETURN n;
END
$$;
SQL

for direct in on off; do
  psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "LOAD 'sandbox_store'" \
    -c "ALTER DATABASE \"$db\" SET sandbox_store.direct_reads = $direct"
  set +e
  pgbench -n -M prepared -c "$clients" -j 2 -T "$seconds" --max-tries=1000 \
    -f test/stress/rr_upsert.pgbench "$db" >"$out/rr_upsert.$direct.log" 2>&1 &
  rr=$!
  pgbench -n -M prepared -c "$others" -j 1 -T "$seconds" \
    -f test/stress/rr_other.pgbench "$db" >"$out/rr_other.$direct.log" 2>&1 &
  other=$!
  wait $rr; rc_rr=$?
  wait $other; rc_other=$?
  set -e
  grep -h "error" "$out/rr_upsert.$direct.log" "$out/rr_other.$direct.log" | sort | uniq -c | head -5 >&2 || true
  [ "$rc_rr" = 0 ] || fail "direct_reads=$direct: a REPEATABLE READ client aborted (exit $rc_rr), see $out/rr_upsert.$direct.log"
  [ "$rc_other" = 0 ] || fail "direct_reads=$direct: another client aborted (exit $rc_other), see $out/rr_other.$direct.log"
  n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out/rr_upsert.$direct.log")
  retried=$(sed -n 's/^number of transactions retried: \([0-9]*\).*/\1/p' "$out/rr_upsert.$direct.log")
  m=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out/rr_other.$direct.log")
  { [ "${n:-0}" -gt 100 ] && [ "${m:-0}" -gt 100 ]; } || fail "direct_reads=$direct: too few transactions ($n, $m)"
  say "direct_reads=$direct: $n REPEATABLE READ write+read transactions (${retried:-0} retried after 40001) against $m others: every read saw its own write"
done
say ok

#!/usr/bin/env bash
# test/memory/growth.sh: one backend makes SB_GROWTH_CALLS (default
# 1,000,000) calls of sandbox_store's functions; its memory, the sum of
# total_bytes in pg_backend_memory_contexts read by that same backend, may
# grow by less than SB_GROWTH_LIMIT bytes (default 1 MB) between the end of a
# warm-up (5% of the calls: caches and prepared plans filled) and the end.
#
# Runs against the server in PGHOST/PGPORT/PGUSER (a superuser), e.g.
#   test/scripts/with-cluster.sh test/memory/growth.sh
# in a database of its own (sb_growth, dropped at the end).  test/memory/run.sh
# runs it against its AddressSanitizer server.
#
# One psql session reads a generated stream of statements, each its own
# transaction unless it says BEGIN (as an app server calls the functions):
#   ensure of a fresh record (resume), autocommit; upsert + get; a block with
#   lock + try_lock + ensure, committed (transaction-scoped locks end there);
#   every 5th round a lease-mode ensure and its release; every 10th a try_lock
#   of a key the session has claimed (false) and a call that fails (22004);
#   every 50th list, lock_holder and lock_id.  16 keys.
# It prints the memory samples taken along the way and exits non-zero if the
# growth is over the limit, a call failed that should not have, or the
# session ended early.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../scripts/lib.sh"
sb_name=growth

calls=${SB_GROWTH_CALLS:-1000000}
limit=${SB_GROWTH_LIMIT:-1048576}
db=sb_growth
sb_tempdir sb_growth; work=$sb_dir

sb_fresh_db "$db"
sb_at_exit sb_quiet psql -X -q -d postgres -c "DROP ROLE IF EXISTS sb_growth_app"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" \
  -c "DROP ROLE IF EXISTS sb_growth_app" -c "CREATE ROLE sb_growth_app LOGIN"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" <<'SQL'
CREATE EXTENSION sandbox_store;
GRANT USAGE ON SCHEMA sandbox_store TO sb_growth_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO sb_growth_app;
-- for the measurement only (superuser-only by default)
GRANT SELECT ON pg_catalog.pg_backend_memory_contexts TO sb_growth_app;
GRANT EXECUTE ON FUNCTION pg_catalog.pg_get_backend_memory_contexts() TO sb_growth_app;
SQL

# The statement stream.  Calls per round: 1 + 2 + 3 = 6, +2 every 5th,
# +2 every 10th, +3 every 50th: 7.06 on average.
awk -v calls="$calls" '
BEGIN {
  print "\\set ON_ERROR_STOP off"
  print "\\o /dev/null"
  print "SET client_min_messages = error;"
  for (k = 0; k < 16; k++)
    printf "SELECT sandbox_store.sandbox_upsert(%cg%d%c, %ce2b%c, %csbx-0%c, %cthread-g%c, NULL, %crun-0%c);\n", 39, k, 39, 39, 39, 39, 39, 39, 39, 39, 39
  print "SELECT owner_token AS held FROM sandbox_store.sandbox_ensure(\x27g-claimed\x27, \x27run\x27, lease => \x271 hour\x27) \\gset"
  warm = int(calls / 20); if (warm < 2000) warm = 2000
  step = int((calls - warm) / 10); if (step < 1) step = 1
  next_sample = warm
  n = 0; i = 0
  while (n < calls) {
    i++
    k = i % 16
    printf "SELECT count(*) FROM sandbox_store.sandbox_ensure(\x27g%d\x27, \x27run-%d\x27);\n", k, i
    printf "SELECT sandbox_store.sandbox_upsert(\x27g%d\x27, \x27e2b\x27, \x27sbx-%d\x27, \x27thread-g\x27, \x27snap-%d\x27, \x27run-%d\x27), (SELECT count(*) FROM sandbox_store.sandbox_get(\x27g%d\x27));\n", (i + 5) % 16, i, i, i, (i + 3) % 16
    printf "BEGIN; SELECT sandbox_store.sandbox_lock(\x27g%d\x27, wait => \x271 second\x27), sandbox_store.sandbox_try_lock(\x27g%d\x27); SELECT count(*) FROM sandbox_store.sandbox_ensure(\x27g%d\x27, \x27run-%d\x27); COMMIT;\n", (i + 7) % 16, (i + 9) % 16, (i + 7) % 16, i
    n += 6
    if (i % 5 == 0) {
      printf "SELECT sandbox_store.sandbox_release(key, owner_token) FROM (SELECT \x27lease-%d\x27 AS key, owner_token FROM sandbox_store.sandbox_ensure(\x27lease-%d\x27, \x27run-%d\x27, lease => \x271 minute\x27)) e;\n", i % 4, i % 4, i
      n += 2
    }
    if (i % 10 == 0) {
      print "SELECT CASE WHEN sandbox_store.sandbox_try_lock(\x27g-claimed\x27) THEN \x27SBFAIL try_lock of a claimed key\x27 END;"
      print "SELECT count(*) FROM sandbox_store.sandbox_get(NULL);"
      n += 2
    }
    if (i % 50 == 0) {
      printf "SELECT (SELECT count(*) FROM sandbox_store.sandbox_list(\x27thread-g\x27)), sandbox_store.sandbox_lock_holder(\x27g%d\x27), sandbox_store.sandbox_lock_id(\x27g%d\x27);\n", k, k
      n += 3
    }
    if (n >= next_sample || n >= calls) {
      print "\\o"
      printf "SELECT \x27SBMEM\x27, %d, (SELECT sum(total_bytes) FROM pg_backend_memory_contexts), round(extract(epoch FROM clock_timestamp() - backend_start)::numeric, 1) FROM pg_stat_activity WHERE pid = pg_backend_pid();\n", n
      print "\\o /dev/null"
      next_sample += step
    }
  }
  print "SELECT sandbox_store.sandbox_release(\x27g-claimed\x27, :\x27held\x27);"
  print "\\o"
  print "SELECT \x27SBDONE\x27;"
}' >"$work/stream.sql"

start=$SECONDS
psql -X -q -At -F ' ' -d "$db" -U sb_growth_app -f "$work/stream.sql" >"$work/out" 2>"$work/err" || true
took=$((SECONDS - start))

{ grep "^SBMEM" "$work/out" || true; } | awk '{ printf "growth: after %9d calls: %9d bytes in pg_backend_memory_contexts (%s s)\n", $2, $3, $4 }'
fails=$(grep -c SBFAIL "$work/out" || true)
expected_errors=$(grep -c 'sandbox_get(NULL)' "$work/stream.sql" || true)
errors=$(grep -c '^psql:.*ERROR' "$work/err" || true)
null_errors=$(grep -c 'ERROR:  key must not be null' "$work/err" || true)
rc=0
if ! grep -q '^SBDONE' "$work/out"; then
  warn "FAILED: the session did not reach the end"; tail -5 "$work/err" >&2; rc=1
fi
if [ "$fails" != 0 ] || [ "$errors" != "$expected_errors" ] || [ "$null_errors" != "$expected_errors" ]; then
  warn "FAILED: $errors errors ($expected_errors expected, all 'key must not be null'), $fails wrong results"
  grep ERROR "$work/err" | grep -v 'key must not be null' | sort | uniq -c | sort -rn | head >&2
  rc=1
fi
# the baseline: the smallest sample (the first one may still hold transient memory)
first=$(grep '^SBMEM' "$work/out" | awk 'NR == 1 || $3 < m { m = $3 } END { if (NR) print m }')
last=$(grep '^SBMEM' "$work/out" | tail -1 | awk '{print $3}')
made=$(grep '^SBMEM' "$work/out" | tail -1 | awk '{print $2}')
if [ -n "$first" ] && [ -n "$last" ]; then
  growth=$((last - first))
  say "$made calls in ${took}s; memory after warm-up at least $first bytes, at the end $last bytes: growth $growth bytes (limit $limit)"
  if [ "$growth" -ge "$limit" ]; then
    warn "FAILED: the backend's memory grew by $growth bytes"; rc=1
  fi
else
  warn "FAILED: no memory samples"; rc=1
fi
[ $rc -eq 0 ] && say ok
exit $rc

#!/usr/bin/env bash
# run.sh: concurrency stress test of sandbox_ensure (correctness, not timing).
#
# Against the server in PGHOST/PGPORT/PGUSER (a superuser; see
# with-cluster.sh): creates a fresh database, installs sandbox_store and the
# log tables, then runs pgbench with many clients, each transaction doing
# test/stress/ensure.pgbench (ensure over a small key range; on 'create',
# log it and upsert the record; COMMIT).  pgbench runs in a few rounds, each
# on fresh keys, so that all clients race on new keys once per round.
# Afterwards it asserts that
#
#   - pgbench ran every transaction of every round: exit code 0, no aborted
#     client, no failed transaction, "number of transactions actually
#     processed: N/N";
#   - every key was created exactly once: count(creates) = count(DISTINCT key
#     in creates) = count(sandbox_store.instances), and every record's key
#     (and provider_sandbox_id) comes from a logged create;
#   - every other ensure was a resume that saw the created record, after the
#     create (no stale 'create', no 'recreate', no missing record);
#   - each ensure held exactly one lock of the extension during its
#     transaction, none after COMMIT, and none is left in pg_locks;
#   - the race was exercised: some resumes were asked for before their key's
#     create committed (they waited for the creator's lock, then saw its
#     record; an ensure reading with its statement's snapshot would say
#     'create' there).
#
# Prints a one-line summary; exits non-zero with a clear message otherwise.
# pgbench output goes to test/stress/out/ (gitignored).
#
#   SB_STRESS_DB (sandbox_store_stress)  SB_STRESS_CLIENTS (32)
#   SB_STRESS_THREADS (2)  SB_STRESS_ROUNDS (8)
#   SB_STRESS_TXNS (25, per client and round)
#   SB_STRESS_KEYS (40 per round)  SB_STRESS_CREATE_MS (10)
#   SB_STRESS_PGBENCH_HOST, SB_STRESS_PGBENCH_PORT (pgbench only: e.g. a
#   pooler in front of the server; checks still go to PGHOST/PGPORT)
#   SB_STRESS_QUERY_MODE (prepared; extended through a transaction pooler
#   that does not track prepared statements)
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/../scripts/lib.sh"
sb_name=stress
cd "$sb_top"

db=${SB_STRESS_DB:-sandbox_store_stress}
clients=${SB_STRESS_CLIENTS:-32}
threads=${SB_STRESS_THREADS:-2}
rounds=${SB_STRESS_ROUNDS:-8}
txns=${SB_STRESS_TXNS:-25}
keys=${SB_STRESS_KEYS:-40}
create_ms=${SB_STRESS_CREATE_MS:-10}
query_mode=${SB_STRESS_QUERY_MODE:-prepared}
pgbench_conn=()
[ -n "${SB_STRESS_PGBENCH_HOST:-}" ] && pgbench_conn+=(-h "$SB_STRESS_PGBENCH_HOST")
[ -n "${SB_STRESS_PGBENCH_PORT:-}" ] && pgbench_conn+=(-p "$SB_STRESS_PGBENCH_PORT")
per_round=$((clients * txns))
total=$((per_round * rounds))

out=test/stress/out
mkdir -p "$out"
rm -f "$out"/pgbench.*.log

for tool in psql pgbench; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found"
done

psql_db() {
  psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"
}
sb_fresh_db "$db"

psql_db <<'SQL'
CREATE EXTENSION sandbox_store;
-- one row per 'create' answer, written in the creating transaction
CREATE TABLE creates (key text NOT NULL, client int NOT NULL, at timestamptz NOT NULL);
-- one row per ensure answer
CREATE TABLE ensures (
    key text NOT NULL, client int NOT NULL, action text NOT NULL,
    psid text, held bigint NOT NULL,
    asked_at timestamptz NOT NULL,  -- the ensure statement started
    at timestamptz NOT NULL);       -- the ensure returned
-- extension locks still held by a backend after its COMMIT
CREATE TABLE leaks (client int NOT NULL, n bigint NOT NULL);
SQL

show_log() { echo "--- $1 (last 30 lines)" >&2; tail -n 30 "$1" >&2; }

start=$SECONDS
tps=()
for round in $(seq 1 "$rounds"); do
  log=$out/pgbench.$round.log
  rc=0
  pgbench "${pgbench_conn[@]}" -n -c "$clients" -j "$threads" -t "$txns" -M "$query_mode" \
    -D round="$round" -D keys="$keys" -D create_ms="$create_ms" \
    -f test/stress/ensure.pgbench "$db" >"$log" 2>&1 || rc=$?

  if [ "$rc" -ne 0 ]; then
    show_log "$log"
    fail "round $round: pgbench exited with status $rc (a client aborted or pgbench failed)"
  fi
  if grep -Eq "client [0-9]+ aborted|ERROR:|FATAL:" "$log"; then
    show_log "$log"
    fail "round $round: pgbench reported an aborted client or a server error"
  fi
  if ! grep -Eq "^number of transactions actually processed: $per_round/$per_round\$" "$log"; then
    show_log "$log"
    fail "round $round: pgbench did not process all $per_round transactions"
  fi
  if grep -Eq "^number of failed transactions: " "$log" &&
     ! grep -Eq "^number of failed transactions: 0 " "$log"; then
    show_log "$log"
    fail "round $round: pgbench reports failed transactions"
  fi
  tps+=("$(sed -n 's/^tps = \([0-9]*\).*/\1/p' "$log" | head -n 1)")
done
elapsed=$((SECONDS - start))

# Every row this query returns is a violation.
problems=$(psql_db -At -v total="$total" <<'SQL'
WITH c AS (SELECT count(*) AS n, count(DISTINCT key) AS d FROM creates),
     i AS (SELECT count(*) AS n FROM sandbox_store.instances)
SELECT format('creates has %s rows but %s distinct keys: some key was created more than once', c.n, c.d)
  FROM c WHERE c.n <> c.d
UNION ALL
SELECT format('key %s was created %s times (clients %s)', key, count(*), string_agg(client::text, ',' ORDER BY at))
  FROM creates GROUP BY key HAVING count(*) > 1
UNION ALL
SELECT format('creates has %s distinct keys but sandbox_store.instances has %s rows', c.d, i.n)
  FROM c, i WHERE c.d <> i.n
UNION ALL
SELECT format('key %s is in sandbox_store.instances but no create was logged for it', key)
  FROM sandbox_store.instances AS s
 WHERE NOT EXISTS (SELECT FROM creates AS c WHERE c.key = s.key)
UNION ALL
SELECT format('key %s has provider_sandbox_id %s, not that of its creator (client %s)',
              s.key, s.provider_sandbox_id, c.client)
  FROM sandbox_store.instances AS s JOIN creates AS c USING (key)
 WHERE s.provider_sandbox_id <> 'sb-' || s.key || '-c' || c.client
UNION ALL
SELECT format('%s ensure answers were logged, expected %s', count(*), :'total')
  FROM ensures HAVING count(*) <> :'total'::bigint
UNION ALL
SELECT format('%s ensure answers were %s (expected only create and resume)', count(*), action)
  FROM ensures WHERE action NOT IN ('create', 'resume') GROUP BY action
UNION ALL
SELECT format('%s create answers were logged in ensures but %s in creates', e.n, c.n)
  FROM (SELECT count(*) AS n FROM ensures WHERE action = 'create') AS e, c WHERE e.n <> c.n
UNION ALL
SELECT format('%s resumes of key %s returned provider_sandbox_id %s instead of %s',
              count(*), e.key, coalesce(e.psid, 'NULL'), s.provider_sandbox_id)
  FROM ensures AS e JOIN sandbox_store.instances AS s USING (key)
 WHERE e.action = 'resume' AND e.psid IS DISTINCT FROM s.provider_sandbox_id
 GROUP BY e.key, e.psid, s.provider_sandbox_id
UNION ALL
SELECT format('%s resumes of key %s happened before its create', count(*), e.key)
  FROM ensures AS e JOIN creates AS c USING (key)
 WHERE e.action = 'resume' AND e.at <= c.at
 GROUP BY e.key
UNION ALL
SELECT format('%s ensure transactions held %s locks of the extension (expected exactly 1)', count(*), held)
  FROM ensures WHERE held <> 1 GROUP BY held
UNION ALL
SELECT format('client %s still held %s locks of the extension after COMMIT', client, n)
  FROM leaks
UNION ALL
SELECT 'no resume was asked for before its key''s create committed: the run did not exercise the race'
 WHERE NOT EXISTS (SELECT FROM ensures AS e JOIN creates AS c USING (key)
                    WHERE e.action = 'resume' AND e.asked_at < c.at)
UNION ALL
SELECT format('pg_locks still shows %s advisory locks of the extension', count(*))
  FROM sandbox_store.key_locks
HAVING count(*) > 0;
SQL
)
if [ -n "$problems" ]; then
  n_problems=$(echo "$problems" | wc -l)
  echo "$problems" | head -n 25 | sed 's/^/stress: violation: /' >&2
  [ "$n_problems" -le 25 ] || warn "... and $((n_problems - 25)) more violations"
  fail "$n_problems invariant violations (pgbench output in $out/)"
fi

summary=$(psql_db -At -F ' ' <<'SQL'
SELECT (SELECT count(*) FROM creates),
       (SELECT count(*) FROM ensures WHERE action = 'resume'),
       (SELECT count(*) FROM sandbox_store.instances),
       (SELECT count(*) FROM ensures AS e JOIN creates AS c USING (key)
         WHERE e.action = 'resume' AND e.asked_at < c.at)
SQL
)
read -r n_create n_resume n_rows n_raced <<<"$summary"
say "ok: $total/$total transactions ($rounds rounds x $clients clients x $txns," \
  "$keys new keys per round): $n_create creates, $n_resume resumes, $n_rows records," \
  "every key created exactly once, $n_raced resumes raced a create (waited, then saw it), no lock left;" \
  "${elapsed}s (tps per round: ${tps[*]})"

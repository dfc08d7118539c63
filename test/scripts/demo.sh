#!/usr/bin/env bash
# demo.sh - the sandbox_store showcase: two app servers, one thread, one sandbox.
#
# Run by `make demo` through with-cluster.sh, against the throwaway server in
# PGHOST/PGPORT, connected as a superuser (PGUSER).  It creates a database
# "demo" and a role "app" that holds only the two grants the README shows,
# and plays every "app server" as a separate psql session of that role, the
# way separate replicas would connect.
#
# Every claim the transcript makes is checked: the script exits non-zero
# ("DEMO CHECK FAILED") when the extension does not behave as shown.
set -euo pipefail

# shellcheck source=test/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
sb_name=                    # the transcript's lines stand alone
sb_fail="DEMO CHECK FAILED"

DB=demo
APP=app
KEY='acme/thread-T1/default/provider-x'
THREAD='thread-T1'
PROVIDER='provider-x'
CREATE_SECS=2            # how long the simulated provider takes to create a sandbox

sb_tempdir sandbox_store_demo; work=$sb_dir
bg_pids=()
kill_servers() {
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
sb_at_exit kill_servers

# psql as the superuser (the admin), and as the app role (an app server).
admin() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
app() { PGUSER=$APP psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
# appq SQL [psql options]: one statement as the app role, with :variables
# interpolated (psql -c does not interpolate them).
appq() { local sql=$1; shift; app "$@" <<<"$sql"; }

# check DESCRIPTION ACTUAL EXPECTED
check() { [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"; }
heading() { printf '\n== %s\n' "$*"; }

# Who holds (or waits for) a key's lock, as operators look it up: the view
# sandbox_store.key_locks shows the lock id sandbox_lock_id() gives.
HOLDER_SQL="SELECT pid, granted
  FROM sandbox_store.key_locks
 WHERE lock_id = sandbox_store.sandbox_lock_id(:'key')"

# holders KEY -> "pid:granted" lines (granted first), as the app role.
holders() {
  admin -A -t -d "$DB" -F: -v key="$1" <<SQL
SELECT pid, granted FROM ($HOLDER_SQL) h ORDER BY granted DESC, pid;
SQL
}

# The app server's code path, one run of an agent for one thread:
#   BEGIN; sandbox_ensure(key, run_id [, max_age])
#     create   -> the provider creates a sandbox, sandbox_upsert it
#     resume   -> resume the recorded sandbox (already stamped with the run)
#     recreate -> destroy the old sandbox, create a new one, sandbox_upsert it
#   COMMIT
# Each output line is "seconds|text" (seconds since the scene's t0, read
# with clock_timestamp() in SQL), the last one
# "RESULT|action|sandbox in the record|waited|new sandbox|backend pid".
cat >"$work/server.sql" <<'SQL'
\set ts 'round(EXTRACT(epoch FROM clock_timestamp()) - ' :t0 ', 2)'
\set who '''[server ' :name '] '''
\set new_sbx ''
SELECT :ts || '|' || :who || 'BEGIN; sandbox_ensure(key => ''' || :'key' || ''', run_id => ''' || :'run' || ''''
       || CASE WHEN :'max_age' = '' THEN '' ELSE ', max_age => ''' || :'max_age' || '''' END || ')';
BEGIN;
SELECT clock_timestamp() AS called_at \gset
SELECT e.action, coalesce(e.provider_sandbox_id, '') AS sbx,
       coalesce(e.latest_run_id, '') AS rec_run
  FROM sandbox_store.sandbox_ensure(key => :'key', run_id => :'run',
                                    max_age => nullif(:'max_age', '')::interval) e \gset
SELECT round(EXTRACT(epoch FROM clock_timestamp() - :'called_at'::timestamptz), 2) AS waited,
       :'action' = 'create' AS is_create, :'action' = 'resume' AS is_resume \gset
SELECT :ts || '|' || :who || 'ensure -> ' || :'action'
       || CASE :'action' WHEN 'create' THEN ''
                         WHEN 'resume' THEN ' ' || :'sbx'
                         ELSE ' with the old record ' || :'sbx' END
       || ' (waited ' || :'waited' || 's)'
       || CASE :'action' WHEN 'resume' THEN ', stamped latest_run_id = ' || :'rec_run' ELSE '' END;
\if :is_resume
SELECT :ts || '|' || :who || 'provider: resuming sandbox ' || :'sbx';
\else
\if :is_create
\else
SELECT :ts || '|' || :who || 'provider: destroying old sandbox ' || :'sbx';
\endif
SELECT 'sbx-' || left(md5(random()::text), 8) AS new_sbx \gset
SELECT :ts || '|' || :who || 'provider: creating sandbox ' || :'new_sbx' || ' (' || :create_secs || 's)';
SELECT pg_sleep(:create_secs) AS slept \gset
SELECT r.provider_sandbox_id AS stored
  FROM sandbox_store.sandbox_upsert(key => :'key', provider => :'provider',
                                    provider_sandbox_id => :'new_sbx', thread_id => :'thread',
                                    latest_run_id => :'run') r \gset
SELECT :ts || '|' || :who || 'sandbox_upsert(provider_sandbox_id => ''' || :'stored' || ''')';
\endif
SELECT :ts || '|' || :who || 'COMMIT';
COMMIT;
SELECT 'RESULT|' || :'action' || '|' || :'sbx' || '|' || :'waited' || '|'
       || CASE WHEN :'is_resume'::bool THEN '' ELSE :'new_sbx' END || '|' || pg_backend_pid();
SQL

# now -> seconds since the epoch, as the server's clock says.
now() { app -c "SELECT EXTRACT(epoch FROM clock_timestamp())"; }

# server NAME RUN [MAX_AGE] : the app server's code path, output to $work/NAME.out
server() {
  app -v name="$1" -v run="$2" -v max_age="${3:-}" -v t0="$t0" -v key="$KEY" \
      -v thread="$THREAD" -v provider="$PROVIDER" -v create_secs="$CREATE_SECS" \
      -f "$work/server.sql" >"$work/$1.out"
}

# Print the log lines of the given output files, merged in time order.
transcript() {
  cat "$@" | grep -v '^RESULT|' | sort -t'|' -k1,1n -s |
    while IFS='|' read -r ts text; do printf '  %6.2fs  %s\n' "$ts" "$text"; done
}

# result NAME FIELD: 1 action, 2 sandbox in the record, 3 waited, 4 new sandbox, 5 pid
result() { grep '^RESULT|' "$work/$1.out" | cut -d'|' -f$(($2 + 1)); }

record() {
  app -F' | ' -v key="$KEY" <<'SQL'
SELECT provider_sandbox_id, latest_run_id, thread_id, provider,
       to_char(updated_at, 'YYYY-MM-DD HH24:MI:SS.MS') AS updated_at
  FROM sandbox_store.sandbox_get(:'key');
SQL
}
show_record() {
  local r; r=$(record)
  if [ -z "$r" ]; then say "  record of $KEY: (none)"; else
    say "  record of $KEY:"
    say "    provider_sandbox_id | latest_run_id | thread_id | provider | updated_at"
    say "    $r"
  fi
}
field() { record | awk -F' [|] ' -v n="$1" '{ print $n }'; }

###########################################################################
say "sandbox_store demo: the database is the sandbox instance store and the per-thread lock"
say "$(admin -At -c "SELECT version()" | cut -d, -f1)"

heading "1. Setup: database, extension, and an app role with only the README's two grants"
admin -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
admin -d "$DB" -v app="$APP" <<'SQL'
SELECT NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'app') AS need_role \gset
\if :need_role
CREATE ROLE :"app" LOGIN;
\endif
CREATE EXTENSION sandbox_store;
GRANT USAGE ON SCHEMA sandbox_store TO :"app";
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO :"app";
SQL
say "  CREATE DATABASE $DB; CREATE EXTENSION sandbox_store;   -- version $(admin -d "$DB" -At -c "SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store'")"
say "  CREATE ROLE $APP LOGIN;"
say "  GRANT USAGE ON SCHEMA sandbox_store TO $APP;"
say "  GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO $APP;"
say "  every app server below is a psql session of role $APP ($(app -c 'SELECT current_user'), superuser: $(app -c 'SELECT rolsuper FROM pg_roles WHERE rolname = current_user'))"
direct=$(app -c "SELECT count(*) FROM sandbox_store.instances" 2>&1 || true)
case $direct in
  *"permission denied for table instances"*) say "  $APP reading the table directly: ${direct#*ERROR:  }  (as intended: only the functions)";;
  *) fail "role $APP can read sandbox_store.instances directly: $direct";;
esac

###########################################################################
heading "2. Two app servers race for thread T1 (one sandbox for the thread, key $KEY)"
say "  server A starts run-1; server B starts run-2 as soon as pg_locks shows A holding the key."
say "  The simulated provider takes ${CREATE_SECS}s to create a sandbox; nothing is committed before that."
t0=$(now)
server A run-1 & pidA=$!; bg_pids+=("$pidA")
# B starts "a moment after A": as soon as A holds the key's lock, so A is the
# one that creates (deterministic transcript).  Whoever waits is B.
for _ in $(seq 100); do
  [ -n "$(holders "$KEY")" ] && break
  sleep 0.05
done
[ -n "$(holders "$KEY")" ] || fail "server A never took the lock of $KEY"
server B run-2 & pidB=$!; bg_pids+=("$pidB")
# While B waits, the README's query shows who holds the key and who waits.
for _ in $(seq 100); do
  case $(holders "$KEY") in *:f*) break;; esac
  sleep 0.05
done
during_race=$(holders "$KEY")
wait "$pidA" || fail "server A failed: $(cat "$work/A.out")"
wait "$pidB" || fail "server B failed: $(cat "$work/B.out")"
bg_pids=()
transcript "$work/A.out" "$work/B.out"
say "  pg_locks while B waited (pid:granted): ${during_race//$'\n'/ }   (server A = pid $(result A 5), server B = pid $(result B 5))"

check "server A's action" "$(result A 1)" create
check "server B's action" "$(result B 1)" resume
created=$(result A 4)
check "sandbox server B resumed" "$(result B 2)" "$created"
awk -v w="$(result A 3)" 'BEGIN { exit !(w < 0.5) }' || fail "server A waited $(result A 3)s for a free key"
awk -v w="$(result B 3)" 'BEGIN { exit !(w >= 1.0) }' || fail "server B did not wait for A's lock (waited $(result B 3)s)"
check "pg_locks holder and waiter during the race" "$during_race" "$(printf '%s:t\n%s:f' "$(result A 5)" "$(result B 5)")"
say "  => exactly one create and one resume; B waited for A and resumed A's $created"
show_record
check "record's sandbox" "$(field 1)" "$created"
check "record's latest_run_id" "$(field 2)" run-2

###########################################################################
heading "3. A later run (run-3) resumes the same sandbox"
before=$(field 5)
t0=$(now)
server A run-3
transcript "$work/A.out"
check "run-3's action" "$(result A 1)" resume
check "run-3's sandbox" "$(result A 2)" "$created"
show_record
check "record's latest_run_id" "$(field 2)" run-3
[ "$(field 5)" \> "$before" ] || fail "updated_at not advanced ($before -> $(field 5))"
say "  => same sandbox $created, latest_run_id = run-3, updated_at moved from $before to $(field 5)"

###########################################################################
heading "4. A stale record is recreated"
say "  The thread sat idle: to play two idle hours without waiting them, the record is"
say "  rewritten with sandbox_upsert(..., latest_run_id => 'run-3', updated_at => now() - interval '2 hours')."
app -v key="$KEY" -v thread="$THREAD" -v provider="$PROVIDER" -v sbx="$created" >/dev/null <<'SQL'
SELECT sandbox_store.sandbox_upsert(key => :'key', provider => :'provider', provider_sandbox_id => :'sbx',
       thread_id => :'thread', latest_run_id => 'run-3',
       updated_at => now() - '2 hours'::interval);
SQL
show_record
say "  run-4 only resumes sandboxes used within the last hour (max_age => '1 hour'):"
t0=$(now)
server A run-4 '1 hour'
transcript "$work/A.out"
check "run-4's action" "$(result A 1)" recreate
check "old sandbox handed to run-4" "$(result A 2)" "$created"
recreated=$(result A 4)
[ "$recreated" != "$created" ] || fail "recreate kept the old sandbox id"
show_record
check "record's sandbox" "$(field 1)" "$recreated"
check "record's latest_run_id" "$(field 2)" run-4
say "  => run-4 got the old record ($created) to destroy, and recorded the new $recreated"

###########################################################################
heading "5. sandbox_delete"
missing='acme/thread-T9/default/provider-x'
r=$(appq "SELECT sandbox_store.sandbox_delete(key => :'key')" -v key="$missing")
say "  sandbox_delete('$missing') -> $r   (no record: a no-op, not an error)"
check "delete of a missing key" "$r" f
r=$(appq "SELECT sandbox_store.sandbox_delete(key => :'key')" -v key="$KEY")
say "  sandbox_delete('$KEY') -> $r"
check "delete of the key" "$r" t
show_record
check "record after delete" "$(record)" ""

###########################################################################
heading "6. Who holds a key? (sandbox_store.key_locks)"
lock_id=$(appq "SELECT sandbox_store.sandbox_lock_id(:'key')" -v key="$KEY")
say "  sandbox_lock_id('$KEY') = $lock_id"
say "  An operator's query (the view is granted to operators, not to the app role):"
printf '    %s\n' "${HOLDER_SQL//$'\n'/$'\n'    }"
say "  server C: BEGIN; sandbox_ensure(...) -> create; it records sbx-doomed with sandbox_upsert, then its"
say "  run fails before COMMIT (ROLLBACK after 3s).  Meanwhile server D calls sandbox_delete on the same key."
app >"$work/C.out" -v key="$KEY" -v thread="$THREAD" -v provider="$PROVIDER" <<'SQL' & pidC=$!; bg_pids+=("$pidC")
BEGIN;
SELECT pg_backend_pid() || ' ' || e.action FROM sandbox_store.sandbox_ensure(key => :'key', run_id => 'run-6') e;
SELECT provider_sandbox_id AS stored FROM sandbox_store.sandbox_upsert(key => :'key', provider => :'provider',
       provider_sandbox_id => 'sbx-doomed', thread_id => :'thread', latest_run_id => 'run-6') \gset
SELECT pg_sleep(3) AS slept \gset
ROLLBACK;
SQL
for _ in $(seq 100); do [ -n "$(holders "$KEY")" ] && break; sleep 0.05; done
held=$(holders "$KEY")
say "  while C holds it:            pid:granted = ${held//$'\n'/ }"
app >"$work/D.out" -F' ' -v key="$KEY" <<'SQL' & pidD=$!; bg_pids+=("$pidD")
SELECT clock_timestamp() AS called_at \gset
SELECT sandbox_store.sandbox_delete(key => :'key') AS deleted \gset
SELECT pg_backend_pid(), :'deleted', round(EXTRACT(epoch FROM clock_timestamp() - :'called_at'::timestamptz), 2);
SQL
for _ in $(seq 100); do case $(holders "$KEY") in *:f*) break;; esac; sleep 0.05; done
queued=$(holders "$KEY")
say "  while D waits behind C:      pid:granted = ${queued//$'\n'/ }"
wait "$pidC" || fail "server C failed"
wait "$pidD" || fail "server D failed"
bg_pids=()
after=$(holders "$KEY")
say "  after C's ROLLBACK:          pid:granted = ${after:-(no rows: nobody holds it)}"
read -r pid_c action_c <"$work/C.out"
read -r pid_d deleted_d waited_d <"$work/D.out"
say "  server C (pid $pid_c): ensure -> $action_c, upsert, ROLLBACK"
say "  server D (pid $pid_d): sandbox_delete -> $deleted_d (waited ${waited_d}s for C; C's uncommitted record never existed for D)"
check "server C's action" "$action_c" create
check "holder shown by pg_locks" "$held" "$pid_c:t"
check "holder and waiter shown by pg_locks" "$queued" "$(printf '%s:t\n%s:f' "$pid_c" "$pid_d")"
check "locks after the holder ended" "$after" ""
check "server D's delete after C rolled back" "$deleted_d" f
awk -v w="$waited_d" 'BEGIN { exit !(w >= 1.0) }' || fail "server D's sandbox_delete did not wait for C's lock (waited ${waited_d}s)"
check "record after C rolled back" "$(record)" ""

###########################################################################
KEY2='acme/thread-T2/default/provider-x'
THREAD2='thread-T2'
LEASE_SECS=2             # server A's lease in scene 7
B_CREATE_SECS=0.5        # how long the simulated provider takes for server B in scene 7
heading "7. Lease mode: a frozen server is fenced off (thread T2, key $KEY2)"
say "  No transaction stays open while a provider works: sandbox_ensure(..., lease => ...) commits a"
say "  claim (fence, owner_token, lease_expires_at) and returns.  Server A claims with a ${LEASE_SECS}-second lease,"
say "  then freezes before it records its sandbox; B takes over once A's lease has expired."

# pg_temp.attempt(statement): run it, return 'ok|<first column>' or
# 'ERROR|<sqlstate>|<message>|<detail>' (an app server's try/catch).  A
# temporary function: the app role needs no grant beyond the README's two.
cat >"$work/attempt.sql" <<'SQL'
CREATE FUNCTION pg_temp.attempt(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; st text; msg text; det text;
BEGIN
  EXECUTE stmt INTO r;
  RETURN 'ok|' || coalesce(r, '');
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN 'ERROR|' || st || '|' || msg || '|' || coalesce(det, '');
END $$;
SQL

# Server A: claims in autocommit, starts creating a sandbox, freezes (its
# psql session sits idle while a shell loop waits for $SB_DEMO_WAKE, at most
# 30s, and not once the demo's work directory is gone), then
# tries to record its sandbox with its fence and to release its claim.
# Last line: RESULT|action|fence|lease_expires_at (epoch)|sandbox|upsert outcome|released
cat >"$work/lease_a.sql" <<'SQL'
\set ts 'round(EXTRACT(epoch FROM clock_timestamp()) - ' :t0 ', 2)'
\set who '''[server A] '''
SELECT :ts || '|' || :who || 'sandbox_ensure(key => ''' || :'key' || ''', run_id => ''run-A'', lease => '''
       || :'lease' || ''')   -- autocommit, no BEGIN';
SELECT e.action AS a_action, e.fence AS a_fence, e.owner_token AS a_token,
       EXTRACT(epoch FROM e.lease_expires_at) AS a_until, clock_timestamp() AS a_claimed_at
  FROM sandbox_store.sandbox_ensure(key => :'key', run_id => 'run-A', lease => :'lease'::interval) e \gset
SELECT :ts || '|' || :who || 'ensure -> ' || :'a_action' || ', fence ' || :'a_fence'
       || ', claim until t = ' || round(:a_until - :t0, 2) || 's; the claim is committed, no transaction stays open';
SELECT 'sbx-' || left(md5(random()::text), 8) AS a_sbx \gset
SELECT :ts || '|' || :who || 'provider: creating sandbox ' || :'a_sbx' || ' ... and server A freezes (a long pause)';
\! touch "$SB_DEMO_FROZEN"; i=0; while [ ! -e "$SB_DEMO_WAKE" ] && [ -e "$SB_DEMO_FROZEN" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
SELECT :ts || '|' || :who || 'wakes up, ' || round(EXTRACT(epoch FROM clock_timestamp() - :'a_claimed_at'::timestamptz), 2)
       || 's after its claim; sandbox_upsert(..., provider_sandbox_id => ''' || :'a_sbx' || ''', fence => ' || :'a_fence' || ')';
SELECT pg_temp.attempt(format(
         'SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert(key => %L, provider => %L,'
         ' provider_sandbox_id => %L, thread_id => %L, latest_run_id => %L, fence => %s)',
         :'key', :'provider', :'a_sbx', :'thread', 'run-A', :'a_fence')) AS a_try \gset
SELECT split_part(:'a_try', '|', 1) = 'ok' AS a_stored,
       CASE split_part(:'a_try', '|', 1) WHEN 'ok' THEN 'ok' ELSE split_part(:'a_try', '|', 2) END AS a_outcome \gset
\if :a_stored
SELECT :ts || '|' || :who || '-> stored ' || split_part(:'a_try', '|', 2);
\else
SELECT :ts || '|' || :who || '-> ERROR ' || split_part(:'a_try', '|', 2) || ': ' || split_part(:'a_try', '|', 3);
SELECT :ts || '|' || :who || '   DETAIL: ' || split_part(:'a_try', '|', 4);
\endif
SELECT sandbox_store.sandbox_release(key => :'key', owner_token => :'a_token') AS a_released \gset
SELECT :ts || '|' || :who || 'sandbox_release(key, A''s owner_token) -> ' || :'a_released'
       || CASE WHEN :'a_released' THEN '' ELSE '   (stale token: B''s claim is not A''s to end)' END;
\if :a_stored
\else
SELECT :ts || '|' || :who || 'provider: destroying its orphan sandbox ' || :'a_sbx';
\endif
SELECT 'RESULT|' || :'a_action' || '|' || :'a_fence' || '|' || :'a_until' || '|' || :'a_sbx' || '|'
       || :'a_outcome' || '|' || :'a_released';
SQL

# Server B: tries without waiting, then with a bounded wait; creates and
# records its sandbox with its fence, then releases its claim.
# Last line: RESULT|first try outcome|its detail|action|fence|returned at (epoch)|waited|sandbox|stored|released
cat >"$work/lease_b.sql" <<'SQL'
\set ts 'round(EXTRACT(epoch FROM clock_timestamp()) - ' :t0 ', 2)'
\set who '''[server B] '''
SELECT :ts || '|' || :who || 'sandbox_ensure(key => ''' || :'key' || ''', run_id => ''run-B'', wait => ''0'', lease => ''30 seconds'')';
SELECT pg_temp.attempt(format(
         'SELECT action FROM sandbox_store.sandbox_ensure(key => %L, run_id => %L, wait => %L, lease => %L)',
         :'key', 'run-B', '0', '30 seconds')) AS b_try \gset
SELECT split_part(:'b_try', '|', 1) = 'ok' AS b_got_it,
       CASE split_part(:'b_try', '|', 1) WHEN 'ok' THEN 'ok' ELSE split_part(:'b_try', '|', 2) END AS b_try_outcome,
       split_part(:'b_try', '|', 4) AS b_try_detail \gset
\if :b_got_it
SELECT :ts || '|' || :who || '-> ' || split_part(:'b_try', '|', 2) || '   (UNEXPECTED: A''s claim is live)';
\else
SELECT :ts || '|' || :who || '-> ERROR ' || split_part(:'b_try', '|', 2) || ': ' || split_part(:'b_try', '|', 3);
SELECT :ts || '|' || :who || '   DETAIL: ' || :'b_try_detail';
SELECT :ts || '|' || :who || 'sandbox_ensure(key => ''' || :'key' || ''', run_id => ''run-B'', wait => ''5 seconds'', lease => ''30 seconds'')';
SELECT clock_timestamp() AS b_called_at \gset
SELECT e.action AS b_action, e.fence AS b_fence, e.owner_token AS b_token,
       EXTRACT(epoch FROM clock_timestamp()) AS b_returned,
       round(EXTRACT(epoch FROM clock_timestamp() - :'b_called_at'::timestamptz), 2) AS b_waited
  FROM sandbox_store.sandbox_ensure(key => :'key', run_id => 'run-B', wait => '5 seconds',
                                    lease => '30 seconds') e \gset
SELECT :ts || '|' || :who || 'ensure -> ' || :'b_action' || ', fence ' || :'b_fence' || ' (waited ' || :'b_waited'
       || 's, until A''s lease expired; A recorded nothing, so: create)';
SELECT 'sbx-' || left(md5(random()::text), 8) AS b_sbx \gset
SELECT :ts || '|' || :who || 'provider: creating sandbox ' || :'b_sbx' || ' (' || :b_create_secs || 's, no transaction open)';
\! sleep "$SB_DEMO_B_CREATE_SECS"
SELECT r.provider_sandbox_id AS b_stored
  FROM sandbox_store.sandbox_upsert(key => :'key', provider => :'provider', provider_sandbox_id => :'b_sbx',
                                    thread_id => :'thread', latest_run_id => 'run-B', fence => :b_fence) r \gset
SELECT :ts || '|' || :who || 'sandbox_upsert(..., provider_sandbox_id => ''' || :'b_stored' || ''', fence => ' || :'b_fence' || ') -> stored';
SELECT sandbox_store.sandbox_release(key => :'key', owner_token => :'b_token') AS b_released \gset
SELECT :ts || '|' || :who || 'sandbox_release(key, B''s owner_token) -> ' || :'b_released';
SELECT 'RESULT|' || :'b_try_outcome' || '|' || :'b_try_detail' || '|' || :'b_action' || '|' || :'b_fence' || '|'
       || :'b_returned' || '|' || :'b_waited' || '|' || :'b_sbx' || '|' || :'b_stored' || '|' || :'b_released';
\endif
SQL

# op SECONDS TEXT: a line of the operator (the superuser watching), at SECONDS on the scene's clock.
op() { local ts=$1; shift; printf '%s|[operator] %s\n' "$ts" "$*" >>"$work/OP.out"; }
record2() {
  app -F' | ' -v key="$KEY2" <<'SQL'
SELECT provider_sandbox_id, latest_run_id, thread_id, provider,
       to_char(updated_at, 'YYYY-MM-DD HH24:MI:SS.MS') AS updated_at
  FROM sandbox_store.sandbox_get(:'key');
SQL
}
# claims_of KEY: the key's row in the claims view, as one line (empty if none).
CLAIMS_SQL="SELECT string_agg(key || ' | fence ' || fence || ' | owner_token ' || owner_token
                         || ' | lease_expires_at ' || to_char(lease_expires_at, 'HH24:MI:SS.MS'), '; ')
  FROM sandbox_store.claims WHERE key = :'key'"
claims_of() { admin -d "$DB" -At -v key="$1" <<<"$CLAIMS_SQL;"; }

: >"$work/OP.out"
rm -f "$work/frozen-A" "$work/wake-A"
t0=$(now)
scene_start=$(date +%s.%N)
PGAPPNAME='demo server A' SB_DEMO_FROZEN="$work/frozen-A" SB_DEMO_WAKE="$work/wake-A" \
  app -v t0="$t0" -v key="$KEY2" -v thread="$THREAD2" -v provider="$PROVIDER" -v lease="$LEASE_SECS seconds" \
      -f "$work/attempt.sql" -f "$work/lease_a.sql" >"$work/A.out" & pidA=$!; bg_pids+=("$pidA")
for _ in $(seq 200); do [ -e "$work/frozen-A" ] && break; sleep 0.02; done
[ -e "$work/frozen-A" ] || fail "server A never took its claim"

# While A is frozen: the claims view shows its claim; A's session holds no
# transaction (nothing pins an xid, vacuum is not held back).  One query.
observed=$(admin -d "$DB" -At -F'|' -v t0="$t0" -v key="$KEY2" <<SQL
SELECT round(EXTRACT(epoch FROM clock_timestamp()) - :t0, 2), coalesce(($CLAIMS_SQL), ''),
       a.pid, a.state, coalesce(a.xact_start::text, 'NULL'), coalesce(a.backend_xid::text, 'NULL'),
       coalesce(a.backend_xmin::text, 'NULL')
  FROM pg_catalog.pg_stat_activity a WHERE a.application_name = 'demo server A';
SQL
)
IFS='|' read -r obs_ts claim_a a_pid a_state a_xact a_xid a_xmin <<<"${observed//' | '/' / '}"
claim_a=${claim_a//' / '/' | '}
op "$obs_ts" "SELECT * FROM sandbox_store.claims -> ${claim_a:-(no rows)}"
op "$obs_ts" "pg_stat_activity of server A (pid $a_pid): state = $a_state, xact_start = $a_xact, backend_xid = $a_xid, backend_xmin = $a_xmin"
op "$obs_ts" "   => A is frozen with no open transaction: nothing pins an xid"

PGAPPNAME='demo server B' SB_DEMO_B_CREATE_SECS="$B_CREATE_SECS" \
  app -v t0="$t0" -v key="$KEY2" -v thread="$THREAD2" -v provider="$PROVIDER" -v b_create_secs="$B_CREATE_SECS" \
      -f "$work/attempt.sql" -f "$work/lease_b.sql" >"$work/B.out" || fail "server B failed: $(cat "$work/B.out")"
touch "$work/wake-A"   # A's pause is over
wait "$pidA" || fail "server A failed: $(cat "$work/A.out")"
bg_pids=()
transcript "$work/A.out" "$work/B.out" "$work/OP.out"
claims_after=$(claims_of "$KEY2")
say "  sandbox_store.claims for the key afterwards: ${claims_after:-(no rows: no live claim)}"

fence_a=$(result A 2); fence_b=$(result B 4); sbx_b=$(result B 7)
check "server A's action" "$(result A 1)" create
case $claim_a in
  "$KEY2 | fence $fence_a | owner_token "*) ;;
  *) fail "claims view while A's claim was live: '$claim_a'";;
esac
check "server A's session state while frozen" "$a_state" idle
check "server A's transaction while frozen (xact_start|backend_xid|backend_xmin)" "$a_xact|$a_xid|$a_xmin" "NULL|NULL|NULL"
check "server B's try without waiting" "$(result B 1)" 55P03
case $(result B 2) in
  "The key is claimed (fence $fence_a) until "*) ;;
  *) fail "detail of B's 55P03: '$(result B 2)'";;
esac
check "server B's action after A's lease expired" "$(result B 3)" create
[ "$fence_b" -gt "$fence_a" ] || fail "B's fence $fence_b is not greater than A's $fence_a"
awk -v r="$(result B 5)" -v u="$(result A 3)" 'BEGIN { exit !(r >= u) }' \
  || fail "B got the key (epoch $(result B 5)) before A's lease expired (epoch $(result A 3))"
check "server B's fenced upsert" "$(result B 8)" "$sbx_b"
check "server B's release" "$(result B 9)" t
check "server A's fenced upsert after the takeover" "$(result A 5)" SB001
check "server A's late release" "$(result A 6)" f
check "live claims on the key at the end" "$claims_after" ""
r=$(record2)
say "  record of $KEY2:"
say "    provider_sandbox_id | latest_run_id | thread_id | provider | updated_at"
say "    $r"
check "record's sandbox" "$(awk -F' [|] ' '{ print $1 }' <<<"$r")" "$sbx_b"
check "record's latest_run_id" "$(awk -F' [|] ' '{ print $2 }' <<<"$r")" run-B
say "  => A's claim (fence $fence_a) expired while it was frozen; B took over with fence $fence_b and recorded"
say "     $sbx_b; A's late upsert was refused with SB001 and the record is B's, intact."
say "  (scene 7 took $(awk -v s="$scene_start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')s)"

heading "Every check passed."

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

DB=demo
APP=app
KEY='acme/thread-T1/default/provider-x'
THREAD='thread-T1'
PROVIDER='provider-x'
CREATE_SECS=2            # how long the simulated provider takes to create a sandbox

work=$(mktemp -d "${TMPDIR:-/tmp}/sandbox_store_demo.XXXXXX")
bg_pids=()
cleanup() {
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# psql as the superuser (the admin), and as the app role (an app server).
admin() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
app() { PGUSER=$APP psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
# appq SQL [psql options]: one statement as the app role, with :variables
# interpolated (psql -c does not interpolate them).
appq() { local sql=$1; shift; app "$@" <<<"$sql"; }

fail() { echo "DEMO CHECK FAILED: $*" >&2; exit 1; }
# check DESCRIPTION ACTUAL EXPECTED
check() { [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"; }
say() { printf '%s\n' "$*"; }
heading() { printf '\n== %s\n' "$*"; }

# The query the README documents: who holds (or waits for) a key's lock.
# pg_locks shows the 64-bit lock id as classid (high 32 bits) and objid (low
# 32 bits), both unsigned; sandbox_lock_id() is a signed bigint, so mask both
# halves to 32 bits instead of rebuilding the id (correct for negative ids).
HOLDER_SQL="SELECT l.pid, l.granted
  FROM pg_catalog.pg_locks l
 WHERE l.locktype = 'advisory' AND l.objsubid = 21314
   AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
   AND l.classid::pg_catalog.int8 = (sandbox_store.sandbox_lock_id(:'key') >> 32) & 4294967295
   AND l.objid::pg_catalog.int8 = sandbox_store.sandbox_lock_id(:'key') & 4294967295"

# holders KEY -> "pid:granted" lines (granted first), as the app role.
holders() {
  app -F: -v key="$1" <<SQL
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
heading "6. Who holds a key? (pg_locks)"
lock_id=$(appq "SELECT sandbox_store.sandbox_lock_id(:'key')" -v key="$KEY")
say "  sandbox_lock_id('$KEY') = $lock_id"
case $lock_id in -*) say "  (negative as a bigint: the query masks each half to 32 bits, as pg_locks shows them unsigned)";; esac
say "  The README's query:"
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

heading "Every check passed."

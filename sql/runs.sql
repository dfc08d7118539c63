\i sql/include/fresh.sql
-- runs: runs and run logs (docs/reference.md, "Runs and run logs").
-- Single-session behaviour of every function: the record's JSON shape, the
-- patch rules, the driver epoch fence, the log's append, upsert, close,
-- read and prune rules, every SQLSTATE once (and that a refused call
-- changes nothing), the notification, and the app role's privileges.  The
-- same output in both editions.
SET client_min_messages = warning;
-- pg_temp.why(q): 'ok', or the error's SQLSTATE, message and detail.
CREATE FUNCTION pg_temp.why(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  m text;
  d text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || m || coalesce(' / ' || nullif(d, ''), '');
END $$;
-- pg_temp.state(): everything the tables hold (to show a refused call
-- changed nothing).
CREATE FUNCTION pg_temp.state() RETURNS text LANGUAGE sql AS $$
  SELECT md5(coalesce((SELECT string_agg(r::text, ',' ORDER BY r.run_id) FROM sandbox_store.runs r), '')
             || coalesce((SELECT string_agg(l::text, ',' ORDER BY l.run_id) FROM sandbox_store.run_logs l), '')
             || coalesce((SELECT string_agg(e::text, ',' ORDER BY e.run_id, e.seq) FROM sandbox_store.run_log_entries e), ''))
$$;

--
-- RunStore.  A record has runId, threadId, status and startedAt always, the
-- other fields only when set (absent, never null).
--
SELECT sandbox_store.run_create_or_resume('r1', 't1', 1000);
SELECT sandbox_store.run_create_or_resume('r2', 't1', 2000, 'interrupted');
-- The existing record, unchanged: the other arguments are ignored.
SELECT sandbox_store.run_create_or_resume('r1', 'other-thread', 5, 'failed');
SELECT sandbox_store.run_get('r1'), sandbox_store.run_get('unknown') AS unknown;
-- Every field set, driverEpoch overwritten (raised), then every field
-- cleared with null, driverEpoch too (status stays): TanStack AI's RunStore
-- conformance case, which clears a field given as undefined.  false is a
-- value, not a clear.
SELECT sandbox_store.run_update('r2', '{"status": "running", "finishedAt": 2500.25, "error": {"message": "boom", "code": "E1"},
  "usage": {"tokens": 12}, "sandboxKey": "sbx/1", "detachedSince": 2400, "cancelRequested": true, "driverEpoch": 1}');
SELECT sandbox_store.run_get('r2');
SELECT sandbox_store.run_update('r2', '{"driverEpoch": 2, "cancelRequested": false}');
SELECT sandbox_store.run_get('r2');
SELECT sandbox_store.run_update('r2', '{"finishedAt": null, "error": null, "usage": null, "sandboxKey": null,
  "detachedSince": null, "cancelRequested": null, "driverEpoch": null}');
SELECT sandbox_store.run_get('r2');
-- An absent key leaves its field; an unknown run: false, nothing made.
SELECT sandbox_store.run_update('r2', '{}'), sandbox_store.run_update('nope', '{"status": "failed"}') AS unknown_run;
SELECT count(*) AS runs FROM sandbox_store.runs;
-- Numbers are the JavaScript numbers given, exactly, whatever the session's
-- extra_float_digits.
SET extra_float_digits = 0;
SELECT sandbox_store.run_create_or_resume('f1', 't-float', 0.1::float8 + 0.2::float8) ->> 'startedAt' AS point_three;
SELECT sandbox_store.run_update('f1', '{"finishedAt": 1e300, "detachedSince": 0.30000000000000004}');
SELECT (r ->> 'startedAt')::float8 = 0.1::float8 + 0.2::float8 AS started_exact,
       (r ->> 'finishedAt')::float8 = 1e300::float8 AS finished_exact,
       (r ->> 'detachedSince')::float8 = 0.1::float8 + 0.2::float8 AS detached_exact,
       jsonb_typeof(r -> 'finishedAt') AS kind
  FROM sandbox_store.run_get('f1') r;
RESET extra_float_digits;
SELECT sandbox_store.run_create_or_resume('f2', 't-float', -1.5e-7) ->> 'startedAt' AS small;
-- listByThread: by startedAt, then run id as bytes; findActiveRun: the
-- running run with the latest startedAt (ties: the greatest run id).
SELECT sandbox_store.run_create_or_resume(id, 't2', s, st) ->> 'runId'
  FROM (VALUES ('b', 10, 'running'), ('B', 10, 'running'), ('a', 20, 'completed'), ('c', 5, 'running')) v(id, s, st);
SELECT r ->> 'runId' AS run, r ->> 'startedAt' AS started FROM sandbox_store.run_list_by_thread('t2') r;
SELECT sandbox_store.run_find_active('t2') ->> 'runId' AS active,
       sandbox_store.run_find_active('t-none') AS none;
-- listReclaimable: running, detached at now - ttl or earlier (inclusive),
-- by detachedSince.
SELECT sandbox_store.run_update(id, jsonb_build_object('detachedSince', d))
  FROM (VALUES ('b', 100), ('B', 50), ('c', 101), ('a', 10)) v(id, d);
SELECT r ->> 'runId' AS run FROM sandbox_store.run_list_reclaimable(150, 50) r;
SELECT count(*) AS none FROM sandbox_store.run_list_reclaimable(150, 100.5) r;

--
-- The fence.  run_claim gives the run a new driver epoch, greater than any
-- it had (drawn from fence_seq, so its value depends on the claims made
-- before: pg_temp.e(n) is the n-th epoch this test kept).
--
CREATE TEMP TABLE epochs (n int PRIMARY KEY, epoch int8 NOT NULL);
CREATE FUNCTION pg_temp.e(n int) RETURNS int8 LANGUAGE sql AS $$ SELECT epoch FROM epochs WHERE epochs.n = e.n $$;
-- pg_temp.whye(q): pg_temp.why(q), each kept epoch written En.
CREATE FUNCTION pg_temp.whye(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r text := pg_temp.why(q);
  k record;
BEGIN
  FOR k IN SELECT n, epoch FROM epochs ORDER BY length(epoch::text) DESC, n LOOP
    r := regexp_replace(r, '(^|[^0-9A-Za-z])' || k.epoch || '([^0-9A-Za-z]|$)', '\1E' || k.n || '\2', 'g');
  END LOOP;
  RETURN r;
END $$;
SELECT sandbox_store.run_create_or_resume('d1', 't-drv', 1) ->> 'runId';
SELECT sandbox_store.run_log_append('d1', '[{"n": 1}]') AS unfenced_before_claim;
-- A write carrying an epoch to a run never claimed is refused.
SELECT pg_temp.why($$SELECT sandbox_store.run_update('d1', '{"usage": {"n": 1}}', 1)$$) AS update_never_claimed;
INSERT INTO epochs VALUES (1, sandbox_store.run_claim('d1'));
INSERT INTO epochs VALUES (2, sandbox_store.run_claim('d1'));
SELECT pg_temp.e(1) >= 1 AS first, pg_temp.e(2) > pg_temp.e(1) AS second_greater,
       (sandbox_store.run_get('d1') -> 'driverEpoch')::int8 = pg_temp.e(2) AS stored;
SELECT pg_temp.state() AS before \gset
-- A stale epoch, or none, is refused from then on (SB001), on every write.
SELECT pg_temp.whye($$SELECT sandbox_store.run_log_append('d1', '[{"n": 2}]', pg_temp.e(1))$$) AS stale_append;
SELECT pg_temp.whye($$SELECT sandbox_store.run_log_append('d1', '[{"n": 2}]')$$) AS unfenced_append;
SELECT pg_temp.whye($$SELECT sandbox_store.run_log_upsert('d1', '{2}', '[{"n": 2}]', pg_temp.e(1))$$) AS stale_upsert,
       pg_temp.whye($$SELECT sandbox_store.run_log_upsert('d1', '{2}', '[{"n": 2}]')$$) AS unfenced_upsert;
SELECT pg_temp.whye($$SELECT sandbox_store.run_log_close('d1', pg_temp.e(1))$$) AS stale_close,
       pg_temp.whye($$SELECT sandbox_store.run_log_close('d1')$$) AS unfenced_close;
SELECT pg_temp.whye($$SELECT sandbox_store.run_update('d1', '{"status": "failed"}', pg_temp.e(1))$$) AS stale_update;
SELECT pg_temp.whye($$SELECT sandbox_store.run_log_append('d1', '[]', pg_temp.e(1))$$) AS stale_empty_append;
-- An epoch to a run never claimed, or without a record.
SELECT pg_temp.why($$SELECT sandbox_store.run_log_append('r1', '[{"n": 1}]', 1)$$) AS never_claimed;
SELECT pg_temp.why($$SELECT sandbox_store.run_log_append('no-record', '[{"n": 1}]', 1)$$) AS no_record;
-- driverEpoch through a patch: lower is refused ...
SELECT pg_temp.whye(format($$SELECT sandbox_store.run_update('d1', '{"driverEpoch": %s}')$$, pg_temp.e(1))) AS lower;
SELECT pg_temp.state() = :'before' AS nothing_changed;
SELECT (SELECT closed FROM sandbox_store.run_log_status('d1')) AS still_open;
-- ... the current epoch works; the same, or one above every epoch the run
-- had, is accepted (a raise is a claim: the older epoch's writes are
-- refused after it).
SELECT sandbox_store.run_log_append('d1', '[{"n": 2}, {"n": 3}]', pg_temp.e(2)) AS current_append;
INSERT INTO epochs VALUES (3, pg_temp.e(2) + 5);
SELECT sandbox_store.run_update('d1', jsonb_build_object('driverEpoch', pg_temp.e(2), 'sandboxKey', 'k'), pg_temp.e(2)) AS same,
       sandbox_store.run_update('d1', jsonb_build_object('driverEpoch', pg_temp.e(3))) AS raised;
SELECT pg_temp.whye($$SELECT sandbox_store.run_log_append('d1', '[{"n": 4}]', pg_temp.e(2))$$) AS after_raise;
-- The next claim is above the raised epoch.
INSERT INTO epochs VALUES (4, sandbox_store.run_claim('d1'));
SELECT pg_temp.e(4) > pg_temp.e(3) AS next_claim_above;
-- An unfenced update is accepted (RunStore.update of the middleware).
SELECT sandbox_store.run_update('d1', '{"cancelRequested": true}') AS unfenced_update;
SELECT sandbox_store.run_get('d1') - 'driverEpoch' AS record,
       (sandbox_store.run_get('d1') -> 'driverEpoch')::int8 = pg_temp.e(4) AS epoch_current;

-- driverEpoch cleared (null): the run has no current epoch until the next
-- claim, and keeps the highest it had.  A cancel request without an epoch
-- is accepted while a driver holds the run; the clear too.
SELECT sandbox_store.run_create_or_resume('d2', 't-drv', 2) ->> 'runId';
INSERT INTO epochs VALUES (5, sandbox_store.run_claim('d2'));
SELECT sandbox_store.run_log_append('d2', '[{"n": 1}]', pg_temp.e(5)) AS appended,
       sandbox_store.run_update('d2', '{"cancelRequested": true}') AS cancel_requested,
       sandbox_store.run_update('d2', '{"driverEpoch": null}') AS cleared;
SELECT sandbox_store.run_get('d2');
SELECT pg_temp.state() AS before \gset
-- After a clear, every write carrying an epoch is refused (the old one
-- too), and so is every log write without one: the run was claimed.
SELECT pg_temp.whye($$SELECT sandbox_store.run_update('d2', '{"status": "failed"}', pg_temp.e(5))$$) AS old_update;
SELECT pg_temp.whye($$SELECT sandbox_store.run_log_append('d2', '[{"n": 2}]', pg_temp.e(5))$$) AS old_append,
       pg_temp.whye($$SELECT sandbox_store.run_log_append('d2', '[{"n": 2}]')$$) AS unfenced_append;
SELECT pg_temp.whye($$SELECT sandbox_store.run_log_upsert('d2', '{2}', '[{"n": 2}]', pg_temp.e(5))$$) AS old_upsert,
       pg_temp.whye($$SELECT sandbox_store.run_log_upsert('d2', '{2}', '[{"n": 2}]')$$) AS unfenced_upsert;
SELECT pg_temp.whye($$SELECT sandbox_store.run_log_close('d2', pg_temp.e(5))$$) AS old_close,
       pg_temp.whye($$SELECT sandbox_store.run_log_close('d2')$$) AS unfenced_close;
-- A driverEpoch patch at or below the highest epoch the run had is refused:
-- it could let a superseded driver write again.
SELECT pg_temp.whye(format($$SELECT sandbox_store.run_update('d2', '{"driverEpoch": %s}')$$, pg_temp.e(5))) AS at_the_highest;
SELECT split_part(pg_temp.why(format($$SELECT sandbox_store.run_update('d2', '{"driverEpoch": %s}')$$, pg_temp.e(5) - 1)), ':', 1) AS below_it;
SELECT pg_temp.state() = :'before' AS nothing_changed;
-- One above it is accepted: a claim by patch, whose driver may clear it.
INSERT INTO epochs SELECT 6, max(epoch) + 1 FROM epochs;
SELECT sandbox_store.run_update('d2', jsonb_build_object('driverEpoch', pg_temp.e(6))) AS raised,
       sandbox_store.run_log_append('d2', '[{"n": 2}]', pg_temp.e(6)) AS appended,
       sandbox_store.run_update('d2', '{"driverEpoch": null}', pg_temp.e(6)) AS cleared_by_its_driver;
-- A claim after a clear: an epoch above the cleared one.
INSERT INTO epochs VALUES (7, sandbox_store.run_claim('d2'));
SELECT pg_temp.e(7) > pg_temp.e(6) AS above_the_cleared,
       (sandbox_store.run_get('d2') -> 'driverEpoch')::int8 = pg_temp.e(7) AS current;
SELECT sandbox_store.run_log_append('d2', '[{"n": 3}]', pg_temp.e(7)) AS new_driver_appends;
SELECT pg_temp.whye($$SELECT sandbox_store.run_log_append('d2', '[{"n": 4}]', pg_temp.e(6))$$) AS cleared_epoch;

--
-- A finished run: not claimable (SBR02), its log takes no more entries
-- (SBR02), but it can be closed.  An unknown run: SBR01.
--
SELECT sandbox_store.run_update('d1', '{"status": "completed", "finishedAt": 99}', pg_temp.e(4));
SELECT pg_temp.state() AS before \gset
SELECT pg_temp.why($$SELECT sandbox_store.run_claim('d1')$$) AS claim_finished;
SELECT pg_temp.why($$SELECT sandbox_store.run_claim('unknown')$$) AS claim_unknown;
SELECT pg_temp.why($$SELECT sandbox_store.run_log_append('d1', '[{"n": 5}]', pg_temp.e(4))$$) AS append_finished;
SELECT pg_temp.why($$SELECT sandbox_store.run_log_upsert('d1', '{9}', '[{"n": 5}]', pg_temp.e(4))$$) AS upsert_finished;
SELECT pg_temp.state() = :'before' AS nothing_changed;
SELECT sandbox_store.run_log_close('d1', pg_temp.e(4)) AS closed, sandbox_store.run_log_close('d1', pg_temp.e(4)) AS again;
SELECT pg_temp.why($$SELECT sandbox_store.run_log_append('r1', '[{"n": 1}]')$$) AS open_log;
SELECT sandbox_store.run_log_close('r1') AS closed;
SELECT pg_temp.why($$SELECT sandbox_store.run_log_append('r1', '[{"n": 2}]')$$) AS append_closed;

--
-- The log.  No runs row is needed; append numbers the entries after the
-- tail; read returns them after a seq, at most max_rows.
--
SELECT sandbox_store.run_log_status('L') AS no_log;
SELECT sandbox_store.run_log_append('L', '[{"a": 1}, {"b": 2}, {"c": 3}]') AS first,
       sandbox_store.run_log_append('L', '[]') AS empty;
SELECT * FROM sandbox_store.run_log_status('L');
SELECT sandbox_store.run_log_append('L', '[{"d": {"nested": [1, null, "x"]}}]') AS second;
SELECT * FROM sandbox_store.run_log_read('L');
SELECT * FROM sandbox_store.run_log_read('L', after => 1, max_rows => 2);
SELECT count(*) AS none FROM sandbox_store.run_log_read('L', 4);
SELECT count(*) AS zero_rows FROM sandbox_store.run_log_read('L', 0, 0);
SELECT count(*) AS no_log FROM sandbox_store.run_log_read('no-such-log');
-- An empty append makes no log.
SELECT sandbox_store.run_log_append('E', '[]'), (SELECT count(*) FROM sandbox_store.run_log_status('E')) AS logs;
-- upsert: a stored seq is replaced; a new one goes after the tail and every
-- preceding new seq (gaps allowed); the tail is the greatest.
SELECT sandbox_store.run_log_upsert('L', '{2, 4, 6, 9}', '[{"B": 2}, {"D": 4}, {"F": 6}, {"I": 9}]');
SELECT * FROM sandbox_store.run_log_read('L');
SELECT * FROM sandbox_store.run_log_status('L');
SELECT sandbox_store.run_log_append('L', '[{"j": 10}]') AS after_the_tail;
SELECT pg_temp.state() AS before \gset
-- SBR03: a repeated seq; a new seq at or before the tail (in a gap, or not
-- after a preceding new one of the batch).  The whole batch is checked
-- first: its valid entries are not written either.
SELECT pg_temp.why($$SELECT sandbox_store.run_log_upsert('L', '{1, 11, 11}', '[{}, {}, {}]')$$) AS repeated;
SELECT pg_temp.why($$SELECT sandbox_store.run_log_upsert('L', '{1, 7}', '[{"x": 1}, {"x": 7}]')$$) AS in_a_gap;
SELECT pg_temp.why($$SELECT sandbox_store.run_log_upsert('L', '{13, 12}', '[{}, {}]')$$) AS before_a_new_one;
SELECT pg_temp.state() = :'before' AS nothing_changed;
SELECT sandbox_store.run_log_upsert('L', '{12, 10, 13}', '[{"l": 12}, {"J": 10}, {"m": 13}]') AS replaced_and_new;
SELECT seq, chunk FROM sandbox_store.run_log_read('L', 8);
SELECT sandbox_store.run_log_upsert('L', '{}', '[]') AS empty_upsert;
-- close: true once; a closed log takes nothing (SBR02) but is read whole.
SELECT sandbox_store.run_log_close('L') AS closed, sandbox_store.run_log_close('L') AS again;
SELECT * FROM sandbox_store.run_log_status('L');
SELECT pg_temp.why($$SELECT sandbox_store.run_log_upsert('L', '{1}', '[{}]')$$) AS upsert_closed;
SELECT count(*) AS entries FROM sandbox_store.run_log_read('L');
-- A seq is at most 2^53 - 1 (an offset's position is a JavaScript number):
-- after an upsert near it, an append that would pass it is refused (22003)
-- and changes nothing.
SELECT sandbox_store.run_log_upsert('F', '{9007199254740990}', '[{"f": 1}]') AS near_the_end,
       sandbox_store.run_log_append('F', '[{"f": 2}]') AS the_last_seq;
SELECT pg_temp.state() AS before \gset
SELECT pg_temp.why($$SELECT sandbox_store.run_log_append('F', '[{"f": 3}]')$$) AS full;
SELECT pg_temp.state() = :'before' AS nothing_changed;
SELECT sandbox_store.run_log_close('F') AS closed;
-- So is an epoch: a claim that would pass it is refused (22003).
SELECT sandbox_store.run_create_or_resume('x-max', 't-max', 1) ->> 'runId',
       sandbox_store.run_update('x-max', '{"driverEpoch": 9007199254740991}') AS at_the_end;
SELECT pg_temp.state() AS before \gset
SELECT pg_temp.why($$SELECT sandbox_store.run_claim('x-max')$$) AS no_epoch_left;
SELECT pg_temp.state() = :'before' AS nothing_changed;
-- close of a run without a log: a closed, empty log.
SELECT sandbox_store.run_log_close('C') AS closed;
SELECT * FROM sandbox_store.run_log_status('C');

--
-- Bad arguments: 22023, nothing changed.
--
SELECT pg_temp.state() AS before \gset
SELECT q, pg_temp.why(q) FROM (VALUES
  ($$SELECT sandbox_store.run_create_or_resume(NULL, 't', 1)$$),
  ($$SELECT sandbox_store.run_create_or_resume('', 't', 1)$$),
  ($$SELECT sandbox_store.run_create_or_resume(repeat('x', 1025), 't', 1)$$),
  ($$SELECT sandbox_store.run_create_or_resume('x', repeat('t', 1001), 1)$$),
  ($$SELECT sandbox_store.run_create_or_resume('x', 't', 'NaN')$$),
  ($$SELECT sandbox_store.run_create_or_resume('x', 't', '-Infinity')$$),
  ($$SELECT sandbox_store.run_create_or_resume('x', 't', 1, 'done')$$),
  ($$SELECT sandbox_store.run_create_or_resume('r1', 't', 1, NULL)$$),
  ($$SELECT sandbox_store.run_get('')$$),
  ($$SELECT sandbox_store.run_list_by_thread(NULL)$$),
  ($$SELECT sandbox_store.run_find_active('')$$),
  ($$SELECT sandbox_store.run_list_reclaimable('Infinity', 1)$$),
  ($$SELECT sandbox_store.run_list_reclaimable(1, 'NaN')$$),
  ($$SELECT sandbox_store.run_update('r1', '[]')$$),
  ($$SELECT sandbox_store.run_update('r1', NULL)$$),
  ($$SELECT sandbox_store.run_update('r1', '{"status": "running", "colour": 1}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"status": null}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"status": "paused"}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"finishedAt": "1"}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"finishedAt": 1e400}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"error": "boom"}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"usage": [1]}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"sandboxKey": 1}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"cancelRequested": "yes"}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"driverEpoch": 0}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"driverEpoch": 1.5}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{"driverEpoch": 9007199254740992}')$$),
  ($$SELECT sandbox_store.run_update('r1', '{}', 0)$$),
  ($$SELECT sandbox_store.run_claim(NULL)$$),
  ($$SELECT sandbox_store.run_log_append('L2', '{"a": 1}')$$),
  ($$SELECT sandbox_store.run_log_append('L2', '[{"a": 1}, 2]')$$),
  ($$SELECT sandbox_store.run_log_append('L2', NULL)$$),
  ($$SELECT sandbox_store.run_log_append('L2', '[{}]', 0)$$),
  ($$SELECT sandbox_store.run_log_append('d1', '[1]', 1)$$),
  ($$SELECT sandbox_store.run_log_append('L2', '[[]]')$$),
  ($$SELECT sandbox_store.run_log_append('L2', '[[{"a": 1}]]')$$),
  ($$SELECT sandbox_store.run_log_append('L2', '[{"a": 1}, []]')$$),
  ($$SELECT sandbox_store.run_log_append('L2', '[{"a": 1}]', NULL, NULL)$$),
  ($$SELECT sandbox_store.run_log_wake('L2', '')$$),
  ($$SELECT sandbox_store.run_log_wake(VARIADIC NULL::text[])$$),
  ($$SELECT sandbox_store.run_log_upsert('L2', '{1, 2}', '[{}]')$$),
  ($$SELECT sandbox_store.run_log_upsert('L2', NULL, '[{}]')$$),
  ($$SELECT sandbox_store.run_log_upsert('L2', '{0}', '[{}]')$$),
  ($$SELECT sandbox_store.run_log_upsert('L2', '{9007199254740992}', '[{}]')$$),
  ($$SELECT sandbox_store.run_log_upsert('L2', '{NULL}', '[{}]')$$),
  ($$SELECT sandbox_store.run_log_upsert('L2', '{1}', '["x"]')$$),
  ($$SELECT sandbox_store.run_log_close('', 1)$$),
  ($$SELECT sandbox_store.run_log_close('L2', -1)$$),
  ($$SELECT sandbox_store.run_log_read('L', -1)$$),
  ($$SELECT sandbox_store.run_log_read('L', NULL)$$),
  ($$SELECT sandbox_store.run_log_read('L', 0, -1)$$),
  ($$SELECT sandbox_store.run_log_status(NULL)$$),
  ($$SELECT sandbox_store.run_log_watch(repeat('x', 1025))$$),
  ($$SELECT sandbox_store.run_log_prune(NULL)$$),
  ($$SELECT sandbox_store.run_log_prune('-1 day')$$),
  ($$SELECT sandbox_store.run_log_prune('1 day', -1)$$)) v(q);
SELECT pg_temp.state() = :'before' AS nothing_changed;

--
-- Prune: closed and old, or open of a finished run and quiet: pruned (log
-- and entries, never the run record).  An open log of a running run, or
-- with no runs row, is kept; so is a log closed or written within
-- older_than.
--
SELECT sandbox_store.run_create_or_resume(id, 't-prune', 1) ->> 'runId'
  FROM (VALUES ('p-closed'), ('p-finished'), ('p-running'), ('p-interrupted')) v(id);
SELECT sandbox_store.run_log_append(id, '[{"x": 1}, {"x": 2}]')
  FROM (VALUES ('p-closed'), ('p-finished'), ('p-running'), ('p-interrupted'), ('p-norun')) v(id);
SELECT sandbox_store.run_log_close('p-closed');
SELECT sandbox_store.run_update('p-finished', '{"status": "failed"}');
SELECT sandbox_store.run_update('p-interrupted', '{"status": "interrupted"}');
-- A reader's empty log of no run (run_log_watch made it): pruned; of a
-- running run: kept.
SELECT * FROM sandbox_store.run_log_watch('p-watched');
SELECT sandbox_store.run_create_or_resume('p-waiting', 't-prune', 1) ->> 'runId';
SELECT * FROM sandbox_store.run_log_watch('p-waiting');
SELECT sandbox_store.run_log_prune('1 hour') AS recent_kept;
SELECT sandbox_store.run_log_prune('0', max_logs => 0) AS none_asked;
-- (every log but these is closed or finished: L, C, d1 and r1 go too)
SELECT sandbox_store.run_log_prune('0', max_logs => 2) AS oldest_two;
SELECT sandbox_store.run_log_prune('0') AS the_rest;
SELECT l.run_id, l.last_seq, l.closed_at IS NOT NULL AS closed,
       (SELECT count(*) FROM sandbox_store.run_log_entries e WHERE e.run_id = l.run_id) AS entries
  FROM sandbox_store.run_logs l ORDER BY 1;
SELECT count(*) AS orphan_entries FROM sandbox_store.run_log_entries e
 WHERE NOT EXISTS (SELECT FROM sandbox_store.run_logs l WHERE l.run_id = e.run_id);
SELECT count(*) AS run_records_kept FROM sandbox_store.runs WHERE run_id LIKE 'p-%';
-- A pruned log starts again from nothing.
SELECT count(*) AS gone FROM sandbox_store.run_log_status('p-closed');
-- max_logs counts the logs pruned, not the logs looked at: with max_logs
-- 1, the oldest logs (open, of running runs: kept) are passed over and the
-- next closed one goes.
SELECT sandbox_store.run_create_or_resume(id, 't-prune', 1) ->> 'runId'
  FROM (VALUES ('q-running'), ('q-closed')) v(id);
SELECT sandbox_store.run_log_append('q-running', '[{"x": 1}]');
SELECT sandbox_store.run_log_append('q-closed', '[{"x": 1}]');
SELECT sandbox_store.run_log_close('q-closed');
SELECT sandbox_store.run_log_prune('0', max_logs => 1) AS past_the_kept;
SELECT l.run_id FROM sandbox_store.run_logs l WHERE l.run_id LIKE 'q-%' ORDER BY 1;

--
-- NOTIFY: once a reader watches a log (run_log_watch), append, upsert and
-- close notify channel sandbox_store_run_log with the run id when they
-- commit; before, they do not (the notifying backend's PID is masked).
--
LISTEN sandbox_store_run_log;
\o | sed -e 's/PID [0-9]*/PID N/'
SELECT sandbox_store.run_log_append('n1', '[{"hello": "world"}]') AS not_watched;
SELECT * FROM sandbox_store.run_log_watch('n1');
SELECT sandbox_store.run_log_append('n1', '[{"hello": "world"}]');
SELECT sandbox_store.run_log_upsert('n1', '{1}', '[{"hello": "again"}]');
SELECT sandbox_store.run_log_close('n1');
SELECT * FROM sandbox_store.run_log_watch('n1') AS closed_log;
SELECT sandbox_store.run_log_close('n1') AS closed_already;
SELECT * FROM sandbox_store.run_log_watch('n2') AS new_log;
BEGIN;
SELECT sandbox_store.run_log_append('n2', '[{"x": 1}]');
ROLLBACK;
-- notify false: the append stores its entries and does not notify; the
-- writer's run_log_wake after the commit does, for the watched logs among
-- those it names (n3 has no log, n4's is not watched), each once.
SELECT sandbox_store.run_log_append('n2', '[{"x": 2}]', NULL, false) AS quiet;
SELECT sandbox_store.run_log_append(run_id => 'n2', chunks => '[{"x": 3}]', epoch => NULL, notify => true) AS notified;
SELECT sandbox_store.run_log_append('n4', '[{"x": 1}]', NULL, false) AS quiet_unwatched;
SELECT sandbox_store.run_log_wake('n2', 'n3', 'n4', 'n2') AS woken;
SELECT sandbox_store.run_log_wake(VARIADIC '{}'::text[]) AS none;
SELECT seq, chunk FROM sandbox_store.run_log_read('n2', 0);
\o
UNLISTEN sandbox_store_run_log;

--
-- The app role, granted as the README says: calls every function, reads no
-- table.
--
CREATE ROLE regress_sb_runs_app;
GRANT regress_sb_runs_app TO CURRENT_USER;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_runs_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_runs_app;
SET ROLE regress_sb_runs_app;
SELECT sandbox_store.run_create_or_resume('app-1', 't-app', 1) ->> 'runId' AS created;
SELECT sandbox_store.run_claim('app-1') AS app_epoch \gset
SELECT sandbox_store.run_log_append('app-1', '[{"a": 1}]', :app_epoch) AS appended,
       sandbox_store.run_log_upsert('app-1', '{1}', '[{"a": 2}]', :app_epoch) AS upserted;
SELECT sandbox_store.run_update('app-1', '{"status": "completed"}', :app_epoch) AS updated,
       sandbox_store.run_log_close('app-1', :app_epoch) AS closed;
SELECT sandbox_store.run_get('app-1') ->> 'status' AS status,
       (SELECT count(*) FROM sandbox_store.run_list_by_thread('t-app')) AS listed,
       sandbox_store.run_find_active('t-app') AS active,
       (SELECT count(*) FROM sandbox_store.run_list_reclaimable(0, 0)) AS reclaimable,
       (SELECT array_agg(chunk) FROM sandbox_store.run_log_read('app-1')) AS chunks,
       (SELECT closed FROM sandbox_store.run_log_status('app-1')) AS log_closed,
       sandbox_store.run_log_prune('0') AS pruned;
SELECT pg_temp.why($$SELECT * FROM sandbox_store.runs$$) AS runs;
SELECT pg_temp.why($$SELECT * FROM sandbox_store.run_logs$$) AS run_logs;
SELECT pg_temp.why($$SELECT * FROM sandbox_store.run_log_entries$$) AS run_log_entries;
SELECT pg_temp.why($$INSERT INTO sandbox_store.run_log_entries VALUES ('x', 1, '{}')$$) AS insert_entries;
SELECT pg_temp.why($$UPDATE sandbox_store.runs SET driver_epoch = NULL$$) AS update_runs;
SELECT pg_temp.why($$SELECT sandbox_store_internal._run_fence('app-1', NULL)$$) AS helper;
RESET ROLE;
REVOKE ALL ON SCHEMA sandbox_store FROM regress_sb_runs_app;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store FROM regress_sb_runs_app;
DROP ROLE regress_sb_runs_app;

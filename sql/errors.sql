--
-- errors: every row of the spec's error table, for every argument, with its
-- SQLSTATE; a failed call changes nothing and leaves no lock.
--
\i sql/include/fresh.sql
\pset null '<null>'

-- err(sql): run sql; 'ok', or the SQLSTATE and message it raised.
SELECT key FROM sandbox_store.sandbox_upsert('err-key', 'p', 'sbx-err', 'thread-err', 'snap', 'run');
-- 1.1: the key gets a claim history, so that leases has a row to keep intact;
-- the fence sequence's position is kept too (a failed call must not use up a
-- fence).
SELECT action, latest_run_id, fence IS NOT NULL AS claimed
  FROM sandbox_store.sandbox_ensure('err-key', 'run', lease => '1 minute');
SELECT sandbox_store.sandbox_release('err-key', owner_token) FROM sandbox_store.leases
 WHERE key = 'err-key';
CREATE TEMP TABLE before_all AS SELECT * FROM sandbox_store.instances;
CREATE TEMP TABLE before_leases AS SELECT * FROM sandbox_store.leases;
CREATE TEMP TABLE before_fence AS SELECT last_value, is_called FROM sandbox_store.fence_seq;

CREATE TEMP TABLE calls(n serial, q text);
INSERT INTO calls(q) VALUES
-- 22004: a required argument is NULL.
  ($$SELECT sandbox_store.sandbox_upsert(NULL, 'p', 's', 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', NULL, 's', 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', NULL, 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', NULL)$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', updated_at => NULL)$$),
  ($$SELECT sandbox_store.sandbox_get(NULL)$$),
  ($$SELECT sandbox_store.sandbox_delete(NULL)$$),
  ($$SELECT sandbox_store.sandbox_list(NULL)$$),
  ($$SELECT sandbox_store.sandbox_ensure(NULL, 'r')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', NULL)$$),
  ($$SELECT sandbox_store.sandbox_lock(NULL)$$),
  ($$SELECT sandbox_store.sandbox_try_lock(NULL)$$),
  ($$SELECT sandbox_store.sandbox_lock_id(NULL)$$),
-- 22023: an empty string.
  ($$SELECT sandbox_store.sandbox_upsert('', 'p', 's', 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', '', 's', 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', '', 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', '')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', latest_snapshot_id => '')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', latest_run_id => '')$$),
  ($$SELECT sandbox_store.sandbox_get('')$$),
  ($$SELECT sandbox_store.sandbox_delete('')$$),
  ($$SELECT sandbox_store.sandbox_list('')$$),
  ($$SELECT sandbox_store.sandbox_ensure('', 'r')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', '')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', provider => '')$$),
  ($$SELECT sandbox_store.sandbox_lock('')$$),
  ($$SELECT sandbox_store.sandbox_try_lock('')$$),
  ($$SELECT sandbox_store.sandbox_lock_id('')$$),
-- 22023: a negative interval (also one negative only in sum), or a timestamp
-- that is not finite.
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', max_age => '-1 second')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', max_age => '1 day -25 hours')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', wait => '-1 ms')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', wait => '-1 mon')$$),
  ($$SELECT sandbox_store.sandbox_lock('err-key', wait => '-0.000001 s')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', updated_at => 'infinity')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', updated_at => '-infinity')$$),
-- 22001: text over 1024 bytes (counted in bytes, not characters).
  ($$SELECT sandbox_store.sandbox_upsert(repeat('k', 1025), 'p', 's', 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert(repeat('é', 512) || 'k', 'p', 's', 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', repeat('p', 1025), 's', 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', repeat('s', 1025), 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', repeat('t', 1025))$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', latest_snapshot_id => repeat('n', 1025))$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', latest_run_id => repeat('r', 1025))$$),
  ($$SELECT sandbox_store.sandbox_get(repeat('k', 1025))$$),
  ($$SELECT sandbox_store.sandbox_delete(repeat('k', 1025))$$),
  ($$SELECT sandbox_store.sandbox_list(repeat('t', 1025))$$),
  ($$SELECT sandbox_store.sandbox_ensure(repeat('k', 1025), 'r')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', repeat('r', 1025))$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', provider => repeat('p', 1025))$$),
  ($$SELECT sandbox_store.sandbox_lock(repeat('k', 1025))$$),
  ($$SELECT sandbox_store.sandbox_try_lock(repeat('k', 1025))$$),
  ($$SELECT sandbox_store.sandbox_lock_id(repeat('k', 1025))$$),
  ($$SELECT sandbox_store.sandbox_ensure(repeat('k', 50000000), 'r')$$),
-- The first bad argument is reported; nothing is written in any case.
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', 'snap2', repeat('r', 2000))$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'run-bad', max_age => '-1 s')$$);

-- 1.1: the lease arguments and the new functions.
INSERT INTO calls(q) VALUES
-- 22004: a required argument is NULL.
  ($$SELECT sandbox_store.sandbox_ensure(NULL, 'r', lease => '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', NULL, lease => '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_renew(NULL, '00000000-0000-0000-0000-000000000000', '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_renew('err-key', NULL, '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_renew('err-key', '00000000-0000-0000-0000-000000000000', NULL)$$),
  ($$SELECT sandbox_store.sandbox_release(NULL, '00000000-0000-0000-0000-000000000000')$$),
  ($$SELECT sandbox_store.sandbox_release('err-key', NULL)$$),
  ($$SELECT sandbox_store.sandbox_reap(NULL)$$),
  ($$SELECT sandbox_store.sandbox_reap('1 day', NULL)$$),
  ($$SELECT sandbox_store.sandbox_lock_holder(NULL)$$),
  ($$SELECT sandbox_store.sandbox_upsert(NULL, 'p', 's', 't', fence => 1)$$),
  ($$SELECT sandbox_store.sandbox_delete(NULL, fence => 1)$$),
-- 22023: an empty string.
  ($$SELECT sandbox_store.sandbox_ensure('', 'r', lease => '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_renew('', '00000000-0000-0000-0000-000000000000', '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_release('', '00000000-0000-0000-0000-000000000000')$$),
  ($$SELECT sandbox_store.sandbox_lock_holder('')$$),
  ($$SELECT sandbox_store.sandbox_upsert('', 'p', 's', 't', fence => 1)$$),
  ($$SELECT sandbox_store.sandbox_delete('', fence => 1)$$),
-- 22023: a lease that is not positive (zero, negative, negative only in sum).
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', lease => '0')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', lease => '-1 second')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', lease => '1 day -25 hours')$$),
  ($$SELECT sandbox_store.sandbox_renew('err-key', '00000000-0000-0000-0000-000000000000', '0')$$),
  ($$SELECT sandbox_store.sandbox_renew('err-key', '00000000-0000-0000-0000-000000000000', '-1 ms')$$),
-- 22023: a fence that is not positive.
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', fence => 0)$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', fence => -1)$$),
  ($$SELECT sandbox_store.sandbox_delete('err-key', fence => 0)$$),
  ($$SELECT sandbox_store.sandbox_delete('err-key', fence => -9223372036854775808)$$),
-- 22023: a negative idle_for, a max_rows that is not positive.
  ($$SELECT sandbox_store.sandbox_reap('-1 second')$$),
  ($$SELECT sandbox_store.sandbox_reap('1 day -25 hours')$$),
  ($$SELECT sandbox_store.sandbox_reap('1 day', 0)$$),
-- 22023: an interval with parts of both signs, whose sign depends on the
-- date: '-1 year +360 days 00:00:01' compares above zero but moves a
-- timestamp about five days back (a lease that would already be over, an
-- idle_for or max_age that would make every record old); '1 day -1 hour'
-- likewise, for a day of DST.
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', lease => '-1 year +360 days 00:00:01')$$),
  ($$SELECT sandbox_store.sandbox_claim('err-key', lease => '-1 year +360 days 00:00:01')$$),
  ($$SELECT sandbox_store.sandbox_renew('err-key', '00000000-0000-0000-0000-000000000000', '1 mon -29 days')$$),
  ($$SELECT sandbox_store.sandbox_reap('-1 year +360 days 00:00:01')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', max_age => '-1 year +360 days 00:00:01')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', max_age => '1 day -1 hour')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', wait => '1 mon -1 day')$$),
  ($$SELECT sandbox_store.sandbox_claim('err-key', '1 minute', wait => '-1 day 25 hours')$$),
  ($$SELECT sandbox_store.sandbox_reap('1 day', max_rows => -1)$$),
-- 22001: text over 1024 bytes.
  ($$SELECT sandbox_store.sandbox_ensure(repeat('k', 1025), 'r', lease => '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_renew(repeat('k', 1025), '00000000-0000-0000-0000-000000000000', '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_release(repeat('k', 1025), '00000000-0000-0000-0000-000000000000')$$),
  ($$SELECT sandbox_store.sandbox_lock_holder(repeat('k', 1025))$$),
  ($$SELECT sandbox_store.sandbox_upsert(repeat('k', 1025), 'p', 's', 't', fence => 1)$$),
  ($$SELECT sandbox_store.sandbox_delete(repeat('k', 1025), fence => 1)$$),
-- The first bad argument is reported (argument order), before the lease.
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', wait => '-1 s', lease => '0')$$),
  ($$SELECT sandbox_store.sandbox_ensure('err-key', 'r', max_age => '-1 s', lease => NULL)$$),
  ($$SELECT sandbox_store.sandbox_upsert('err-key', 'p', 's', 't', updated_at => 'infinity', fence => 0)$$),
  ($$SELECT sandbox_store.sandbox_upsert_release('err-key', 0, NULL, 's', 't', updated_at => 'infinity')$$);

-- 22023: a reserved key (one that starts with E'\x01': the extension's own
-- claims, such as a thread's checkpoint writer), in every function with a
-- key argument, reads too.  Length is checked first; \x01 later in a key is
-- ordinary.
INSERT INTO calls(q) VALUES
  ($$SELECT sandbox_store.sandbox_claim(E'\x01checkpoint-writer\x01err-t', '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_claim(E'\x01k', '1 minute', wait => '0')$$),
  ($$SELECT sandbox_store.sandbox_ensure(E'\x01checkpoint-writer\x01err-t', 'r')$$),
  ($$SELECT sandbox_store.sandbox_ensure(E'\x01k', 'r', lease => '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_lock(E'\x01k')$$),
  ($$SELECT sandbox_store.sandbox_lock(E'\x01k', wait => '0')$$),
  ($$SELECT sandbox_store.sandbox_try_lock(E'\x01k')$$),
  ($$SELECT sandbox_store.sandbox_renew(E'\x01k', '00000000-0000-0000-0000-000000000000', '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_release(E'\x01k', '00000000-0000-0000-0000-000000000000')$$),
  ($$SELECT sandbox_store.sandbox_upsert(E'\x01k', 'p', 's', 't')$$),
  ($$SELECT sandbox_store.sandbox_upsert(E'\x01k', 'p', 's', 't', fence => 1)$$),
  ($$SELECT sandbox_store.sandbox_upsert_release(E'\x01k', 1, 'p', 's', 't')$$),
  ($$SELECT sandbox_store.sandbox_delete(E'\x01k')$$),
  ($$SELECT sandbox_store.sandbox_delete(E'\x01k', fence => 1)$$),
  ($$SELECT sandbox_store.sandbox_get(E'\x01k')$$),
  ($$SELECT sandbox_store.sandbox_lock_id(E'\x01k')$$),
  ($$SELECT sandbox_store.sandbox_lock_holder(E'\x01k')$$),
  ($$SELECT sandbox_store.sandbox_ensure(E'\x01' || repeat('k', 1024), 'r')$$),
  ($$SELECT sandbox_store.sandbox_lock_id(E'k\x01')$$);

SELECT n, pg_temp.err(q) FROM calls ORDER BY n;

-- Nothing changed and no lock was left.
SELECT count(*) AS changed_rows FROM (
  (TABLE before_all EXCEPT TABLE sandbox_store.instances)
  UNION ALL
  (TABLE sandbox_store.instances EXCEPT TABLE before_all)) d;
SELECT count(*) AS changed_leases FROM (
  (TABLE before_leases EXCEPT TABLE sandbox_store.leases)
  UNION ALL
  (TABLE sandbox_store.leases EXCEPT TABLE before_leases)) d;
SELECT f.last_value = b.last_value AND f.is_called = b.is_called AS no_fence_used
  FROM sandbox_store.fence_seq f, before_fence b;
SELECT pg_temp.sb_lock_count() AS locks;

-- The messages in full: DETAIL and HINT explain.
SELECT key FROM sandbox_store.sandbox_upsert(repeat('k', 1025), 'p', 's', 't');
SELECT key FROM sandbox_store.sandbox_upsert('k', 'p', 's', 't', updated_at => NULL);
SELECT key FROM sandbox_store.sandbox_upsert('k', 'p', 's', 't', updated_at => 'infinity');
SELECT sandbox_store.sandbox_ensure('k', 'r', wait => '-1 day');
SELECT sandbox_store.sandbox_ensure('k', NULL);
SELECT sandbox_store.sandbox_ensure('k', 'r', lease => '0');
SELECT sandbox_store.sandbox_renew('k', '00000000-0000-0000-0000-000000000000', '-1 hour');
SELECT key FROM sandbox_store.sandbox_upsert('k', 'p', 's', 't', fence => -3);
SELECT sandbox_store.sandbox_delete('k', fence => 0);
SELECT key FROM sandbox_store.sandbox_reap('-5 minutes');
SELECT key FROM sandbox_store.sandbox_reap('5 minutes', 0);
SELECT key FROM sandbox_store.sandbox_reap(NULL);
SELECT sandbox_store.sandbox_claim(E'\x01checkpoint-writer\x01err-t', '1 minute');

-- The same inside a transaction: the error aborts it, and its lock goes with it.
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('err-key', 'run-x');
SELECT key FROM sandbox_store.sandbox_upsert('err-key', 'p', '', 't');
ROLLBACK;
SELECT latest_run_id FROM sandbox_store.sandbox_get('err-key');
SELECT pg_temp.sb_lock_count() AS locks;

SELECT sandbox_store.sandbox_delete('err-key');

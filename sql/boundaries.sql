--
-- boundaries: exact edges of the decisions, each pinned on both sides.
--
-- Each block runs in one transaction, where now() does not move, so the
-- edges are exact to the microsecond.
--
\i sql/include/fresh.sql

-- max_age: a record exactly max_age old is fresh (resume); one microsecond
-- older is stale (recreate).
BEGIN;
SELECT key FROM sandbox_store.sandbox_upsert('b-edge', 'e2b', 'sbx-edge', 't-b',
       updated_at => now() - interval '1 hour');
SELECT action, provider_sandbox_id, updated_at = now() AS stamped
  FROM sandbox_store.sandbox_ensure('b-edge', 'run-1', max_age => '1 hour');
COMMIT;
BEGIN;
SELECT key FROM sandbox_store.sandbox_upsert('b-edge', 'e2b', 'sbx-edge', 't-b',
       updated_at => now() - interval '1 hour 0.000001 second');
SELECT action, provider_sandbox_id, updated_at = now() - interval '1 hour 0.000001 second' AS unchanged
  FROM sandbox_store.sandbox_ensure('b-edge', 'run-2', max_age => '1 hour');
COMMIT;
-- Lease mode decides the same way.
BEGIN;
SELECT key FROM sandbox_store.sandbox_upsert('b-edge', 'e2b', 'sbx-edge', 't-b',
       updated_at => now() - interval '1 hour');
SELECT action, fence > 0 AS claimed
  FROM sandbox_store.sandbox_ensure('b-edge', 'run-3', max_age => '1 hour', lease => '1 min');
COMMIT;
SELECT sandbox_store.sandbox_release('b-edge', owner_token) FROM sandbox_store.claims WHERE key = 'b-edge';
BEGIN;
SELECT key FROM sandbox_store.sandbox_upsert('b-edge', 'e2b', 'sbx-edge', 't-b',
       updated_at => now() - interval '1 hour 0.000001 second');
SELECT action, fence > 0 AS claimed
  FROM sandbox_store.sandbox_ensure('b-edge', 'run-4', max_age => '1 hour', lease => '1 min');
COMMIT;
SELECT sandbox_store.sandbox_release('b-edge', owner_token) FROM sandbox_store.claims WHERE key = 'b-edge';

-- sandbox_reap: idle_for works the same way: a record exactly idle_for old
-- is kept, one microsecond older is reaped.
BEGIN;
SELECT key FROM sandbox_store.sandbox_upsert('b-reap-edge', 'e2b', 'sbx-r1', 't-b',
       updated_at => now() - interval '1 day');
SELECT key FROM sandbox_store.sandbox_upsert('b-reap-over', 'e2b', 'sbx-r2', 't-b',
       updated_at => now() - interval '1 day 0.000001 second');
SELECT key FROM sandbox_store.sandbox_reap(idle_for => '1 day');
COMMIT;
SELECT key FROM sandbox_store.instances WHERE key LIKE 'b-reap-%' ORDER BY key;

-- Fences: a write fenced with the key's newest fence goes through; one
-- fenced with the fence just below it (stale by exactly one) is refused with
-- SB001 and changes nothing.
CREATE TEMP TABLE b_claim AS
  SELECT fence, owner_token FROM sandbox_store.sandbox_claim('b-fence', lease => '1 min');
SELECT sandbox_store.sandbox_release('b-fence', owner_token) FROM b_claim;
SELECT nextval('sandbox_store.fence_seq') > 0 AS sequence_advanced;  -- a gap below the next fence
CREATE TEMP TABLE b_newest AS
  SELECT fence, owner_token FROM sandbox_store.sandbox_claim('b-fence', lease => '1 min');
SELECT n.fence > c.fence + 1 AS newer FROM b_newest n, b_claim c;
\set VERBOSITY sqlstate
SELECT provider_sandbox_id FROM b_newest,
       sandbox_store.sandbox_upsert('b-fence', 'e2b', 'sbx-stale', 't-b', fence => fence - 1);
SELECT sandbox_store.sandbox_delete('b-fence', fence => fence - 1) FROM b_newest;
\set VERBOSITY default
SELECT count(*) AS records FROM sandbox_store.instances WHERE key = 'b-fence';
SELECT provider_sandbox_id FROM b_newest,
       sandbox_store.sandbox_upsert('b-fence', 'e2b', 'sbx-newest', 't-b', fence => fence);
SELECT sandbox_store.sandbox_delete('b-fence', fence => fence) FROM b_newest;
SELECT sandbox_store.sandbox_release('b-fence', owner_token) FROM b_newest;

-- A fence is tied to its key: while a claim holds "b-fx-a", a write to it
-- fenced with the fence of a claim on another key, or with any number above
-- the key's own fence, is refused (SB001) and changes nothing; the holder's
-- own fence goes through.
CREATE TEMP TABLE b_fx AS
  SELECT 'a' AS k, fence, owner_token FROM sandbox_store.sandbox_claim('b-fx-a', lease => '1 min')
  UNION ALL
  SELECT 'b', fence, owner_token FROM sandbox_store.sandbox_claim('b-fx-b', lease => '1 min');
\set VERBOSITY sqlstate
SELECT key FROM sandbox_store.sandbox_upsert('b-fx-a', 'e2b', 'sbx-foreign', 't-b',
       fence => (SELECT fence FROM b_fx WHERE k = 'b'));
SELECT sandbox_store.sandbox_delete('b-fx-a', fence => 9223372036854775807);
SELECT key FROM sandbox_store.sandbox_upsert('b-fx-a', 'e2b', 'sbx-above', 't-b',
       fence => (SELECT fence + 1 FROM b_fx WHERE k = 'a'));
\set VERBOSITY default
SELECT count(*) AS records FROM sandbox_store.instances WHERE key = 'b-fx-a';
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_upsert('b-fx-a', 'e2b', 'sbx-own', 't-b',
       fence => (SELECT fence FROM b_fx WHERE k = 'a'));
SELECT sandbox_store.sandbox_release('b-fx-' || k, owner_token) FROM b_fx ORDER BY k;

-- An unfenced sandbox_upsert takes the key's lock, until the transaction
-- ends, under REPEATABLE READ and SERIALIZABLE only; at READ COMMITTED it
-- takes none.
CREATE TEMP VIEW b_my_key_locks AS
  SELECT count(*) AS key_locks FROM my_sb_locks WHERE granted;
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT key FROM sandbox_store.sandbox_upsert('b-lock', 'e2b', 'sbx-l', 't-b');
SELECT * FROM b_my_key_locks;
COMMIT;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT key FROM sandbox_store.sandbox_upsert('b-lock', 'e2b', 'sbx-l', 't-b');
SELECT * FROM b_my_key_locks;
SELECT lock_id = sandbox_store.sandbox_lock_id('b-lock') AS the_key_lock FROM my_sb_locks;
COMMIT;
SELECT * FROM b_my_key_locks;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT key FROM sandbox_store.sandbox_upsert('b-lock', 'e2b', 'sbx-l', 't-b');
SELECT * FROM b_my_key_locks;
ROLLBACK;

SELECT sandbox_store.sandbox_delete(key) FROM sandbox_store.instances WHERE key LIKE 'b-%' ORDER BY key;

-- A wait that ends says which limit ended it: the wait argument or
-- lock_timeout, whichever came first.  (The claim's expiry is masked.)
CREATE FUNCTION b_wait_error(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  st text; detail text; hint text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
  RETURN st || ': ' || regexp_replace(regexp_replace(detail, 'until .* past', 'until ... past'), 'fence [0-9]+', 'fence N') || ' / ' || hint;
END
$$;
SELECT fence > 0 AS claimed FROM sandbox_store.sandbox_claim('b-wait', lease => '1 hour');
SET lock_timeout = '150ms';
SELECT b_wait_error($$SELECT sandbox_store.sandbox_claim('b-wait', lease => '1 min', wait => '5 s')$$);
SELECT b_wait_error($$SELECT sandbox_store.sandbox_ensure('b-wait', 'r', wait => '5 s')$$);
SELECT b_wait_error($$SELECT sandbox_store.sandbox_claim('b-wait', lease => '1 min', wait => '50 ms')$$);
SELECT b_wait_error($$SELECT sandbox_store.sandbox_lock('b-wait')$$);
RESET lock_timeout;
SELECT b_wait_error($$SELECT sandbox_store.sandbox_lock('b-wait', wait => '50 ms')$$);
-- A wait longer than lock_timeout can hold (2147483647 ms, about 24.8
-- days) bounds nothing sooner: lock_timeout still ends it ...
SET lock_timeout = '150ms';
SELECT b_wait_error($$SELECT sandbox_store.sandbox_lock('b-wait', wait => '30 days')$$);
RESET lock_timeout;
SELECT sandbox_store.sandbox_release('b-wait', owner_token) FROM sandbox_store.claims WHERE key = 'b-wait';
DROP FUNCTION b_wait_error(text);
-- ... and a free key is taken with it (isolation spec ensure-wait: a key
-- held by another transaction is waited for).
BEGIN;
SELECT sandbox_store.sandbox_lock('b-long-1', wait => '30 days');
SELECT action FROM sandbox_store.sandbox_ensure('b-long-2', 'r', wait => '1 mon');
SELECT fence > 0 AS claimed FROM sandbox_store.sandbox_claim('b-long-3', lease => '1 min', wait => '100 years');
SELECT fence > 0 AS claimed FROM sandbox_store.sandbox_claim('b-long-4', lease => '1 min', wait => '24 days 20:31:23.648');
SELECT count(*) AS key_locks FROM my_sb_locks WHERE granted;
SHOW lock_timeout;
ROLLBACK;

-- A lock-mode call refuses to run while its transaction ends, which is when
-- the rows of a WITH HOLD cursor not fetched before COMMIT are computed (the
-- lock would end before the result is read); the failed COMMIT rolls back
-- and nothing is left locked.  Rows fetched inside the transaction are
-- computed there, under the lock.  Lease mode is fine either way: a claim
-- outlives the transaction.
BEGIN;
DECLARE b_hold CURSOR WITH HOLD FOR SELECT action FROM sandbox_store.sandbox_ensure('b-hold', 'run-1');
COMMIT;
BEGIN;
DECLARE b_hold CURSOR WITH HOLD FOR SELECT sandbox_store.sandbox_lock('b-hold');
FETCH 1 FROM b_hold;
SELECT * FROM b_my_key_locks;
ROLLBACK;
BEGIN;
DECLARE b_hold CURSOR WITH HOLD FOR SELECT sandbox_store.sandbox_try_lock('b-hold');
COMMIT;
SELECT * FROM b_my_key_locks;
BEGIN;
DECLARE b_hold CURSOR WITH HOLD FOR
  SELECT action, fence > 0 AS claimed FROM sandbox_store.sandbox_ensure('b-hold', 'run-1', lease => '1 min');
COMMIT;
FETCH ALL FROM b_hold;
CLOSE b_hold;
SELECT sandbox_store.sandbox_release('b-hold', owner_token) FROM sandbox_store.claims WHERE key = 'b-hold';

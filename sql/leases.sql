--
-- leases (1.1): lease-mode sandbox_ensure, the claims view, sandbox_renew,
-- sandbox_release, fenced sandbox_upsert / sandbox_delete, fences,
-- sandbox_reap, sandbox_lock_holder, and their argument errors, in one
-- session.  (Races between sessions: specs/lease-*.spec, reap-*.spec.)
--
-- Owner tokens, fences and expiry times are random or moving: they are kept
-- in psql variables or the temporary table c and only compared, never
-- printed.  Leases are long (minutes) except where expiry is the point.
--
\i sql/include/fresh.sql
\pset null '<null>'
SET timezone = 'UTC';

-- err(sql): run sql; 'ok', or the SQLSTATE and message it raised.
-- Every claim taken below, in the order taken (n).
CREATE TEMP TABLE c (
  n serial, step text UNIQUE, key text, action text,
  provider_sandbox_id text, latest_run_id text, updated_at timestamptz,
  fence bigint, owner_token uuid, lease_expires_at timestamptz,
  taken_at timestamptz DEFAULT clock_timestamp());

-- Records: fresh, old, and of provider prov-x.
SELECT key FROM sandbox_store.sandbox_upsert('L-fresh', 'prov-x', 'sbx-fresh', 'thread-L',
                                             latest_run_id => 'run-0');
SELECT key FROM sandbox_store.sandbox_upsert('L-old', 'prov-x', 'sbx-old', 'thread-L',
                                             latest_run_id => 'run-0',
                                             updated_at => '2000-01-01 00:00:00+00');
SELECT key FROM sandbox_store.sandbox_upsert('L-prov', 'prov-x', 'sbx-prov', 'thread-L',
                                             latest_run_id => 'run-0');

--
-- Lease mode decides create / resume / recreate as lock mode does, and
-- answers with a claim: fence, owner_token, lease_expires_at (now + lease).
--
INSERT INTO c (step, key, action, provider_sandbox_id, latest_run_id, updated_at, fence,
               owner_token, lease_expires_at)
SELECT 'create', 'L-new', action, provider_sandbox_id, latest_run_id, updated_at, fence,
       owner_token, lease_expires_at
  FROM sandbox_store.sandbox_ensure('L-new', 'run-1', lease => '1 minute');
INSERT INTO c (step, key, action, provider_sandbox_id, latest_run_id, updated_at, fence,
               owner_token, lease_expires_at)
SELECT 'resume', 'L-fresh', action, provider_sandbox_id, latest_run_id, updated_at, fence,
       owner_token, lease_expires_at
  FROM sandbox_store.sandbox_ensure('L-fresh', 'run-1', max_age => '1 hour', lease => '1 minute');
INSERT INTO c (step, key, action, provider_sandbox_id, latest_run_id, updated_at, fence,
               owner_token, lease_expires_at)
SELECT 'recreate by age', 'L-old', action, provider_sandbox_id, latest_run_id, updated_at, fence,
       owner_token, lease_expires_at
  FROM sandbox_store.sandbox_ensure('L-old', 'run-1', max_age => '1 hour', lease => '1 minute');
INSERT INTO c (step, key, action, provider_sandbox_id, latest_run_id, updated_at, fence,
               owner_token, lease_expires_at)
SELECT 'recreate by provider', 'L-prov', action, provider_sandbox_id, latest_run_id, updated_at,
       fence, owner_token, lease_expires_at
  FROM sandbox_store.sandbox_ensure('L-prov', 'run-1', provider => 'prov-y', lease => '1 minute');
-- create carries no record; resume is stamped (run-1, the statement's now());
-- recreate carries the old record unstamped (run-0).  Every row has a claim
-- that expires a minute after it was taken.
SELECT step, action, provider_sandbox_id, latest_run_id,
       CASE WHEN updated_at = '2000-01-01 00:00:00+00' THEN 'old'
            WHEN updated_at IS NULL THEN NULL ELSE 'recent' END AS updated,
       fence > 0 AS has_fence, owner_token IS NOT NULL AS has_token,
       lease_expires_at - taken_at BETWEEN interval '59 seconds' AND interval '60 seconds'
         AS expires_in_a_minute
  FROM c ORDER BY n;
-- Each claim its own fence and token.
SELECT count(DISTINCT fence) AS fences, count(DISTINCT owner_token) AS tokens FROM c;
-- Outside a transaction block a claim needs no warning (the lease holds the
-- key, not the statement's lock), and the resume stamp is committed.
SELECT key, latest_run_id FROM sandbox_store.sandbox_get('L-fresh');
SELECT key, latest_run_id, updated_at FROM sandbox_store.sandbox_get('L-old');
SELECT count(*) AS locks_after_statement FROM my_sb_locks;

-- Lock mode (lease NULL, the default) leaves the claim columns NULL.
BEGIN;
SELECT action, fence, owner_token, lease_expires_at
  FROM sandbox_store.sandbox_ensure('L-lockmode', 'run-1');
SELECT action, fence, owner_token, lease_expires_at
  FROM sandbox_store.sandbox_ensure('L-lockmode', 'run-1', lease => NULL);
ROLLBACK;

--
-- The claims view: the live claims, with the same fence, token and expiry.
--
SELECT v.key, v.fence = c.fence AS same_fence, v.owner_token = c.owner_token AS same_token,
       v.lease_expires_at = c.lease_expires_at AS same_expiry
  FROM sandbox_store.claims v JOIN c USING (key) ORDER BY v.key;

--
-- A live claim holds the key: every other ensure, lock or claim waits (up to
-- wait) or raises 55P03, here without waiting.
--
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('L-new', 'run-2', wait => '0')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('L-new', 'run-2', wait => '0', lease => '1 minute')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('L-new', 'run-2', wait => '50 ms')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_lock('L-new', wait => '0')$$);
SELECT sandbox_store.sandbox_try_lock('L-new') AS try_lock;
-- A claimed key with a record: refused the same way.  (The DETAIL names the
-- claim's fence and expiry; not shown, they vary.)
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('L-fresh', 'run-2', wait => '0')$$);
-- Nothing was stamped by the refused calls.
SELECT key, latest_run_id FROM sandbox_store.sandbox_get('L-fresh');

--
-- sandbox_renew: extends the claim to now + lease and returns the new
-- expiry, which the claims view shows; SB001 for a token that does not hold
-- the key.
--
SELECT fence AS new_fence, owner_token AS new_token, lease_expires_at AS new_expires
  FROM c WHERE step = 'create' \gset
SELECT sandbox_store.sandbox_renew('L-new', :'new_token', '10 minutes') AS renewed_until \gset
SELECT :'renewed_until'::timestamptz > :'new_expires'::timestamptz + interval '8 minutes' AS extended,
       :'renewed_until'::timestamptz = (SELECT lease_expires_at FROM sandbox_store.claims
                                        WHERE key = 'L-new') AS view_shows_it;
-- A shorter lease may shorten it again (now + lease, not max).
SELECT sandbox_store.sandbox_renew('L-new', :'new_token', '2 minutes')
       < :'renewed_until'::timestamptz AS shortened;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_renew('L-new', '00000000-0000-0000-0000-000000000000', '1 minute')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_renew('L-nobody-claimed', '00000000-0000-0000-0000-000000000000', '1 minute')$$);
-- the token of another key's claim does not renew this key.
SELECT pg_temp.err(format($$SELECT sandbox_store.sandbox_renew('L-new', %L, '1 minute')$$,
                          (SELECT owner_token FROM c WHERE step = 'resume')));
-- The full message.
SELECT sandbox_store.sandbox_renew('L-new', '00000000-0000-0000-0000-000000000000', '1 minute');

--
-- Fenced writes: with the current fence they succeed (a fenced delete is the
-- claim holder's own and does not wait for its own claim).
--
SELECT key, provider_sandbox_id, latest_run_id, updated_at
  FROM sandbox_store.sandbox_upsert('L-new', 'prov-x', 'sbx-new-1', 'thread-L',
                                    latest_run_id => 'run-1',
                                    updated_at => '2026-06-01 00:00:00+00', fence => :new_fence);
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('L-new');
SELECT fence AS old_fence FROM c WHERE step = 'recreate by age' \gset
SELECT sandbox_store.sandbox_delete('L-old', fence => :old_fence) AS deleted;
SELECT count(*) AS old_records FROM sandbox_store.sandbox_get('L-old');
-- A fenced write to a key never claimed is refused: no fence was ever given
-- for it, so the fence is not one of its claims (SB001, nothing written).
SELECT key FROM sandbox_store.sandbox_upsert('L-unclaimed', 'prov-x', 'sbx-u', 'thread-L',
                                             fence => 1);
SELECT sandbox_store.sandbox_delete('L-unclaimed', fence => 1) AS deleted;

--
-- sandbox_release: true for the holder, then false for the same token; false
-- for an unknown token.  A released key is free at once.
--
SELECT sandbox_store.sandbox_release('L-new', :'new_token') AS released;
SELECT sandbox_store.sandbox_release('L-new', :'new_token') AS released_again;
SELECT sandbox_store.sandbox_release('L-new', '00000000-0000-0000-0000-000000000000') AS unknown;
SELECT sandbox_store.sandbox_release('L-nobody-claimed', '00000000-0000-0000-0000-000000000000')
       AS never_claimed;
SELECT count(*) AS claims_on_key FROM sandbox_store.claims WHERE key = 'L-new';
-- renew after release: the claim is gone.
SELECT pg_temp.err(format($$SELECT sandbox_store.sandbox_renew('L-new', %L, '1 minute')$$,
                          :'new_token'));
-- The holder's fence is dead once it has released its claim: a fenced
-- write is refused (SB001, the claim has ended) and changes nothing.
SELECT key, provider_sandbox_id
  FROM sandbox_store.sandbox_upsert('L-new', 'prov-x', 'sbx-new-2', 'thread-L',
                                    latest_run_id => 'run-1',
                                    updated_at => '2026-06-02 00:00:00+00', fence => :new_fence);

--
-- Across release: the next claim has a higher fence, and the old holder's
-- fenced writes raise SB001 and change nothing.
--
INSERT INTO c (step, key, action, provider_sandbox_id, latest_run_id, fence, owner_token,
               lease_expires_at)
SELECT 'after release', 'L-new', action, provider_sandbox_id, latest_run_id, fence, owner_token,
       lease_expires_at
  FROM sandbox_store.sandbox_ensure('L-new', 'run-2', wait => '0', lease => '1 minute');
SELECT step, action, provider_sandbox_id, latest_run_id,
       fence > :new_fence AS higher_fence FROM c WHERE step = 'after release';
CREATE TEMP TABLE record_before AS SELECT * FROM sandbox_store.sandbox_get('L-new');
SELECT pg_temp.err(format($$SELECT sandbox_store.sandbox_upsert('L-new', 'prov-x', 'sbx-stale', 'thread-L', fence => %s)$$,
                          :new_fence));
SELECT pg_temp.err(format($$SELECT sandbox_store.sandbox_delete('L-new', fence => %s)$$,
                          :new_fence));
SELECT (SELECT row(r.*)::text FROM record_before r)
       = (SELECT row(g.*)::text FROM sandbox_store.sandbox_get('L-new') g) AS record_unchanged;
-- The full message: SQLSTATE SB001, with the two fences (not shown: they vary).
\set VERBOSITY sqlstate
SELECT sandbox_store.sandbox_upsert('L-new', 'prov-x', 'sbx-stale', 'thread-L', fence => :new_fence);
\set VERBOSITY default
-- A stale release is false and leaves the successor's claim alone.
SELECT sandbox_store.sandbox_release('L-new', :'new_token') AS stale_release;
SELECT v.fence = c.fence AS successor_still_holds
  FROM sandbox_store.claims v JOIN c ON c.step = 'after release' AND v.key = c.key;

--
-- Across expiry: a short lease runs out; the claims view drops it at once
-- (the leases row keeps the token until someone takes the key over).  The
-- claims are live on a minute's lease while they are listed, then renewed
-- to a millisecond (a busy machine may take longer than a short lease
-- between two statements: no lease the test needs live is short).
--
SELECT fence AS rel_fence, owner_token AS rel_token FROM c WHERE step = 'after release' \gset
SELECT sandbox_store.sandbox_renew('L-new', :'rel_token', '1 minute') IS NOT NULL AS renewed;
SELECT fence AS exp_fence, owner_token AS exp_token
  FROM sandbox_store.sandbox_ensure('L-expire', 'run-1', lease => '1 minute') \gset
SELECT fence AS rp_fence, owner_token AS rp_token
  FROM sandbox_store.sandbox_ensure('L-expire-renew', 'run-1', lease => '1 minute') \gset
SELECT key FROM sandbox_store.claims WHERE key IN ('L-new', 'L-expire', 'L-expire-renew')
 ORDER BY key;
SELECT sandbox_store.sandbox_renew('L-new', :'rel_token', '1 millisecond') IS NOT NULL AS renewed_short,
       sandbox_store.sandbox_renew('L-expire', :'exp_token', '1 millisecond') IS NOT NULL AS renewed_short,
       sandbox_store.sandbox_renew('L-expire-renew', :'rp_token', '1 millisecond') IS NOT NULL AS renewed_short;
SELECT pg_sleep(0.01);
SELECT key FROM sandbox_store.claims WHERE key IN ('L-new', 'L-expire', 'L-expire-renew')
 ORDER BY key;
SELECT key, owner_token IS NOT NULL AS token_kept FROM sandbox_store.leases
 WHERE key IN ('L-new', 'L-expire', 'L-expire-renew') ORDER BY key;
-- An expired claim that nobody took over can still be renewed by its holder.
SELECT sandbox_store.sandbox_renew('L-expire-renew', :'rp_token', '1 minute') > now() AS renewed;
SELECT key FROM sandbox_store.claims WHERE key = 'L-expire-renew';
SELECT sandbox_store.sandbox_release('L-expire-renew', :'rp_token') AS released;
-- A claim takes an expired one over (no wait) with a higher fence ...
INSERT INTO c (step, key, action, provider_sandbox_id, latest_run_id, fence, owner_token,
               lease_expires_at)
SELECT 'after expiry', 'L-new', action, provider_sandbox_id, latest_run_id, fence, owner_token,
       lease_expires_at
  FROM sandbox_store.sandbox_ensure('L-new', 'run-3', wait => '0', lease => '1 minute');
SELECT step, action, provider_sandbox_id, latest_run_id, fence > :rel_fence AS higher_fence
  FROM c WHERE step = 'after expiry';
-- ... and the expired holder is fenced off: upsert, delete and renew raise
-- SB001, release is false, the record is unchanged.
DROP TABLE record_before;
CREATE TEMP TABLE record_before AS SELECT * FROM sandbox_store.sandbox_get('L-new');
SELECT pg_temp.err(format($$SELECT sandbox_store.sandbox_upsert('L-new', 'prov-x', 'sbx-stale', 'thread-L', fence => %s)$$,
                          :rel_fence));
SELECT pg_temp.err(format($$SELECT sandbox_store.sandbox_delete('L-new', fence => %s)$$,
                          :rel_fence));
SELECT pg_temp.err(format($$SELECT sandbox_store.sandbox_renew('L-new', %L, '1 minute')$$,
                          :'rel_token'));
SELECT sandbox_store.sandbox_release('L-new', :'rel_token') AS stale_release;
SELECT (SELECT row(r.*)::text FROM record_before r)
       = (SELECT row(g.*)::text FROM sandbox_store.sandbox_get('L-new') g) AS record_unchanged;
-- A lock-mode call takes an expired claim over too: the key gets a new fence
-- (no claim), so the expired holder is fenced off just the same.
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('L-expire', 'run-2');
SELECT fence > :exp_fence AS new_fence, owner_token, lease_expires_at
  FROM sandbox_store.leases WHERE key = 'L-expire';
SELECT pg_temp.err(format($$SELECT sandbox_store.sandbox_upsert('L-expire', 'prov-x', 'sbx-stale', 'thread-L', fence => %s)$$,
                          :exp_fence));
COMMIT;
SELECT count(*) AS expire_records FROM sandbox_store.sandbox_get('L-expire');

--
-- Across delete and re-create: the claim holder deletes its record; the key
-- is released; a new claim creates, with a higher fence again.
--
SELECT fence AS exp2_fence, owner_token AS exp2_token FROM c WHERE step = 'after expiry' \gset
SELECT sandbox_store.sandbox_delete('L-new', fence => :exp2_fence) AS deleted;
SELECT sandbox_store.sandbox_release('L-new', :'exp2_token') AS released;
INSERT INTO c (step, key, action, provider_sandbox_id, latest_run_id, fence, owner_token,
               lease_expires_at)
SELECT 'after delete', 'L-new', action, provider_sandbox_id, latest_run_id, fence, owner_token,
       lease_expires_at
  FROM sandbox_store.sandbox_ensure('L-new', 'run-4', wait => '0', lease => '1 minute');
SELECT step, action, provider_sandbox_id, fence > :exp2_fence AS higher_fence
  FROM c WHERE step = 'after delete';
-- An unfenced delete waits for a live claim (specs/); once the claim is
-- released it goes at once.
SELECT fence AS del_fence, owner_token AS del_token FROM c WHERE step = 'after delete' \gset
SELECT sandbox_store.sandbox_release('L-new', :'del_token') AS released;
SELECT sandbox_store.sandbox_delete('L-new') AS deleted_nothing;

-- A claim taken in a transaction that rolls back is gone with it; its fence
-- is never handed out again.
BEGIN;
SELECT fence AS rb_fence FROM sandbox_store.sandbox_ensure('L-new', 'run-5', lease => '1 minute') \gset
SELECT count(*) AS claims_in_transaction FROM sandbox_store.claims WHERE key = 'L-new';
ROLLBACK;
SELECT count(*) AS claims_after_rollback FROM sandbox_store.claims WHERE key = 'L-new';
SELECT :rb_fence > :del_fence AS rolled_back_fence_was_higher;
INSERT INTO c (step, key, action, fence, owner_token, lease_expires_at)
SELECT 'after rollback', 'L-new', action, fence, owner_token, lease_expires_at
  FROM sandbox_store.sandbox_ensure('L-new', 'run-6', wait => '0', lease => '1 minute');
SELECT step, action, fence > :rb_fence AS higher_fence FROM c WHERE step = 'after rollback';

-- In all: the fences of key L-new strictly increase, claim after claim.
SELECT step, fence > lag(fence) OVER (ORDER BY n) AS higher_than_before
  FROM c WHERE key = 'L-new' ORDER BY n;
-- ... and no fence was ever handed out twice, over all keys.
SELECT count(*) = count(DISTINCT fence) AS all_distinct FROM c;
SELECT owner_token AS last_token FROM c WHERE step = 'after rollback' \gset
SELECT sandbox_store.sandbox_release('L-new', :'last_token') AS released;

--
-- A claim waited for: a bounded wait longer than the holder's lease gets the
-- key when the lease runs out, with a higher fence.
--
SELECT fence AS w_fence, owner_token AS w_token
  FROM sandbox_store.sandbox_ensure('L-wait', 'run-1', lease => '200 ms') \gset
SELECT action, fence > :w_fence AS higher_fence, owner_token <> :'w_token' AS new_token
  FROM sandbox_store.sandbox_ensure('L-wait', 'run-2', wait => '5 seconds', lease => '1 minute');
SELECT sandbox_store.sandbox_release('L-wait', :'w_token') AS stale_release;
SELECT sandbox_store.sandbox_release('L-wait', owner_token) AS released
  FROM sandbox_store.claims WHERE key = 'L-wait';

--
-- sandbox_lock_holder: this backend's pid while its transaction holds the
-- key's lock; NULL otherwise.  A claim has no backend.
--
SELECT sandbox_store.sandbox_lock_holder('L-holder') AS holder;
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('L-holder', 'run-1');
SELECT sandbox_store.sandbox_lock_holder('L-holder') = pg_backend_pid() AS this_backend;
SELECT sandbox_store.sandbox_lock_holder('L-other') AS other_key;
COMMIT;
SELECT sandbox_store.sandbox_lock_holder('L-holder') AS after_commit;
BEGIN;
SELECT sandbox_store.sandbox_lock('L-holder');
SELECT sandbox_store.sandbox_lock_holder('L-holder') = pg_backend_pid() AS this_backend;
ROLLBACK;
SELECT sandbox_store.sandbox_lock_holder('L-holder') AS after_rollback;
-- A lease-mode call in a transaction block also holds the lock until the
-- transaction ends; after that only the claim holds the key.
BEGIN;
SELECT owner_token AS h_token FROM sandbox_store.sandbox_ensure('L-holder', 'run-2', lease => '1 minute') \gset
SELECT sandbox_store.sandbox_lock_holder('L-holder') = pg_backend_pid() AS this_backend;
COMMIT;
SELECT sandbox_store.sandbox_lock_holder('L-holder') AS after_commit,
       (SELECT count(*) FROM sandbox_store.claims WHERE key = 'L-holder') AS claims;
SELECT sandbox_store.sandbox_release('L-holder', :'h_token') AS released;

--
-- sandbox_reap: deletes and returns records idle longer than idle_for,
-- oldest first, at most max_rows, skipping keys that are claimed.
--
SELECT key FROM sandbox_store.instances ORDER BY key;
SELECT count(*) AS written FROM generate_series(1, 6) i,
  sandbox_store.sandbox_upsert('R' || i, 'prov-r', 'sbx-r' || i, 'thread-R',
                               updated_at => '2000-01-01 00:00:00+00'::timestamptz
                                             + (7 - i) * interval '1 hour');
-- R6 is the oldest, R1 the newest; R-fresh is not idle.
SELECT key FROM sandbox_store.sandbox_upsert('R-fresh', 'prov-r', 'sbx-rf', 'thread-R');
-- R5 is claimed (recreate by age: the record stays old).
SELECT action, fence AS r5_fence, owner_token AS r5_token
  FROM sandbox_store.sandbox_ensure('R5', 'run-1', max_age => '1 day', lease => '1 minute') \gset
SELECT :'action' AS action;
-- max_rows: the two oldest unclaimed, oldest first.
SELECT key, provider_sandbox_id, updated_at FROM sandbox_store.sandbox_reap('1 day', max_rows => 2);
SELECT key FROM sandbox_store.sandbox_get('R6') UNION ALL SELECT key FROM sandbox_store.sandbox_get('R4');
-- A key this session's own transaction holds the lock of is not busy to it:
-- it is reaped (the lock is already its own).  Another session's lock makes
-- the reaper skip the key (specs/reap-skip.spec).
BEGIN;
SELECT sandbox_store.sandbox_lock('R3');
SELECT key FROM sandbox_store.sandbox_reap('1 day', max_rows => 1);
ROLLBACK;
-- The claim skips R5 whoever asks, this session included: claims belong to
-- no session.  The default max_rows (100) takes the rest.
SELECT key, updated_at FROM sandbox_store.sandbox_reap('1 day');
SELECT key FROM sandbox_store.sandbox_list('thread-R') ORDER BY key;
-- Nothing left that is idle and free; idle_for 0 reaps R-fresh (written by an
-- earlier transaction), still not the claimed R5.
SELECT key FROM sandbox_store.sandbox_reap('1 day');
SELECT key FROM sandbox_store.sandbox_reap('0');
-- Released, R5 is reaped; its record comes back whole.
SELECT sandbox_store.sandbox_release('R5', :'r5_token') AS released;
SELECT * FROM sandbox_store.sandbox_reap('1 day');
-- An expired claim does not protect a key: the reaper takes it over (new
-- fence) and reaps.
SELECT key FROM sandbox_store.sandbox_upsert('R7', 'prov-r', 'sbx-r7', 'thread-R',
                                             updated_at => '2000-01-01 00:00:00+00');
SELECT fence AS r7_fence, owner_token AS r7_token
  FROM sandbox_store.sandbox_ensure('R7', 'run-1', max_age => '1 day', lease => '1 minute') \gset
SELECT key FROM sandbox_store.sandbox_reap('1 day');
SELECT sandbox_store.sandbox_renew('R7', :'r7_token', '1 millisecond') IS NOT NULL AS renewed_short;
SELECT pg_sleep(0.01);
SELECT key FROM sandbox_store.sandbox_reap('1 day');
SELECT fence > :r7_fence AS new_fence, owner_token FROM sandbox_store.leases WHERE key = 'R7';
SELECT count(*) AS locks FROM my_sb_locks;

--
-- Argument errors of the new functions and arguments, with their SQLSTATE.
--
CREATE TEMP TABLE calls(n serial, q text);
INSERT INTO calls(q) VALUES
-- NULL: 22004.
  ($$SELECT sandbox_store.sandbox_renew(NULL, '00000000-0000-0000-0000-000000000000', '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_renew('L-err', NULL, '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_renew('L-err', '00000000-0000-0000-0000-000000000000', NULL)$$),
  ($$SELECT sandbox_store.sandbox_release(NULL, '00000000-0000-0000-0000-000000000000')$$),
  ($$SELECT sandbox_store.sandbox_release('L-err', NULL)$$),
  ($$SELECT sandbox_store.sandbox_reap(NULL)$$),
  ($$SELECT sandbox_store.sandbox_reap('1 day', NULL)$$),
  ($$SELECT sandbox_store.sandbox_lock_holder(NULL)$$),
  ($$SELECT sandbox_store.sandbox_ensure(NULL, 'r', lease => '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_ensure('L-err', NULL, lease => '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_upsert(NULL, 'p', 's', 't', fence => 1)$$),
  ($$SELECT sandbox_store.sandbox_delete(NULL, fence => 1)$$),
-- A negative or zero lease: 22023.
  ($$SELECT sandbox_store.sandbox_ensure('L-err', 'r', lease => '0')$$),
  ($$SELECT sandbox_store.sandbox_ensure('L-err', 'r', lease => '-1 second')$$),
  ($$SELECT sandbox_store.sandbox_ensure('L-err', 'r', lease => '1 mon -31 days')$$),
  ($$SELECT sandbox_store.sandbox_renew('L-err', '00000000-0000-0000-0000-000000000000', '0')$$),
  ($$SELECT sandbox_store.sandbox_renew('L-err', '00000000-0000-0000-0000-000000000000', '-5 minutes')$$),
-- A fence <= 0: 22023.
  ($$SELECT sandbox_store.sandbox_upsert('L-err', 'p', 's', 't', fence => 0)$$),
  ($$SELECT sandbox_store.sandbox_upsert('L-err', 'p', 's', 't', fence => -1)$$),
  ($$SELECT sandbox_store.sandbox_delete('L-err', fence => 0)$$),
  ($$SELECT sandbox_store.sandbox_delete('L-err', fence => -1)$$),
-- max_rows <= 0, a negative idle_for: 22023.
  ($$SELECT sandbox_store.sandbox_reap('1 day', max_rows => 0)$$),
  ($$SELECT sandbox_store.sandbox_reap('1 day', max_rows => -1)$$),
  ($$SELECT sandbox_store.sandbox_reap('-1 second')$$),
-- Unknown token: SB001 for renew, false for release (not an error).
  ($$SELECT sandbox_store.sandbox_renew('L-err', '00000000-0000-0000-0000-000000000000', '1 minute')$$),
  ($$SELECT sandbox_store.sandbox_release('L-err', '00000000-0000-0000-0000-000000000000')$$);
SELECT n, pg_temp.err(q) FROM calls ORDER BY n;
-- None of them claimed, wrote or left anything.
SELECT count(*) AS err_leases FROM sandbox_store.leases WHERE key = 'L-err';
SELECT count(*) AS err_records FROM sandbox_store.sandbox_get('L-err');
SELECT count(*) AS locks FROM my_sb_locks;

-- Clean up: release the first claims; no live claim is left behind.
SELECT step, sandbox_store.sandbox_release(key, owner_token) AS released
  FROM c WHERE step IN ('resume', 'recreate by age', 'recreate by provider') ORDER BY n;
SELECT count(*) AS live_claims FROM sandbox_store.claims;
DROP VIEW my_sb_locks;

-- Ages and waits too large for timestamp arithmetic are no error: nothing is
-- older than max_age or idle_for, and such a wait is as long as the session
-- allows.
SELECT key FROM sandbox_store.sandbox_upsert('huge', 'p', 'sbx-huge', 't',
  updated_at => '1000-01-01 00:00:00+00');
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('huge', 'r', max_age => '200000 years');
SELECT action FROM sandbox_store.sandbox_ensure('huge', 'r', max_age => '1000 years');
SELECT sandbox_store.sandbox_lock('huge-wait', wait => '1000000 years');
ROLLBACK;
SELECT count(*) AS reaped FROM sandbox_store.sandbox_reap('200000 years');
SELECT sandbox_store.sandbox_delete('huge');

-- sandbox_claim: a claim and nothing else (lease mode's lock for any
-- critical section).  It writes no record, and excludes like any claim.
SELECT key FROM sandbox_store.sandbox_upsert('cl', 'p', 'sbx-cl', 't', latest_run_id => 'run-0');
SELECT fence AS cl_fence, owner_token AS cl_token, lease_expires_at > clock_timestamp() AS live
  FROM sandbox_store.sandbox_claim('cl', lease => '1 minute') \gset
SELECT :'live' AS live, latest_run_id AS record_untouched FROM sandbox_store.sandbox_get('cl');
SELECT fence = :cl_fence AS same_fence, owner_token = :'cl_token' AS same_token
  FROM sandbox_store.claims WHERE key = 'cl';
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_claim('cl', '1 minute', wait => '0')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_ensure('cl', 'r', wait => '0')$$);
SELECT key FROM sandbox_store.sandbox_upsert('cl', 'p', 'sbx-cl2', 't', fence => :cl_fence);
SELECT sandbox_store.sandbox_release('cl', :'cl_token') AS released;
SELECT fence > :cl_fence AS higher_fence FROM sandbox_store.sandbox_claim('cl', '1 second', wait => '0');
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_claim(NULL, '1 minute')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_claim('cl', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_claim('cl', '0')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_claim('', '1 minute')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_claim('cl', '1 minute', wait => '-1 s')$$);
-- A lease past the latest timestamp is a bad value, named.
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_ensure('cl', 'r', lease => '1000000 years')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_claim('cl', '2147483647 days')$$);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_renew('cl', gen_random_uuid(), '300000 years')$$);
SELECT pg_temp.err($$SELECT * FROM sandbox_store.sandbox_claim('cl', '100 years', wait => '0')$$) LIKE '55P03%' AS a_long_lease_is_fine;

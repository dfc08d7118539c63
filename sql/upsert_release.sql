--
-- upsert_release: sandbox_upsert_release (1.3), the claim holder's last
-- write, which also ends the claim its fence was given with, in the same
-- transaction.  A lease-mode create is then two commits: the claim, and
-- this write.  What is written is what sandbox_upsert writes; the claim
-- ends exactly when the write is accepted; a refused call changes nothing.
--
\i sql/include/fresh.sql

-- The lease-mode create cycle: claim and "create", then write and release.
SELECT action, fence AS f1, owner_token AS t1
  FROM sandbox_store.sandbox_ensure(key => 'ur-1', run_id => 'run-1', lease => '1 hour') \gset
SELECT :'action' AS action;
SELECT key, provider, provider_sandbox_id, thread_id, latest_snapshot_id, latest_run_id
  FROM sandbox_store.sandbox_upsert_release(key => 'ur-1', fence => :f1, provider => 'e2b',
                                            provider_sandbox_id => 'sbx-1', thread_id => 'thread-1',
                                            latest_run_id => 'run-1');
-- The record is stored, the claim is over, the key keeps its fence.
SELECT key, provider_sandbox_id, latest_run_id FROM sandbox_store.instances;
SELECT count(*) AS claims FROM sandbox_store.claims;
SELECT key, fence = :f1 AS same_fence, owner_token IS NULL AS unclaimed, lease_expires_at IS NULL AS no_expiry
  FROM sandbox_store.leases;
SELECT count(*) AS locks_left FROM my_sb_locks;
-- The token of the ended claim no longer holds anything.
SELECT sandbox_store.sandbox_release('ur-1', :'t1') AS released_again;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_renew('ur-1', '$$ || :'t1' || $$', '1 hour')$$) AS renew;

-- The next run claims the key at once (no live claim), with a higher fence,
-- and resumes the record.
SELECT action, provider_sandbox_id, fence > :f1 AS higher_fence
  FROM sandbox_store.sandbox_ensure(key => 'ur-1', run_id => 'run-2', lease => '1 hour');
SELECT fence AS f2, owner_token AS t2 FROM sandbox_store.claims WHERE key = 'ur-1' \gset

-- A write fenced with the ended claim's fence is refused, and changes
-- nothing: neither the record nor the live claim.
\set VERBOSITY sqlstate
SELECT * FROM sandbox_store.sandbox_upsert_release(key => 'ur-1', fence => :f1, provider => 'e2b',
                                                   provider_sandbox_id => 'sbx-stale', thread_id => 'thread-1');
\set VERBOSITY default
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-1', $$ || :f1 || $$, 'e2b', 'sbx-stale', 'thread-1')$$) AS stale;
SELECT provider_sandbox_id, latest_run_id FROM sandbox_store.instances WHERE key = 'ur-1';
SELECT fence = :f2 AS same_claim, owner_token = :'t2' AS same_token FROM sandbox_store.claims WHERE key = 'ur-1';

-- A fence of another key, or one never given, is refused the same way.
SELECT fence AS fb FROM sandbox_store.sandbox_claim('ur-other', '1 hour') \gset
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-1', $$ || :fb || $$, 'e2b', 'sbx-x', 'thread-1')$$) AS foreign_fence;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-never', 7, 'e2b', 'sbx-x', 'thread-1')$$) AS never_claimed;
SELECT count(*) AS records FROM sandbox_store.instances;
SELECT key, fence = :f2 AS same_claim FROM sandbox_store.claims ORDER BY key;

-- Arguments: the fence is required and positive; the record's arguments
-- are checked as sandbox_upsert checks them; nothing changes.
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-1', NULL, 'e2b', 'sbx-x', 'thread-1')$$) AS null_fence;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-1', 0, 'e2b', 'sbx-x', 'thread-1')$$) AS zero_fence;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-1', -5, 'e2b', 'sbx-x', 'thread-1')$$) AS negative_fence;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release(NULL, $$ || :f2 || $$, 'e2b', 'sbx-x', 'thread-1')$$) AS null_key;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('', $$ || :f2 || $$, 'e2b', 'sbx-x', 'thread-1')$$) AS empty_key;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-1', $$ || :f2 || $$, NULL, 'sbx-x', 'thread-1')$$) AS null_provider;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-1', $$ || :f2 || $$, 'e2b', 'sbx-x', 'thread-1', latest_run_id => repeat('r', 1025))$$) AS long_run_id;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-1', $$ || :f2 || $$, 'e2b', 'sbx-x', 'thread-1', updated_at => NULL)$$) AS null_updated_at;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-1', $$ || :f2 || $$, 'e2b', 'sbx-x', 'thread-1', updated_at => 'infinity')$$) AS infinite_updated_at;
SELECT provider_sandbox_id, latest_run_id FROM sandbox_store.instances WHERE key = 'ur-1';
SELECT fence = :f2 AS same_claim, owner_token = :'t2' AS same_token FROM sandbox_store.claims WHERE key = 'ur-1';

-- A write that fails after the fence check (a constraint of the table) ends
-- no claim either: the release is part of the write's transaction.
ALTER TABLE sandbox_store.instances ADD CONSTRAINT no_bad CHECK (provider_sandbox_id <> 'sbx-bad');
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('ur-1', $$ || :f2 || $$, 'e2b', 'sbx-bad', 'thread-1')$$) AS check_violation;
ALTER TABLE sandbox_store.instances DROP CONSTRAINT no_bad;
SELECT fence = :f2 AS same_claim, owner_token = :'t2' AS same_token FROM sandbox_store.claims WHERE key = 'ur-1';

-- In a transaction that rolls back, the claim stays and the record is as before.
BEGIN;
SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert_release('ur-1', :f2, 'e2b', 'sbx-rolled-back', 'thread-1');
SELECT count(*) AS claims_inside FROM sandbox_store.claims WHERE key = 'ur-1';
ROLLBACK;
SELECT provider_sandbox_id FROM sandbox_store.instances WHERE key = 'ur-1';
SELECT fence = :f2 AS same_claim FROM sandbox_store.claims WHERE key = 'ur-1';

-- An expired claim that nobody took over still holds the key's newest
-- fence: its holder's last write is accepted (as a fenced sandbox_upsert
-- is), and ends it.
SELECT fence AS f3 FROM sandbox_store.sandbox_claim('ur-2', '1 millisecond') \gset
SELECT pg_sleep(0.01);
SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert_release('ur-2', :f3, 'e2b', 'sbx-late', 'thread-2');
SELECT count(*) AS claims_on_ur_2 FROM sandbox_store.claims WHERE key = 'ur-2';
SELECT owner_token IS NULL AS unclaimed, fence = :f3 AS same_fence FROM sandbox_store.leases WHERE key = 'ur-2';

-- A claim released before the write: the fence is still the key's newest,
-- but its claim has ended, so the write is refused (SB001) and changes
-- nothing.  A retry after a lost acknowledgement of a call that did commit
-- gets the same answer; sandbox_get shows what the first attempt wrote.
SELECT fence AS f4, owner_token AS t4 FROM sandbox_store.sandbox_claim('ur-3', '1 hour') \gset
SELECT sandbox_store.sandbox_release('ur-3', :'t4') AS released;
SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert_release('ur-3', :f4, 'e2b', 'sbx-3', 'thread-3');
SELECT count(*) AS records FROM sandbox_store.instances WHERE key = 'ur-3';
SELECT owner_token IS NULL AS unclaimed, fence = :f4 AS same_fence FROM sandbox_store.leases WHERE key = 'ur-3';

-- Under REPEATABLE READ it writes and releases as well.
SELECT fence AS f5 FROM sandbox_store.sandbox_claim('ur-4', '1 hour') \gset
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert_release('ur-4', :f5, 'e2b', 'sbx-4', 'thread-4');
COMMIT;
SELECT owner_token IS NULL AS unclaimed FROM sandbox_store.leases WHERE key = 'ur-4';
SELECT provider_sandbox_id FROM sandbox_store.sandbox_get('ur-4');

-- No lock of the extension is left behind by any of this.
SELECT pg_temp.sb_lock_count() AS locks_left;

--
-- fences: a key's new fence is above the key's newest fence by
-- construction, not only because the sequence moves forward.  The sequence
-- is set back below every fence given so far (what an admin's setval does,
-- and what a key meets on a distributed cluster when its row moves to a
-- node whose own range of the sequence is lower); then every way a key gets
-- a new fence (a claim after a release, a claim over an expired claim, a
-- lock-mode call that retires an expired claim) still gives it one above
-- its last, and the old holder stays fenced off.  A key never claimed gets
-- the sequence's value.  Before 1.4 these fences came from the sequence
-- alone and went back with it.
--
\i test/sql/include/fresh.sql
SELECT fence AS f1 FROM sandbox_store.sandbox_claim('f-1', '1 hour') \gset
SELECT count(*) AS others
  FROM generate_series(1, 20) i, sandbox_store.sandbox_claim('f-other-' || i, '1 hour');
SELECT sandbox_store.sandbox_release('f-1', owner_token) AS released
  FROM sandbox_store.claims WHERE key = 'f-1';
SELECT fence AS f2 FROM sandbox_store.sandbox_claim('f-1', '1 hour') \gset
SELECT :f1 AS f1, :f2 AS f2;

-- The sequence goes back to 1.
SELECT setval('sandbox_store.fence_seq', 1, false) AS sequence_set_back;

-- A claim after a release: the key's newest fence plus one.
SELECT sandbox_store.sandbox_release('f-1', owner_token) AS released
  FROM sandbox_store.claims WHERE key = 'f-1';
SELECT fence - :f2 AS above_f2_by FROM sandbox_store.sandbox_claim('f-1', '1 hour');
SELECT sandbox_store.sandbox_release('f-1', owner_token) AS released
  FROM sandbox_store.claims WHERE key = 'f-1';

-- A key never claimed: the sequence's value (now below other keys' fences).
SELECT fence AS new_key_fence FROM sandbox_store.sandbox_claim('f-new', '1 hour');

-- A claim over an expired claim.
SELECT fence AS e1 FROM sandbox_store.sandbox_claim('f-2', '1 millisecond') \gset
SELECT pg_sleep(0.01);
SELECT setval('sandbox_store.fence_seq', 1, false) AS sequence_set_back;
SELECT fence - :e1 AS above_old_by FROM sandbox_store.sandbox_claim('f-2', '1 hour');

-- A lock-mode call that retires an expired claim.
SELECT fence AS r1 FROM sandbox_store.sandbox_claim('f-3', '1 millisecond') \gset
SELECT pg_sleep(0.01);
SELECT setval('sandbox_store.fence_seq', 1, false) AS sequence_set_back;
SELECT sandbox_store.sandbox_lock('f-3');
SELECT fence - :r1 AS above_old_by, owner_token IS NULL AS retired
  FROM sandbox_store.leases WHERE key = 'f-3';

-- The old holders' fences are refused.
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert('f-2', 'e2b', 'sbx', 't', fence => $$ || :e1 || $$)$$) AS stale_claim;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert('f-3', 'e2b', 'sbx', 't', fence => $$ || :r1 || $$)$$) AS stale_claim;

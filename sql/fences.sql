--
-- fences: a key's new fence is above the key's newest fence by
-- construction, not only because the sequence moves forward.  The sequence
-- is set back below every fence given so far (what an admin's setval does,
-- and what a key meets on a distributed cluster when its row moves to a
-- node whose own range of the sequence is lower); then every way a key gets
-- a new fence (a claim after a release, a claim over an expired claim, a
-- lock-mode call that retires an expired claim) still gives it one above
-- its last, and the old holder stays fenced off.  A key never claimed gets
-- the sequence's value.  Every new fence is a value the sequence itself
-- handed out (it is moved up to the key's fence first when it is behind),
-- so the WAL that covers it can be flushed before it is returned
-- (test/t/010_fence_flush.pl crashes the server to show it).
--
\i sql/include/fresh.sql
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

-- A key never claimed: the sequence's next value, which the claim above
-- moved up to f-1's fence (so it is f-1's fence plus one).
SELECT fence AS new_key_fence, fence - (SELECT fence FROM sandbox_store.leases WHERE key = 'f-1') AS above_f1_by
  FROM sandbox_store.sandbox_claim('f-new', '1 hour');

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

-- A lock-mode call that retires an expired claim while the sequence stands
-- exactly one below the key's fence: its next value is the key's fence
-- itself, which is not above it, so the key gets the value after that, and
-- the sequence ends at or above every fence handed out (a value it stayed
-- under would be drawn again for another key).
SELECT fence AS r2 FROM sandbox_store.sandbox_claim('f-4', '1 millisecond') \gset
SELECT pg_sleep(0.01);
SELECT setval('sandbox_store.fence_seq', :r2 - 1) = :r2 - 1 AS sequence_one_below;
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('f-4', 'run-1');
COMMIT;
SELECT fence - :r2 AS above_old_by, owner_token IS NULL AS retired,
       (SELECT last_value FROM sandbox_store.fence_seq) >= fence AS sequence_at_or_above
  FROM sandbox_store.leases WHERE key = 'f-4';

-- The old holders' fences are refused.
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert('f-2', 'e2b', 'sbx', 't', fence => $$ || :e1 || $$)$$) AS stale_claim;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert('f-3', 'e2b', 'sbx', 't', fence => $$ || :r1 || $$)$$) AS stale_claim;

-- The sequence was moved up to the keys' fences, never back: after the
-- set-backs above, a new claim is above every fence given so far.
SELECT fence > (SELECT max(fence) FROM sandbox_store.leases WHERE key <> 'f-fresh') AS above_every_key
  FROM sandbox_store.sandbox_claim('f-fresh', '1 hour');
SELECT last_value >= (SELECT max(fence) FROM sandbox_store.leases) AS sequence_caught_up
  FROM sandbox_store.fence_seq;

--
-- A fence is dead once its claim has ended, whatever ended it: a write
-- fenced with a released claim's fence is refused (SB001, with its own
-- detail) and changes nothing, so a retried write after a lost
-- acknowledgement cannot bring back a record that was reaped, replaced or
-- deleted since.
--
-- Released by sandbox_upsert_release, then the record is reaped: the
-- retried sandbox_upsert_release and a fenced sandbox_upsert are refused,
-- and the record stays reaped.
SELECT fence AS g1 FROM sandbox_store.sandbox_claim('f-rel-1', '1 hour') \gset
SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert_release('f-rel-1', :g1, 'e2b', 'sbx-a', 't',
       updated_at => now() - interval '3 hours');
SELECT key FROM sandbox_store.sandbox_reap('1 hour');
SELECT * FROM sandbox_store.sandbox_upsert_release('f-rel-1', :g1, 'e2b', 'sbx-a', 't',
       updated_at => now() - interval '3 hours');
SELECT * FROM sandbox_store.sandbox_upsert('f-rel-1', 'e2b', 'sbx-a', 't', fence => :g1);
SELECT count(*) AS records FROM sandbox_store.instances WHERE key = 'f-rel-1';
SELECT fence = :g1 AS same_fence, owner_token IS NULL AS unclaimed FROM sandbox_store.leases WHERE key = 'f-rel-1';

-- Released by sandbox_release, then another caller recreates the sandbox in
-- lock mode: the released fence cannot replace the new record.
SELECT fence AS g2, owner_token AS gt2 FROM sandbox_store.sandbox_claim('f-rel-2', '1 hour') \gset
SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert('f-rel-2', 'e2b', 'sbx-a', 't', fence => :g2);
SELECT sandbox_store.sandbox_release('f-rel-2', :'gt2') AS released;
BEGIN;
SELECT action FROM sandbox_store.sandbox_ensure('f-rel-2', 'run-b', provider => 'daytona');
SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert('f-rel-2', 'daytona', 'sbx-b', 't');
COMMIT;
SELECT * FROM sandbox_store.sandbox_upsert('f-rel-2', 'e2b', 'sbx-a', 't', fence => :g2);
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_delete('f-rel-2', fence => $$ || :g2 || $$)$$) AS fenced_delete;
SELECT provider, provider_sandbox_id FROM sandbox_store.instances WHERE key = 'f-rel-2';

-- Released, then an unfenced delete: the released fence neither writes the
-- record back nor deletes anything.
SELECT fence AS g3, owner_token AS gt3 FROM sandbox_store.sandbox_claim('f-rel-3', '1 hour') \gset
SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert('f-rel-3', 'e2b', 'sbx-a', 't', fence => :g3);
SELECT sandbox_store.sandbox_release('f-rel-3', :'gt3') AS released;
SELECT sandbox_store.sandbox_delete('f-rel-3') AS deleted;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert('f-rel-3', 'e2b', 'sbx-a', 't', fence => $$ || :g3 || $$)$$) AS fenced_upsert;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_upsert_release('f-rel-3', $$ || :g3 || $$, 'e2b', 'sbx-a', 't')$$) AS upsert_release;
SELECT count(*) AS records FROM sandbox_store.instances WHERE key = 'f-rel-3';

-- A claim that is still set (live, or expired and not taken over) keeps
-- writing with its fence, as often as it likes: a retried fenced write is
-- accepted while the claim holds.
SELECT fence AS g4 FROM sandbox_store.sandbox_claim('f-rel-4', '1 hour') \gset
SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert('f-rel-4', 'e2b', 'sbx-a', 't', fence => :g4);
SELECT provider_sandbox_id FROM sandbox_store.sandbox_upsert('f-rel-4', 'e2b', 'sbx-a', 't', fence => :g4);
SELECT sandbox_store.sandbox_delete('f-rel-4', fence => :g4) AS deleted;

--
-- Lease expiry is now + lease in UTC arithmetic, whatever the session's
-- TimeZone: a '1 day' lease is 24 hours even across a daylight-saving
-- change.  The zone below starts daylight saving at the next UTC midnight
-- (a POSIX rule: standard time UTC, summer time one hour ahead), so a
-- local "same time tomorrow" would be 23 hours away.
--
SELECT format('SBS0SBD,%s/0,%s/0', d, (d + 180) % 365) AS dst_zone
  FROM (SELECT extract(doy FROM (now() AT TIME ZONE 'UTC')::date + 1)::int - 1 AS d) s \gset
SET TimeZone = :'dst_zone';
SELECT fence AS z1 FROM sandbox_store.sandbox_claim('f-tz-1', '1 day') \gset
SELECT round(extract(epoch FROM lease_expires_at - clock_timestamp()) / 3600) AS claim_hours,
       round(extract(epoch FROM sandbox_store.sandbox_renew('f-tz-1', owner_token, '1 day') - clock_timestamp()) / 3600) AS renew_hours
  FROM sandbox_store.leases WHERE key = 'f-tz-1';
SELECT round(extract(epoch FROM lease_expires_at - clock_timestamp()) / 3600) AS ensure_hours
  FROM sandbox_store.sandbox_ensure('f-tz-2', 'run-1', lease => '1 day');
SET TimeZone = 'UTC';
SELECT round(extract(epoch FROM lease_expires_at - clock_timestamp()) / 3600) AS utc_claim_hours
  FROM sandbox_store.sandbox_claim('f-tz-3', '1 day');
RESET TimeZone;

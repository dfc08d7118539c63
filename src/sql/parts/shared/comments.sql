-- Comments of the interface functions (both editions).

COMMENT ON FUNCTION sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8) IS
'Insert or fully replace the record of key; optional fields passed as NULL (or omitted) clear what was stored. With fence: refused (SB001, nothing changed) if the key has been claimed with a newer fence. Returns the stored record.';

COMMENT ON FUNCTION sandbox_store.sandbox_upsert_release(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz) IS
'The claim holder''s last write: sandbox_upsert with fence, which also ends the claim the fence was given with, in the same transaction. Refused (SB001, nothing changed) if the key has been claimed with a newer fence. Returns the stored record.';

COMMENT ON FUNCTION sandbox_store.sandbox_get(pg_catalog.text) IS
'The record of key: one row, or none when there is no record.';

COMMENT ON FUNCTION sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8) IS
'Delete the record of key under the key''s lock (waits for an ensure or a claim in flight). With fence: the claim holder''s delete, refused (SB001) if the key has been claimed with a newer fence. True if a record was removed, false if there was none.';

COMMENT ON FUNCTION sandbox_store.sandbox_list(pg_catalog.text) IS
'The records of a thread, most recently updated first.';

COMMENT ON FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take the key (wait: NULL = as lock_timeout allows, 0 = no wait, else at most that long; 55P03 if not obtained), then return one row: create (no record), resume (fresh record, stamped with run_id and now()) or recreate (the old record: older than max_age or of another provider). Lock mode (lease NULL): the key''s lock is held until the transaction ends. Lease mode: the row also carries a claim (fence, owner_token, lease_expires_at) that holds the key until released or expired.';

COMMENT ON FUNCTION sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval) IS
'Take the key''s lock until the transaction ends (the lock sandbox_ensure takes). wait as for sandbox_ensure; 55P03 if not obtained.';

COMMENT ON FUNCTION sandbox_store.sandbox_try_lock(pg_catalog.text) IS
'Take the key''s lock until the transaction ends if it is free now: true if taken (or already held), false if another transaction holds it.';

COMMENT ON FUNCTION sandbox_store.sandbox_lock_id(pg_catalog.text) IS
'The 64-bit id of the key''s lock (FNV-1a of its bytes; stable forever): lock_id of the view key_locks, which lists who holds and who waits for each key''s lock. pg_locks shows it as classid (high 32 bits) and objid (low 32 bits) of an advisory lock.';

COMMENT ON FUNCTION sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take a claim on key for lease, and nothing else (lease mode''s lock for any critical section): waits for the key like sandbox_ensure (wait; 55P03 if not obtained) and returns fence, owner_token and lease_expires_at.';

COMMENT ON FUNCTION sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval) IS
'Extend the claim of owner_token on key to now + lease (server clock) and return the new expiry; SB001 if the claim was released or taken over.';

COMMENT ON FUNCTION sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid) IS
'End the claim of owner_token on key: true if it held the key''s claim, false for a stale token (which never ends its successor''s claim).';

COMMENT ON FUNCTION sandbox_store.sandbox_reap(pg_catalog.interval, pg_catalog.int4) IS
'Delete and return, oldest first, at most max_rows records idle longer than idle_for whose key is neither locked nor claimed (busy keys are skipped, never waited for; concurrent reapers never return the same record). The app destroys the returned sandboxes.';

COMMENT ON FUNCTION sandbox_store.sandbox_lock_holder(pg_catalog.text) IS
'The pid of the backend whose transaction holds the key''s lock, or NULL. Claims have no backend: see the view sandbox_store.claims.';

COMMENT ON FUNCTION sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8) IS
'Append chunks (a JSON array of JSON objects) to the run''s log as its next entries and return their seqs, in order; the log is created by its first write. Fenced like every log write (SB001 for a stale epoch, or none once a driver claimed the run); SBR02 if the log is closed or the run finished. Notifies channel sandbox_store_run_log with the run id if a reader watches the log (run_log_watch).';

COMMENT ON FUNCTION sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8, pg_catalog.bool) IS
'run_log_append with notify: true, as without it; false, a watched log''s append does not notify when it commits, and the caller wakes its readers with run_log_wake after the commit (a notifying commit waits for every other one in the server, its WAL flush included). NULL is refused (22023).';

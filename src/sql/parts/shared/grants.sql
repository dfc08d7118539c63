-- Nothing for PUBLIC: an admin grants USAGE on the schema and EXECUTE on the
-- functions to the app role (see README).  The parts that make functions
-- grant and revoke nothing themselves, so that an update script can make
-- them again (CREATE OR REPLACE) without touching the grants an admin gave:
-- a REVOKE run by an update script would record the admin's grants as the
-- extension's initial privileges, which pg_dump leaves out.
REVOKE ALL ON FUNCTION
    sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8),
    sandbox_store.sandbox_upsert_release(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz),
    sandbox_store.sandbox_get(pg_catalog.text),
    sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8),
    sandbox_store.sandbox_list(pg_catalog.text),
    sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval),
    sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval),
    sandbox_store.sandbox_try_lock(pg_catalog.text),
    sandbox_store.sandbox_lock_id(pg_catalog.text),
    sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval),
    sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval),
    sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid),
    sandbox_store.sandbox_reap(pg_catalog.interval, pg_catalog.int4),
    sandbox_store.sandbox_lock_holder(pg_catalog.text),
    sandbox_store.checkpoint_acquire_writer(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store.checkpoint_renew_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store.checkpoint_release_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8),
    sandbox_store.checkpoint_append(pg_catalog.jsonb, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store.checkpoint_delete_head(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store.checkpoint_fork(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store.checkpoint_get(pg_catalog.text),
    sandbox_store.checkpoint_list(pg_catalog.text),
    sandbox_store.checkpoint_head(pg_catalog.text),
    sandbox_store.checkpoint_blob_references(),
    sandbox_store.run_create_or_resume(pg_catalog.text, pg_catalog.text, pg_catalog.float8, pg_catalog.text),
    sandbox_store.run_get(pg_catalog.text),
    sandbox_store.run_update(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8),
    sandbox_store.run_list_by_thread(pg_catalog.text),
    sandbox_store.run_list_reclaimable(pg_catalog.float8, pg_catalog.float8),
    sandbox_store.run_find_active(pg_catalog.text),
    sandbox_store.run_claim(pg_catalog.text),
    sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8),
    sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8, pg_catalog.bool),
    sandbox_store.run_log_upsert(pg_catalog.text, pg_catalog.int8[], pg_catalog.jsonb, pg_catalog.int8),
    sandbox_store.run_log_close(pg_catalog.text, pg_catalog.int8),
    sandbox_store.run_log_read(pg_catalog.text, pg_catalog.int8, pg_catalog.int4),
    sandbox_store.run_log_status(pg_catalog.text),
    sandbox_store.run_log_watch(pg_catalog.text),
    sandbox_store.run_log_wake(pg_catalog.text[]),
    sandbox_store.run_log_prune(pg_catalog.interval, pg_catalog.int4),
    sandbox_store.unsupported_changes(),
    sandbox_store.edition()
FROM PUBLIC;
REVOKE ALL ON TABLE sandbox_store.instances, sandbox_store.leases, sandbox_store.claims,
    sandbox_store.key_locks FROM PUBLIC;
REVOKE ALL ON SEQUENCE sandbox_store.fence_seq FROM PUBLIC;
REVOKE ALL ON FUNCTION sandbox_store.distribute() FROM PUBLIC;

-- The internal helpers: nobody but the owner (an update script runs this
-- too, for the helpers it makes).
REVOKE ALL ON SCHEMA sandbox_store_internal FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store_internal FROM PUBLIC;

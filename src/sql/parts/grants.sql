-- Nothing for PUBLIC: an admin grants USAGE on the schema and EXECUTE on the
-- functions to the app role (see README).
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
    sandbox_store.edition()
FROM PUBLIC;
REVOKE ALL ON TABLE sandbox_store.instances, sandbox_store.leases, sandbox_store.claims,
    sandbox_store.key_locks FROM PUBLIC;
REVOKE ALL ON SEQUENCE sandbox_store.fence_seq FROM PUBLIC;
REVOKE ALL ON FUNCTION sandbox_store.distribute() FROM PUBLIC;

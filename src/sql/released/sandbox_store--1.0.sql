/* sandbox_store--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION sandbox_store" to load this file. \quit

-- Every name below is schema-qualified: the script is safe whatever the
-- installing role's search_path holds.

-- CREATE EXTENSION installs into a schema sandbox_store that already exists.
-- Refuse one that belongs to anyone but the installing role or a superuser:
-- its owner could drop what the extension relies on, rename it, and put
-- look-alike objects in its place.
DO $$
DECLARE
    owner_name pg_catalog.name;
    trusted boolean;
BEGIN
    SELECT r.rolname, r.rolsuper OR r.rolname OPERATOR(pg_catalog.=) CURRENT_USER
      INTO owner_name, trusted
      FROM pg_catalog.pg_namespace n
      JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
     WHERE n.nspname OPERATOR(pg_catalog.=) 'sandbox_store';
    IF NOT trusted THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = pg_catalog.format('schema "sandbox_store" already exists and belongs to role %I', owner_name),
            DETAIL = 'The extension installs into that schema, and its owner could replace the extension''s objects.',
            HINT = 'Drop the schema, or make a superuser its owner (ALTER SCHEMA sandbox_store OWNER TO ...), and run CREATE EXTENSION again.';
    END IF;
END
$$;

CREATE TABLE sandbox_store.instances (
    key                 pg_catalog.text NOT NULL,
    provider            pg_catalog.text NOT NULL,
    provider_sandbox_id pg_catalog.text NOT NULL,
    latest_snapshot_id  pg_catalog.text,
    thread_id           pg_catalog.text NOT NULL,
    latest_run_id       pg_catalog.text,
    updated_at          pg_catalog.timestamptz NOT NULL,
    CONSTRAINT instances_pkey PRIMARY KEY (key),
    CONSTRAINT instances_key_length
        CHECK (pg_catalog.octet_length(key) BETWEEN 1 AND 1024),
    CONSTRAINT instances_provider_length
        CHECK (pg_catalog.octet_length(provider) BETWEEN 1 AND 1024),
    CONSTRAINT instances_provider_sandbox_id_length
        CHECK (pg_catalog.octet_length(provider_sandbox_id) BETWEEN 1 AND 1024),
    CONSTRAINT instances_latest_snapshot_id_length
        CHECK (pg_catalog.octet_length(latest_snapshot_id) BETWEEN 1 AND 1024),
    CONSTRAINT instances_thread_id_length
        CHECK (pg_catalog.octet_length(thread_id) BETWEEN 1 AND 1024),
    CONSTRAINT instances_latest_run_id_length
        CHECK (pg_catalog.octet_length(latest_run_id) BETWEEN 1 AND 1024)
);

-- sandbox_list(thread_id), and sweeps by age.
CREATE INDEX instances_thread_id_idx ON sandbox_store.instances (thread_id);
CREATE INDEX instances_updated_at_idx ON sandbox_store.instances (updated_at);

-- Records survive pg_dump / restore.
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.instances', '');

COMMENT ON TABLE sandbox_store.instances IS
'Sandbox instance records, one per instance key. Written only through the sandbox_store functions; app roles get no privilege on it.';
COMMENT ON COLUMN sandbox_store.instances.key IS
'Compound instance key (thread, sandbox definition, provider, workspace, tenant); 1..1024 bytes.';
COMMENT ON COLUMN sandbox_store.instances.provider IS
'Provider that owns provider_sandbox_id.';
COMMENT ON COLUMN sandbox_store.instances.provider_sandbox_id IS
'The provider''s id of the sandbox, used to resume it.';
COMMENT ON COLUMN sandbox_store.instances.latest_snapshot_id IS
'Newest snapshot of the sandbox, when the provider has snapshots.';
COMMENT ON COLUMN sandbox_store.instances.thread_id IS
'The conversation thread the sandbox serves.';
COMMENT ON COLUMN sandbox_store.instances.latest_run_id IS
'The last run that used the sandbox.';
COMMENT ON COLUMN sandbox_store.instances.updated_at IS
'Last write; apps sweep on it.';

CREATE FUNCTION sandbox_store.sandbox_upsert(
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now())
RETURNS sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_upsert'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz) IS
'Insert or fully replace the record of key; optional fields passed as NULL (or omitted) clear what was stored. Returns the stored record.';

CREATE FUNCTION sandbox_store.sandbox_get(key pg_catalog.text)
RETURNS SETOF sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_get'
LANGUAGE C STABLE ROWS 1;

COMMENT ON FUNCTION sandbox_store.sandbox_get(pg_catalog.text) IS
'The record of key: one row, or none when there is no record.';

CREATE FUNCTION sandbox_store.sandbox_delete(key pg_catalog.text)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_delete'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_delete(pg_catalog.text) IS
'Delete the record of key under the key''s lock (waits for an ensure in flight). True if a record was removed, false if there was none.';

CREATE FUNCTION sandbox_store.sandbox_list(thread_id pg_catalog.text)
RETURNS SETOF sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_list'
LANGUAGE C STABLE ROWS 4;

COMMENT ON FUNCTION sandbox_store.sandbox_list(pg_catalog.text) IS
'The records of a thread, most recently updated first.';

CREATE FUNCTION sandbox_store.sandbox_ensure(
    key pg_catalog.text,
    run_id pg_catalog.text,
    max_age pg_catalog.interval DEFAULT NULL,
    provider pg_catalog.text DEFAULT NULL,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS TABLE (
    action pg_catalog.text,
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_run_id pg_catalog.text,
    updated_at pg_catalog.timestamptz)
AS 'MODULE_PATHNAME', 'sandbox_ensure'
LANGUAGE C VOLATILE ROWS 1;

COMMENT ON FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval) IS
'Take the key''s transaction-scoped lock (wait: NULL = as lock_timeout allows, 0 = no wait, else at most that long; 55P03 if not obtained), then return one row: create (no record), resume (fresh record, stamped with run_id and now()) or recreate (the old record: older than max_age or of another provider).';

CREATE FUNCTION sandbox_store.sandbox_lock(
    key pg_catalog.text,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.void
AS 'MODULE_PATHNAME', 'sandbox_lock'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval) IS
'Take the key''s lock until the transaction ends (the lock sandbox_ensure takes). wait as for sandbox_ensure; 55P03 if not obtained.';

CREATE FUNCTION sandbox_store.sandbox_try_lock(key pg_catalog.text)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_try_lock'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_try_lock(pg_catalog.text) IS
'Take the key''s lock until the transaction ends if it is free now: true if taken (or already held), false if another transaction holds it.';

CREATE FUNCTION sandbox_store.sandbox_lock_id(key pg_catalog.text)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'sandbox_lock_id'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION sandbox_store.sandbox_lock_id(pg_catalog.text) IS
'The 64-bit id of the key''s lock (FNV-1a of its bytes; stable forever). pg_locks shows it as classid (high 32 bits) and objid (low 32 bits) with locktype advisory and objsubid 21314.';

-- Nothing for PUBLIC: an admin grants USAGE on the schema and EXECUTE on the
-- functions to the app role (see README).
REVOKE ALL ON FUNCTION
    sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz),
    sandbox_store.sandbox_get(pg_catalog.text),
    sandbox_store.sandbox_delete(pg_catalog.text),
    sandbox_store.sandbox_list(pg_catalog.text),
    sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval),
    sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval),
    sandbox_store.sandbox_try_lock(pg_catalog.text),
    sandbox_store.sandbox_lock_id(pg_catalog.text)
FROM PUBLIC;
REVOKE ALL ON TABLE sandbox_store.instances FROM PUBLIC;

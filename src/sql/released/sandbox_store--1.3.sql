/* sandbox_store--1.3.sql: the whole extension at version 1.3, in one file */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION sandbox_store" to load this file. \quit

-- A fresh install runs only this script; databases at an older version
-- reach 1.3 through the update scripts (sandbox_store--1.0--1.1.sql,
-- --1.1--1.2.sql, --1.2--1.3.sql), and the regression test upgrade proves
-- both give the same catalog, grants and initial privileges.  Every name is
-- schema-qualified: the script is safe whatever the installing role's
-- search_path holds.  Nothing here writes to pg_catalog.

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

-- The 1..1024-byte rule of the text columns, as a domain (a domain's
-- constraint is compiled once per backend and checked only for the columns
-- a statement assigns; it binds every writer, superusers included).  Clients
-- see the columns as text (the protocol sends a domain's base type).
CREATE DOMAIN sandbox_store.bounded_text AS pg_catalog.text
    CONSTRAINT bounded_text_length
        CHECK (pg_catalog.octet_length(VALUE) BETWEEN 1 AND 1024);
COMMENT ON DOMAIN sandbox_store.bounded_text IS
'Text of 1..1024 bytes: the type of the text columns of sandbox_store.instances.';

-- The records: one per instance key.  No index on latest_run_id or
-- updated_at, and free space in each page (fillfactor 90): a resume stamp is
-- a heap-only tuple update.
CREATE TABLE sandbox_store.instances (
    key                 sandbox_store.bounded_text NOT NULL,
    provider            sandbox_store.bounded_text NOT NULL,
    provider_sandbox_id sandbox_store.bounded_text NOT NULL,
    latest_snapshot_id  sandbox_store.bounded_text,
    thread_id           sandbox_store.bounded_text NOT NULL,
    latest_run_id       sandbox_store.bounded_text,
    updated_at          pg_catalog.timestamptz NOT NULL,
    CONSTRAINT instances_pkey PRIMARY KEY (key)
) WITH (fillfactor = 90);

-- sandbox_list(thread_id).
CREATE INDEX instances_thread_id_idx ON sandbox_store.instances (thread_id);

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

-- Fences: one sequence, so they strictly increase per key forever (across
-- release, expiry, delete, crash restart, and dump/restore: it is dumped).
CREATE SEQUENCE sandbox_store.fence_seq AS pg_catalog.int8 MINVALUE 1 NO CYCLE;
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.fence_seq', '');
COMMENT ON SEQUENCE sandbox_store.fence_seq IS
'Source of claim fences: strictly increasing, never reused.';

-- One row per key ever claimed, kept after release so it remembers the
-- key's newest fence; owner_token and lease_expires_at are set while a claim
-- holds the key.  Claims are updates of that row: fillfactor 90 keeps them HOT.
CREATE TABLE sandbox_store.leases (
    key              pg_catalog.text NOT NULL,
    fence            pg_catalog.int8 NOT NULL,
    owner_token      pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz,
    CONSTRAINT leases_pkey PRIMARY KEY (key),
    CONSTRAINT leases_key_length
        CHECK (pg_catalog.octet_length(key) BETWEEN 1 AND 1024),
    CONSTRAINT leases_claim_complete
        CHECK ((owner_token IS NULL) = (lease_expires_at IS NULL))
) WITH (fillfactor = 90);
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.leases', '');
COMMENT ON TABLE sandbox_store.leases IS
'Claims on keys (lease mode) and each key''s newest fence. Written only through the sandbox_store functions.';

CREATE VIEW sandbox_store.claims AS
SELECT key, fence, owner_token, lease_expires_at
  FROM sandbox_store.leases
 WHERE owner_token IS NOT NULL
   AND lease_expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp();
COMMENT ON VIEW sandbox_store.claims IS
'Live claims: keys held in lease mode, with their fence, owner token and expiry.';

-- The row sandbox_ensure returns.
CREATE TYPE sandbox_store.ensure_result AS (
    action pg_catalog.text,
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_run_id pg_catalog.text,
    updated_at pg_catalog.timestamptz,
    fence pg_catalog.int8,
    owner_token pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz);
COMMENT ON TYPE sandbox_store.ensure_result IS
'The row sandbox_ensure returns: action, the record''s columns, and the claim (lease mode).';

-- The functions.  Each binds the C symbol of its signature (a symbol
-- without a version suffix is the signature's first: 1.0 or 1.1).

CREATE FUNCTION sandbox_store.sandbox_upsert(
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now(),
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_upsert_1_1'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8) IS
'Insert or fully replace the record of key; optional fields passed as NULL (or omitted) clear what was stored. With fence: refused (SB001, nothing changed) if the key has been claimed with a newer fence. Returns the stored record.';

CREATE FUNCTION sandbox_store.sandbox_upsert_release(
    key pg_catalog.text,
    fence pg_catalog.int8,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now())
RETURNS sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_upsert_release'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_upsert_release(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz) IS
'The claim holder''s last write: sandbox_upsert with fence, which also ends the claim the fence was given with, in the same transaction. Refused (SB001, nothing changed) if the key has been claimed with a newer fence. Returns the stored record.';

CREATE FUNCTION sandbox_store.sandbox_get(key pg_catalog.text)
RETURNS SETOF sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_get'
LANGUAGE C STABLE ROWS 1;

COMMENT ON FUNCTION sandbox_store.sandbox_get(pg_catalog.text) IS
'The record of key: one row, or none when there is no record.';

CREATE FUNCTION sandbox_store.sandbox_delete(
    key pg_catalog.text,
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_delete_1_1'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8) IS
'Delete the record of key under the key''s lock (waits for an ensure or a claim in flight). With fence: the claim holder''s delete, refused (SB001) if the key has been claimed with a newer fence. True if a record was removed, false if there was none.';

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
    wait pg_catalog.interval DEFAULT NULL,
    lease pg_catalog.interval DEFAULT NULL)
RETURNS SETOF sandbox_store.ensure_result
AS 'MODULE_PATHNAME', 'sandbox_ensure_1_1'
LANGUAGE C VOLATILE ROWS 1;

COMMENT ON FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take the key (wait: NULL = as lock_timeout allows, 0 = no wait, else at most that long; 55P03 if not obtained), then return one row: create (no record), resume (fresh record, stamped with run_id and now()) or recreate (the old record: older than max_age or of another provider). Lock mode (lease NULL): the key''s lock is held until the transaction ends. Lease mode: the row also carries a claim (fence, owner_token, lease_expires_at) that holds the key until released or expired.';

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

CREATE FUNCTION sandbox_store.sandbox_claim(
    key pg_catalog.text,
    lease pg_catalog.interval,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS TABLE (
    fence pg_catalog.int8,
    owner_token pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz)
AS 'MODULE_PATHNAME', 'sandbox_claim'
LANGUAGE C VOLATILE ROWS 1;

COMMENT ON FUNCTION sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take a claim on key for lease, and nothing else (lease mode''s lock for any critical section): waits for the key like sandbox_ensure (wait; 55P03 if not obtained) and returns fence, owner_token and lease_expires_at.';

CREATE FUNCTION sandbox_store.sandbox_renew(
    key pg_catalog.text,
    owner_token pg_catalog.uuid,
    lease pg_catalog.interval)
RETURNS pg_catalog.timestamptz
AS 'MODULE_PATHNAME', 'sandbox_renew'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval) IS
'Extend the claim of owner_token on key to now + lease (server clock) and return the new expiry; SB001 if the claim was released or taken over.';

CREATE FUNCTION sandbox_store.sandbox_release(
    key pg_catalog.text,
    owner_token pg_catalog.uuid)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_release'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid) IS
'End the claim of owner_token on key: true if it held the key''s claim, false for a stale token (which never ends its successor''s claim).';

CREATE FUNCTION sandbox_store.sandbox_reap(
    idle_for pg_catalog.interval,
    max_rows pg_catalog.int4 DEFAULT 100)
RETURNS SETOF sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_reap'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_reap(pg_catalog.interval, pg_catalog.int4) IS
'Delete and return, oldest first, at most max_rows records idle longer than idle_for whose key is neither locked nor claimed (busy keys are skipped, never waited for; concurrent reapers never return the same record). The app destroys the returned sandboxes.';

CREATE FUNCTION sandbox_store.sandbox_lock_holder(key pg_catalog.text)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'sandbox_lock_holder'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_lock_holder(pg_catalog.text) IS
'The pid of the backend whose transaction holds the key''s lock, or NULL. Claims have no backend: see the view sandbox_store.claims.';

-- On citus: distribute both tables by key, colocated, and send every
-- single-key function to the node that holds the key's shard.  Run once, on
-- the coordinator, as a superuser; running it again changes nothing.
CREATE FUNCTION sandbox_store.distribute()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn pg_catalog.regprocedure;
    failed pg_catalog.text;
    key_to_text constant pg_catalog.text :=
        'ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE pg_catalog.text,'
        ' ADD CONSTRAINT instances_key_length'
        ' CHECK (pg_catalog.octet_length(key) OPERATOR(pg_catalog.>=) 1'
        ' AND pg_catalog.octet_length(key) OPERATOR(pg_catalog.<=) 1024)';
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'feature_not_supported',
            MESSAGE = 'citus is not installed in this database',
            DETAIL = 'sandbox_store.distribute() distributes the tables of sandbox_store with citus.',
            HINT = 'Put citus in shared_preload_libraries on every node, run CREATE EXTENSION citus and add the workers, then call it again.';
    END IF;
    IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) CURRENT_USER) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = 'permission denied to distribute the tables of sandbox_store',
            DETAIL = 'Only a superuser may distribute them.',
            HINT = 'Run sandbox_store.distribute() as a superuser, on the coordinator.';
    END IF;
    -- citus cannot prune shards by a domain-typed key (it coerces the key
    -- to the column's type as a constant, which a domain's check is not), so
    -- instances.key goes back from bounded_text to text with the same
    -- 1..1024-byte check, on every node (each has the extension's tables).
    -- No rewrite: the types are binary-compatible.  citus's functions are
    -- called by name at run time: this extension does not depend on citus.
    IF (SELECT atttypid FROM pg_catalog.pg_attribute
         WHERE attrelid OPERATOR(pg_catalog.=) 'sandbox_store.instances'::pg_catalog.regclass
           AND attname OPERATOR(pg_catalog.=) 'key') OPERATOR(pg_catalog.<>) 'pg_catalog.text'::pg_catalog.regtype THEN
        EXECUTE key_to_text;
        SELECT pg_catalog.string_agg(r.nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) r.nodeport
                                     OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) r.result, '; ')
          INTO failed
          FROM pg_catalog.run_command_on_workers(key_to_text) r WHERE NOT r.success;
        IF failed IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = 'could not change sandbox_store.instances.key to text on every worker',
                DETAIL = failed,
                HINT = 'Install sandbox_store on every worker (CREATE EXTENSION on the coordinator after adding them does that), then call it again.';
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid OPERATOR(pg_catalog.=) 'sandbox_store.instances'::pg_catalog.regclass) THEN
        PERFORM pg_catalog.create_distributed_table('sandbox_store.instances', 'key');
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid OPERATOR(pg_catalog.=) 'sandbox_store.leases'::pg_catalog.regclass) THEN
        PERFORM pg_catalog.create_distributed_table('sandbox_store.leases', 'key',
                                                    colocate_with => 'sandbox_store.instances');
    END IF;
    FOREACH fn IN ARRAY ARRAY[
        'sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8)',
        'sandbox_store.sandbox_upsert_release(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz)',
        'sandbox_store.sandbox_get(pg_catalog.text)',
        'sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8)',
        'sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval)',
        'sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval)',
        'sandbox_store.sandbox_try_lock(pg_catalog.text)',
        'sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval)',
        'sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval)',
        'sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid)',
        'sandbox_store.sandbox_lock_holder(pg_catalog.text)']::pg_catalog.regprocedure[]
    LOOP
        PERFORM pg_catalog.create_distributed_function(fn, 'key', colocate_with => 'sandbox_store.instances',
                                                       force_delegation => true);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sandbox_store.distribute() IS
'On citus: distribute instances and leases by key, colocated, and run every single-key function on the node holding the key''s shard. Once, on the coordinator, as a superuser; idempotent.';

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
    sandbox_store.sandbox_lock_holder(pg_catalog.text)
FROM PUBLIC;
REVOKE ALL ON TABLE sandbox_store.instances, sandbox_store.leases, sandbox_store.claims FROM PUBLIC;
REVOKE ALL ON SEQUENCE sandbox_store.fence_seq FROM PUBLIC;
REVOKE ALL ON FUNCTION sandbox_store.distribute() FROM PUBLIC;

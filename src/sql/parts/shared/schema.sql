-- The schema sandbox_store may exist before this script runs: CREATE
-- EXTENSION installs into it if it does.  Refuse one that belongs to anyone
-- but the installing role or a superuser (its owner could drop what the
-- extension relies on, rename it, and put look-alike objects in its place),
-- and one that already holds sandbox_store installed another way (the plain
-- SQL script): one database holds one edition.
DO $$
DECLARE
    owner_name pg_catalog.name;
    trusted boolean;
    installed pg_catalog.text;
BEGIN
    -- (From the catalogs only: nothing in an existing schema is run.)
    IF EXISTS (SELECT FROM pg_catalog.pg_proc p
                 JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
                WHERE n.nspname OPERATOR(pg_catalog.=) 'sandbox_store'
                  AND p.proname OPERATOR(pg_catalog.=) 'sandbox_get') THEN
        SELECT pg_catalog.format('plain edition, version %s',
                                 COALESCE(pg_catalog.max(pg_catalog.substring(p.prosrc, 'extversion, ''([0-9.]+)''')), 'unknown'))
          INTO installed
          FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
         WHERE n.nspname OPERATOR(pg_catalog.=) 'sandbox_store' AND p.proname OPERATOR(pg_catalog.=) 'edition';
    END IF;
    IF installed IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'duplicate_object',
            MESSAGE = 'sandbox_store is already installed in this database',
            DETAIL = pg_catalog.format('Schema sandbox_store already holds sandbox_store (%s), installed without CREATE EXTENSION.', installed),
            HINT = 'Keep one edition per database.  To change editions, save the records and claims, drop schema sandbox_store and install again, as the reference''s "Moving between editions" describes.';
    END IF;
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
            HINT = 'Drop the schema, or make a superuser or the installing role its owner (ALTER SCHEMA sandbox_store OWNER TO ...), and install again.';
    END IF;
END
$$;

-- The 1..@MAX_TEXT_BYTES@-byte rule of the text columns, as a domain (a domain's
-- constraint is compiled once per backend and checked only for the columns
-- a statement assigns; it binds every writer, superusers included).  Clients
-- see the columns as text (the protocol sends a domain's base type).
CREATE DOMAIN sandbox_store.bounded_text AS pg_catalog.text
    CONSTRAINT bounded_text_length
        CHECK (pg_catalog.octet_length(VALUE) BETWEEN 1 AND @MAX_TEXT_BYTES@);
COMMENT ON DOMAIN sandbox_store.bounded_text IS
'Text of 1..@MAX_TEXT_BYTES@ bytes: the type of the text columns of sandbox_store.instances.';

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
'Compound instance key (thread, sandbox definition, provider, workspace, tenant); 1..@MAX_TEXT_BYTES@ bytes.';
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
        CHECK (pg_catalog.octet_length(key) BETWEEN 1 AND @MAX_TEXT_BYTES@),
    CONSTRAINT leases_claim_complete
        CHECK ((owner_token IS NULL) = (lease_expires_at IS NULL))
) WITH (fillfactor = 90);
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.leases', '');
COMMENT ON TABLE sandbox_store.leases IS
'Claims on keys (lease mode) and each key''s newest fence. Written only through the sandbox_store functions.';

-- (The view sandbox_store.claims is made with the checkpoint writers:
-- shared/claims-view.)

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

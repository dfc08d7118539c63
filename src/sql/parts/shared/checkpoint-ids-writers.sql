-- The checkpoint store's ids and writers (1.9.0): two tables that let
-- every table of the store be distributed on Citus, the checkpoints, their
-- heads and their writers by thread, the ids by id.
--
-- checkpoint_ids holds every stored checkpoint's id with its thread: an id
-- is unique over all threads (SBC03) by its primary key, and
-- checkpoint_get(id) finds the thread of an id there.  A write puts its row
-- and the checkpoint's in one transaction, so the two tables always agree.
--
-- checkpoint_writers holds the writer of each thread that ever had one,
-- kept after release so that it remembers the thread's newest fence, as
-- leases does for keys; owner_token and lease_expires_at are set while a
-- writer holds the thread.  Acquire and renew are updates of that row:
-- fillfactor 90 keeps them HOT.  No domains: Citus cannot route by a
-- domain-typed column.

CREATE TABLE sandbox_store.checkpoint_ids (
    id        pg_catalog.text NOT NULL,
    thread_id pg_catalog.text NOT NULL,
    CONSTRAINT checkpoint_ids_pkey PRIMARY KEY (id),
    CONSTRAINT checkpoint_ids_id_length CHECK (pg_catalog.octet_length(id) BETWEEN 1 AND 1024),
    CONSTRAINT checkpoint_ids_thread_id_length CHECK (pg_catalog.octet_length(thread_id) BETWEEN 1 AND 1000)
);
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.checkpoint_ids', '');
COMMENT ON TABLE sandbox_store.checkpoint_ids IS
'The id of every stored checkpoint and its thread: an id is unique over all threads, and checkpoint_get finds its thread here. Written only through the checkpoint_* functions.';

CREATE TABLE sandbox_store.checkpoint_writers (
    thread_id        pg_catalog.text NOT NULL,
    fence            pg_catalog.int8 NOT NULL,
    owner_token      pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz,
    CONSTRAINT checkpoint_writers_pkey PRIMARY KEY (thread_id),
    CONSTRAINT checkpoint_writers_thread_id_length CHECK (pg_catalog.octet_length(thread_id) BETWEEN 1 AND 1000),
    CONSTRAINT checkpoint_writers_claim_complete CHECK ((owner_token IS NULL) = (lease_expires_at IS NULL))
) WITH (fillfactor = 90);
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.checkpoint_writers', '');
COMMENT ON TABLE sandbox_store.checkpoint_writers IS
'The checkpoint writer of each thread that ever had one: the thread''s newest fence, and owner_token and lease_expires_at while a writer holds it. Written only through the checkpoint_* functions.';

REVOKE ALL ON TABLE sandbox_store.checkpoint_ids, sandbox_store.checkpoint_writers FROM PUBLIC;

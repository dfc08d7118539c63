-- Sandbox checkpoints (1.4): the append-only chain of a thread's saved
-- sandbox states (files, conversation, artifacts), its head, the
-- content-addressed blobs they point to, and the single writer per thread.
-- The same SQL in both editions (PL/pgSQL); the fence draw,
-- sandbox_store_internal._draw_claim_fence(), and the check of a checkpoint
-- before it is appended, _checkpoint_check() (C in the C edition), are each
-- edition's own.
--
-- The blob keys a checkpoint points to are a column of its row (1.5), each
-- once: checkpoint_blob_references() counts them when it is called, so an
-- append or a delete writes no row per blob.
--
-- A thread's writer is its row of sandbox_store.checkpoint_writers (1.9.0;
-- before, a claim in sandbox_store.leases on the reserved key
-- E'\x01checkpoint-writer\x01' || thread_id), with a fence from fence_seq
-- like every claim.  Every write (append, delete_head, fork) is one call:
-- it locks the writer's row, checks owner token, fence and expiry,
-- then the head, and writes, in one transaction, so two writers, or a stale
-- writer after a takeover, never both succeed.  The clock is the database
-- server's (clock_timestamp()), or, for tests, the time the caller passes
-- as at (every call of one store must then pass the same clock).
--
-- Errors carry SQLSTATEs of their own, SBC01..SBC10, which the TypeScript
-- client maps to the SANDBOX_SNAPSHOT_* codes; a lost writer is SB001, as
-- for any lost claim.

CREATE TABLE sandbox_store.checkpoints (
    id         pg_catalog.text NOT NULL,
    thread_id  pg_catalog.text NOT NULL,
    parent_id  pg_catalog.text,
    created_at pg_catalog.int8 NOT NULL,
    checkpoint pg_catalog.jsonb NOT NULL,
    blob_keys  pg_catalog.text[] NOT NULL,
    -- (by thread, then id: on Citus the table is distributed by thread_id,
    -- and a primary key must hold it; an id is unique over all threads
    -- through checkpoint_ids)
    CONSTRAINT checkpoints_pkey PRIMARY KEY (thread_id, id),
    CONSTRAINT checkpoints_id_length CHECK (pg_catalog.octet_length(id) BETWEEN 1 AND 1024),
    CONSTRAINT checkpoints_thread_id_length CHECK (pg_catalog.octet_length(thread_id) BETWEEN 1 AND 1000)
);
-- checkpoint_list(thread_id): by created_at, then id as UTF-8 bytes.
CREATE INDEX checkpoints_thread_order_idx
    ON sandbox_store.checkpoints (thread_id, created_at, id COLLATE "C");
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.checkpoints', '');
COMMENT ON TABLE sandbox_store.checkpoints IS
'Sandbox checkpoints, immutable once appended: id, thread, parent, createdAt (epoch ms), the whole checkpoint as jsonb and the blob keys it points to (each once, by bytes). Written only through the checkpoint_* functions.';

CREATE TABLE sandbox_store.checkpoint_heads (
    thread_id pg_catalog.text NOT NULL,
    head_id   pg_catalog.text NOT NULL,
    CONSTRAINT checkpoint_heads_pkey PRIMARY KEY (thread_id)
);
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.checkpoint_heads', '');
COMMENT ON TABLE sandbox_store.checkpoint_heads IS
'The head checkpoint of each thread that has one.';

REVOKE ALL ON TABLE sandbox_store.checkpoints, sandbox_store.checkpoint_heads FROM PUBLIC;

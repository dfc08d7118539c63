-- The update to 1.9.0's checkpoint store (update scripts only; the tables
-- are made before it, the claims view and the functions after).  In this
-- order, so that a write in flight, which holds its writer's row in leases
-- and then writes to checkpoints, finishes before checkpoints is locked:
--
-- 1. The checkpoint writers, claims in leases on their thread's reserved
--    key, move to checkpoint_writers, with their fence, owner token and
--    expiry: a writer holding a thread keeps writing with them.  leases is
--    locked first against writes (SHARE ROW EXCLUSIVE, until the update
--    commits): a writer's acquire, renew or release in flight, and the
--    writes of its transaction, end before the move, which then sees them;
--    one that starts later waits for the update and runs 1.9.0's
--    functions.  Lease-mode claims of sandbox keys wait as well.  Only
--    where leases is not distributed: on citus, where it is, the update
--    runs on every node and distribute() moves them, once, from the
--    coordinator.
-- 2. Every stored checkpoint's id goes into checkpoint_ids.
-- 3. The primary key of checkpoints becomes (thread_id, id).
DO $$
DECLARE
    leases_distributed pg_catalog.bool := false;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1)'
           INTO leases_distributed USING 'sandbox_store.leases'::pg_catalog.regclass;
    END IF;
    IF NOT leases_distributed THEN
        LOCK TABLE ONLY sandbox_store.leases IN SHARE ROW EXCLUSIVE MODE;
        INSERT INTO sandbox_store.checkpoint_writers (thread_id, fence, owner_token, lease_expires_at)
        SELECT pg_catalog.substr(l.key, 20), l.fence, l.owner_token, l.lease_expires_at
          FROM ONLY sandbox_store.leases l
         WHERE pg_catalog.starts_with(l.key, E'\x01checkpoint-writer\x01');
        DELETE FROM ONLY sandbox_store.leases l WHERE pg_catalog.starts_with(l.key, E'\x01checkpoint-writer\x01');
    END IF;
END
$$;

INSERT INTO sandbox_store.checkpoint_ids (id, thread_id)
SELECT c.id, c.thread_id FROM ONLY sandbox_store.checkpoints c;

ALTER TABLE sandbox_store.checkpoints
    DROP CONSTRAINT checkpoints_pkey,
    ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (thread_id, id);

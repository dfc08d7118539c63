-- On citus: distribute the sandbox tables by key, the run tables by run
-- id, the checkpoint store by thread (its ids by id), all colocated, and
-- send every single-key, single-run and single-thread function to the node
-- that holds its shard.  Run once, on the coordinator, as a superuser;
-- running it again distributes what is not distributed yet (the tables of a
-- cluster that an older distribute() left local) and changes nothing else.
--
-- The run tables go by run id, not by thread: every run function but the
-- listings names a run and no thread, so a run id is what routes a call.
-- A table's rows are moved to its shards when it is distributed; the run
-- functions that write a run's log notify on the node they run on, so the
-- ones that notify at commit (the 3-argument run_log_append, run_log_close,
-- run_log_upsert) are not delegated: their notification reaches readers
-- connected to the node that was called.
--
-- The checkpoints, their heads and their writers go by thread, and the ids
-- by id (an id is unique over all threads, and checkpoint_get finds an id's
-- thread there).  A write (append, delete_head, fork) touches a thread's
-- shard and an id's, so it is not delegated; the writer's acquire, renew and
-- release and the head and list reads name one thread and are.
CREATE FUNCTION sandbox_store.distribute()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn pg_catalog.regprocedure;
    rel pg_catalog.regclass;
    failed pg_catalog.text;
    local_rels pg_catalog.regclass[];
    key_to_text constant pg_catalog.text :=
        'ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE pg_catalog.text,'
        ' ADD CONSTRAINT instances_key_length'
        ' CHECK (pg_catalog.octet_length(key) OPERATOR(pg_catalog.>=) 1'
        ' AND pg_catalog.octet_length(key) OPERATOR(pg_catalog.<=) @MAX_TEXT_BYTES@)';
    -- (on a worker: only where it has not been done, for a worker keeps it
    -- when a later step fails and the coordinator rolls back)
    key_to_text_once constant pg_catalog.text :=
        'DO $do$ BEGIN IF (SELECT atttypid FROM pg_catalog.pg_attribute'
        ' WHERE attrelid OPERATOR(pg_catalog.=) ''sandbox_store.instances''::pg_catalog.regclass'
        ' AND attname OPERATOR(pg_catalog.=) ''key'') OPERATOR(pg_catalog.<>) ''pg_catalog.text''::pg_catalog.regtype'
        ' THEN ' || key_to_text || '; END IF; END $do$';
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
    -- A worker's own run and checkpoint tables, before they are
    -- distributed, hold what was written through that worker (older versions
    -- left them local); distributing would hide those rows, so refuse while a
    -- worker has any, before anything changes.
    SELECT pg_catalog.array_agg(t.rel) INTO local_rels
      FROM pg_catalog.unnest(ARRAY['sandbox_store.runs', 'sandbox_store.run_logs',
                                   'sandbox_store.run_log_entries', 'sandbox_store.checkpoints',
                                   'sandbox_store.checkpoint_heads', 'sandbox_store.checkpoint_ids',
                                   'sandbox_store.checkpoint_writers']::pg_catalog.regclass[]) t(rel)
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
                        WHERE p.logicalrelid OPERATOR(pg_catalog.=) t.rel);
    IF local_rels IS NOT NULL THEN
        SELECT pg_catalog.string_agg(r.nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) r.nodeport
                                     OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) r.result
                                     OPERATOR(pg_catalog.||) ' rows', '; ')
          INTO failed
          FROM pg_catalog.run_command_on_workers(
                   (SELECT 'SELECT ' OPERATOR(pg_catalog.||)
                           pg_catalog.string_agg(pg_catalog.format('(SELECT count(*) FROM ONLY %s)', t.rel), ' + ')
                      FROM pg_catalog.unnest(local_rels) t(rel))) r
         WHERE r.success AND r.result OPERATOR(pg_catalog.<>) '0';
        IF failed IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = 'a worker holds rows of its own in the run or checkpoint tables of sandbox_store',
                DETAIL = 'Runs, run logs and checkpoints written through a worker before their tables were distributed stay in that worker''s own tables, which distributing them would hide: ' || failed || '.  Nothing was changed.',
                HINT = 'Copy those rows into the same tables on the coordinator and delete them on the worker (docs/operations.md, section 9), then call it again.';
        END IF;
    END IF;
    -- citus cannot prune shards by a domain-typed key (it coerces the key
    -- to the column's type as a constant, which a domain's check is not), so
    -- instances.key goes back from bounded_text to text with the same
    -- 1..@MAX_TEXT_BYTES@-byte check, on every node (each has the extension's tables).
    -- No rewrite: the types are binary-compatible.  citus's functions are
    -- called by name at run time: this extension does not depend on citus.
    IF (SELECT atttypid FROM pg_catalog.pg_attribute
         WHERE attrelid OPERATOR(pg_catalog.=) 'sandbox_store.instances'::pg_catalog.regclass
           AND attname OPERATOR(pg_catalog.=) 'key') OPERATOR(pg_catalog.<>) 'pg_catalog.text'::pg_catalog.regtype THEN
        EXECUTE key_to_text;
        SELECT pg_catalog.string_agg(r.nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) r.nodeport
                                     OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) r.result, '; ')
          INTO failed
          FROM pg_catalog.run_command_on_workers(key_to_text_once) r WHERE NOT r.success;
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
    FOREACH rel IN ARRAY ARRAY['sandbox_store.runs', 'sandbox_store.run_logs',
                               'sandbox_store.run_log_entries']::pg_catalog.regclass[]
    LOOP
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                        WHERE logicalrelid OPERATOR(pg_catalog.=) rel) THEN
            PERFORM pg_catalog.create_distributed_table(rel, 'run_id',
                                                        colocate_with => 'sandbox_store.instances');
            -- (its rows were copied to the shards; the coordinator's own
            -- copy is no longer read)
            PERFORM pg_catalog.truncate_local_data_after_distributing_table(rel);
        END IF;
    END LOOP;
    -- The checkpoint writers of older versions were claims in leases, on
    -- their thread's reserved key: they move to checkpoint_writers before
    -- it is distributed (the update moved them where leases was not
    -- distributed), keeping the higher fence of a thread that has both.
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid OPERATOR(pg_catalog.=) 'sandbox_store.checkpoint_writers'::pg_catalog.regclass) THEN
        -- (no writer's change in flight while they move)
        LOCK TABLE ONLY sandbox_store.leases IN SHARE ROW EXCLUSIVE MODE;
        INSERT INTO sandbox_store.checkpoint_writers AS w (thread_id, fence, owner_token, lease_expires_at)
        SELECT pg_catalog.substr(l.key, 20), l.fence, l.owner_token, l.lease_expires_at
          FROM ONLY sandbox_store.leases l
         WHERE pg_catalog.starts_with(l.key, E'\x01checkpoint-writer\x01')
        ON CONFLICT ON CONSTRAINT checkpoint_writers_pkey DO UPDATE
           SET fence = EXCLUDED.fence, owner_token = EXCLUDED.owner_token, lease_expires_at = EXCLUDED.lease_expires_at
         WHERE EXCLUDED.fence OPERATOR(pg_catalog.>) w.fence;
        DELETE FROM ONLY sandbox_store.leases l WHERE pg_catalog.starts_with(l.key, E'\x01checkpoint-writer\x01');
    END IF;
    FOREACH rel IN ARRAY ARRAY['sandbox_store.checkpoints', 'sandbox_store.checkpoint_heads',
                               'sandbox_store.checkpoint_writers', 'sandbox_store.checkpoint_ids']::pg_catalog.regclass[]
    LOOP
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                        WHERE logicalrelid OPERATOR(pg_catalog.=) rel) THEN
            PERFORM pg_catalog.create_distributed_table(rel,
                CASE WHEN rel OPERATOR(pg_catalog.=) 'sandbox_store.checkpoint_ids'::pg_catalog.regclass THEN 'id' ELSE 'thread_id' END,
                colocate_with => 'sandbox_store.instances');
            PERFORM pg_catalog.truncate_local_data_after_distributing_table(rel);
        END IF;
    END LOOP;
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
    FOREACH fn IN ARRAY ARRAY[
        'sandbox_store.run_create_or_resume(pg_catalog.text, pg_catalog.text, pg_catalog.float8, pg_catalog.text)',
        'sandbox_store.run_get(pg_catalog.text)',
        'sandbox_store.run_claim(pg_catalog.text)',
        'sandbox_store.run_update(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8)',
        'sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8, pg_catalog.bool)',
        'sandbox_store.run_log_read(pg_catalog.text, pg_catalog.int8, pg_catalog.int4)',
        'sandbox_store.run_log_status(pg_catalog.text)',
        'sandbox_store.run_log_watch(pg_catalog.text)']::pg_catalog.regprocedure[]
    LOOP
        PERFORM pg_catalog.create_distributed_function(fn, 'run_id', colocate_with => 'sandbox_store.runs',
                                                       force_delegation => true);
    END LOOP;
    FOREACH fn IN ARRAY ARRAY[
        'sandbox_store.checkpoint_acquire_writer(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz)',
        'sandbox_store.checkpoint_renew_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.int8, pg_catalog.timestamptz)',
        'sandbox_store.checkpoint_release_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8)',
        'sandbox_store.checkpoint_head(pg_catalog.text)',
        'sandbox_store.checkpoint_list(pg_catalog.text)']::pg_catalog.regprocedure[]
    LOOP
        PERFORM pg_catalog.create_distributed_function(fn, 'thread_id', colocate_with => 'sandbox_store.checkpoints',
                                                       force_delegation => true);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sandbox_store.distribute() IS
'On citus: distribute instances and leases by key, runs, run_logs and run_log_entries by run id, and checkpoints, checkpoint_heads and checkpoint_writers by thread and checkpoint_ids by id, all colocated, and run every single-key function, the single-run functions that do not notify at commit and the single-thread checkpoint writer and read functions on the node holding the shard. Once, on the coordinator, as a superuser; running it again distributes only what is not distributed yet.';

-- sandbox_store, SQL edition: from 1.7.0 to 1.7.1 (the pg_tle update path,
-- and with src/sql/build.sh plain-update, the plain script's update).

-- 1.7.1: the same interface, results, SQLSTATEs and messages as 1.7.0; only
-- bodies and internal helpers change.  One error helper and one id check
-- for the checkpoint and run stores (_raise and _check_id replace
-- _checkpoint_error, _run_raise, _checkpoint_id and _run_id); the finished
-- statuses listed once (_run_finished); operators in PL/pgSQL expressions
-- written plain.  Every checkpoint and run function is made again with
-- 1.7.1's body, and so is every function of the edition whose body
-- changed (CREATE OR REPLACE keeps each interface function's grants and
-- comment).

-- An id argument (checkpoint, run or thread): a string of 1..max_bytes
-- bytes; otherwise the error state (the checkpoint store's SBC07, the run
-- store's 22023).  (Text in the database is always well-formed Unicode: a
-- JSON string with a lone surrogate escape is refused where the jsonb is
-- read, 22P05, and the client refuses such strings before sending them.)
CREATE OR REPLACE FUNCTION sandbox_store_internal._check_id(state pg_catalog.text, v pg_catalog.text,
                                                what pg_catalog.text, max_bytes pg_catalog.int4)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF v IS NULL OR octet_length(v) NOT BETWEEN 1 AND max_bytes THEN
        PERFORM sandbox_store_internal._raise(state, format('invalid %s', what),
            format('A %s is a string of 1 to %s bytes; the value given is %s.', what, max_bytes,
                   CASE WHEN v IS NULL THEN 'missing' ELSE octet_length(v) || ' bytes long' END));
    END IF;
END
$$;

-- Raise an error of the checkpoint, run and run log stores: SQLSTATE state
-- (22023, SB001, SBCnn, SBR01..SBR03), message and detail given.
CREATE OR REPLACE FUNCTION sandbox_store_internal._raise(state pg_catalog.text, message pg_catalog.text,
                                             detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = _raise.state, MESSAGE = _raise.message, DETAIL = _raise.detail;
END
$$;


-- The writer check of every write: writer_thread_id's lease row, locked,
-- must hold owner_token and fence, unexpired at now, and be the writer of
-- thread_id.  SB001 otherwise.
CREATE OR REPLACE FUNCTION sandbox_store_internal._check_writer(thread_id pg_catalog.text, writer_thread_id pg_catalog.text,
                                            owner_token pg_catalog.uuid, fence pg_catalog.int8,
                                            now pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record;
BEGIN
    IF writer_thread_id IS DISTINCT FROM thread_id THEN
        PERFORM sandbox_store_internal._raise('SB001', format('the checkpoint writer of thread %s was lost', to_jsonb(thread_id)),
            format('The writer given holds thread %s, not this one.  Nothing was changed.', to_jsonb(writer_thread_id)));
    END IF;
    SELECT s.owner_token, s.fence, s.lease_expires_at INTO l
      FROM ONLY sandbox_store.leases s
     WHERE s.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key(thread_id)
       FOR UPDATE;
    IF l.owner_token IS NULL OR l.owner_token IS DISTINCT FROM _check_writer.owner_token
       OR l.fence IS DISTINCT FROM _check_writer.fence OR l.lease_expires_at <= now THEN
        PERFORM sandbox_store_internal._raise('SB001', format('the checkpoint writer of thread %s was lost', to_jsonb(thread_id)),
            CASE WHEN l.owner_token IS NULL THEN 'The thread has no writer: it was released or never taken.  Nothing was changed.'
                 WHEN l.owner_token IS DISTINCT FROM _check_writer.owner_token OR l.fence IS DISTINCT FROM _check_writer.fence
                 THEN format('The thread''s writer has fence %s now: the lease was taken over.  Nothing was changed.', l.fence)
                 ELSE format('The writer''s lease expired at %s.  Nothing was changed.', l.lease_expires_at) END);
    END IF;
END
$$;

-- The interface.

-- A checkpoint larger than the setting sandbox_store.max_checkpoint_bytes
-- (0: no limit) is refused with SBC08 before anything else reads it:
-- working on a checkpoint takes many times its size in memory.  size is its
-- jsonb value's size as pg_column_size gives it.  Each edition reads the
-- setting in _max_checkpoint_bytes() (the C edition's library defines it,
-- for superusers; the SQL edition parses the text anyone may set).
CREATE OR REPLACE FUNCTION sandbox_store_internal._checkpoint_size(size pg_catalog.int8, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    max_bytes pg_catalog.int8 := sandbox_store_internal._max_checkpoint_bytes();
BEGIN
    IF max_bytes > 0 AND size > max_bytes THEN
        PERFORM sandbox_store_internal._invalid_entry(
            format('%s is %s bytes; sandbox_store.max_checkpoint_bytes allows at most %s.', what, size, max_bytes));
    END IF;
END
$$;

-- An entry of a checkpoint that is not as the contract says: SBC08.
CREATE OR REPLACE FUNCTION sandbox_store_internal._invalid_entry(detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'SBC08', MESSAGE = 'invalid checkpoint entry', DETAIL = detail;
END
$$;

-- The reserved claim key of a thread's checkpoint writer.
CREATE OR REPLACE FUNCTION sandbox_store_internal._writer_key(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT E'\x01checkpoint-writer\x01' OPERATOR(pg_catalog.||) thread_id $$;

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_acquire_writer(
    thread_id pg_catalog.text,
    lease_ms pg_catalog.int8 DEFAULT 120000,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS TABLE (fence pg_catalog.int8, owner_token pg_catalog.uuid, expires_at pg_catalog.timestamptz)
LANGUAGE plpgsql VOLATILE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    k pg_catalog.text;
    now pg_catalog.timestamptz := COALESCE(checkpoint_acquire_writer.at, clock_timestamp());
    cur record;
BEGIN
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_acquire_writer.thread_id, 'thread id', 1000);
    IF lease_ms IS NULL OR lease_ms <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms must be positive', DETAIL = format('The value given is %s.', lease_ms);
    END IF;
    IF checkpoint_acquire_writer.at IS NOT NULL AND NOT isfinite(checkpoint_acquire_writer.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_acquire_writer.at);
    END IF;
    IF lease_ms / 1000.0 >= 9223372036854 OR extract(epoch FROM now) + lease_ms / 1000.0 >= 9224318015999 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms is too long',
            DETAIL = 'now + lease_ms would be past the latest timestamp PostgreSQL has.';
    END IF;
    k := sandbox_store_internal._writer_key(checkpoint_acquire_writer.thread_id);
    -- Never wait: the writer's lease row is locked at once, or another
    -- transaction is acquiring, renewing, releasing or writing with it and
    -- has not ended (SBC05, whatever it does next).  A thread without a
    -- lease row yet: its first acquirers also take the writer key's lock
    -- (_try_writer_lock, until the transaction ends), at once or not at
    -- all, so that none waits for another's insert of the row.
    BEGIN
        SELECT l.fence, l.owner_token, l.lease_expires_at INTO cur
          FROM ONLY sandbox_store.leases l WHERE l.key OPERATOR(pg_catalog.=) k FOR UPDATE NOWAIT;
        IF NOT FOUND THEN
            IF NOT sandbox_store_internal._try_writer_lock(k) THEN
                RAISE EXCEPTION USING ERRCODE = 'lock_not_available';
            END IF;
            -- (a row committed since the first look)
            SELECT l.fence, l.owner_token, l.lease_expires_at INTO cur
              FROM ONLY sandbox_store.leases l WHERE l.key OPERATOR(pg_catalog.=) k FOR UPDATE NOWAIT;
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            'Another transaction is acquiring, renewing, releasing or writing with the thread''s writer and has not ended.');
    END;
    IF cur.owner_token IS NOT NULL AND cur.lease_expires_at > now THEN
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            format('Its lease (fence %s) runs until %s.', cur.fence, cur.lease_expires_at));
    END IF;
    INSERT INTO sandbox_store.leases AS l (key, fence, owner_token, lease_expires_at)
    VALUES (k, sandbox_store_internal._draw_claim_fence(COALESCE(cur.fence, 0)), gen_random_uuid(),
            now + make_interval(secs => lease_ms / 1000.0))
    ON CONFLICT ON CONSTRAINT leases_pkey DO UPDATE
       -- (a row another transaction inserted meanwhile may already have a
       -- fence above the one drawn: then one above it, never a lower one)
       SET fence = CASE WHEN EXCLUDED.fence OPERATOR(pg_catalog.>) l.fence THEN EXCLUDED.fence
                        ELSE sandbox_store_internal._draw_claim_fence(l.fence) END,
           owner_token = EXCLUDED.owner_token,
           lease_expires_at = EXCLUDED.lease_expires_at
     WHERE l.owner_token IS NULL OR l.lease_expires_at OPERATOR(pg_catalog.<=) now
    RETURNING l.fence, l.owner_token, l.lease_expires_at INTO fence, owner_token, expires_at;
    IF NOT FOUND THEN
        -- Another writer took the thread's first lease meanwhile.
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            'Another writer took the lease at the same time.');
    END IF;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_acquire_writer(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz) IS
'Take the single checkpoint writer of a thread for lease_ms, without waiting: a claim (fence, owner_token, expires_at) on the thread''s reserved key, its fence above every fence the thread had. SBC05 if another unexpired writer holds it, or another transaction holds the writer at the moment.';

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_append(
    checkpoint pg_catalog.jsonb,
    expected_head_id pg_catalog.text,
    writer_thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_id pg_catalog.text := checkpoint_append.checkpoint ->> 'id';
    v_thread pg_catalog.text := checkpoint_append.checkpoint ->> 'threadId';
    v_parent pg_catalog.text := checkpoint_append.checkpoint ->> 'parentCheckpointId';
    v_head pg_catalog.text;
    v_keys pg_catalog.text[];
BEGIN
    IF checkpoint_append.at IS NOT NULL AND NOT isfinite(checkpoint_append.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_append.at);
    END IF;
    v_keys := sandbox_store_internal._checkpoint_check(checkpoint_append.checkpoint);
    PERFORM sandbox_store_internal._check_writer(v_thread, writer_thread_id, checkpoint_append.owner_token, checkpoint_append.fence, COALESCE(checkpoint_append.at, clock_timestamp()));
    IF EXISTS (SELECT FROM ONLY sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) v_id) THEN
        PERFORM sandbox_store_internal._raise('SBC03', format('checkpoint %s already exists', to_jsonb(v_id)),
            'Checkpoints are immutable: an id is appended once.');
    END IF;
    SELECT h.head_id INTO v_head FROM ONLY sandbox_store.checkpoint_heads h
     WHERE h.thread_id OPERATOR(pg_catalog.=) v_thread FOR UPDATE;
    IF v_head IS DISTINCT FROM expected_head_id THEN
        PERFORM sandbox_store_internal._raise('SBC01', format('the head of thread %s is not the expected one', to_jsonb(v_thread)),
            format('The head is %s; the append expected %s.', COALESCE(to_jsonb(v_head), 'null'), COALESCE(to_jsonb(expected_head_id), 'null')));
    END IF;
    IF v_parent IS DISTINCT FROM expected_head_id THEN
        PERFORM sandbox_store_internal._raise('SBC02', format('the parent of checkpoint %s is not the head', to_jsonb(v_id)),
            format('Its parent is %s; the head is %s.', COALESCE(to_jsonb(v_parent), 'null'), COALESCE(to_jsonb(expected_head_id), 'null')));
    END IF;
    BEGIN
        INSERT INTO sandbox_store.checkpoints (id, thread_id, parent_id, created_at, checkpoint, blob_keys)
        VALUES (v_id, v_thread, v_parent, (checkpoint_append.checkpoint ->> 'createdAt')::pg_catalog.int8, checkpoint_append.checkpoint, v_keys);
    EXCEPTION WHEN unique_violation THEN
        PERFORM sandbox_store_internal._raise('SBC03', format('checkpoint %s already exists', to_jsonb(v_id)),
            'Checkpoints are immutable: an id is appended once.');
    END;
    INSERT INTO sandbox_store.checkpoint_heads AS h (thread_id, head_id) VALUES (v_thread, v_id)
    ON CONFLICT ON CONSTRAINT checkpoint_heads_pkey DO UPDATE SET head_id = EXCLUDED.head_id;
    RETURN v_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_append(pg_catalog.jsonb, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Append a checkpoint as the thread''s new head, in one call that checks the writer and the head together: SBC07/SBC08 invalid, SB001 writer lost, SBC03 duplicate id, SBC01 stale head, SBC02 parent mismatch. Returns the new head id.';

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_blob_references()
RETURNS TABLE (key pg_catalog.text, refs pg_catalog.int8)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
AS $$
-- (every checkpoint's keys, counted now: no row per blob is written)
SELECT k.key, pg_catalog.count(*) FROM ONLY sandbox_store.checkpoints c, pg_catalog.unnest(c.blob_keys) k(key)
 GROUP BY k.key ORDER BY k.key COLLATE "C"
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_blob_references() IS
'Every blob key a stored checkpoint points to, with the number of checkpoints that point to it, by key as UTF-8 bytes.';

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_delete_head(
    thread_id pg_catalog.text,
    checkpoint_id pg_catalog.text,
    writer_thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    head pg_catalog.text;
    gone record;
BEGIN
    IF checkpoint_delete_head.at IS NOT NULL AND NOT isfinite(checkpoint_delete_head.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_delete_head.at);
    END IF;
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_delete_head.thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_id, 'checkpoint id', 1024);
    PERFORM sandbox_store_internal._check_writer(checkpoint_delete_head.thread_id, writer_thread_id, checkpoint_delete_head.owner_token, checkpoint_delete_head.fence, COALESCE(checkpoint_delete_head.at, clock_timestamp()));
    SELECT h.head_id INTO head FROM ONLY sandbox_store.checkpoint_heads h
     WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id FOR UPDATE;
    IF head IS DISTINCT FROM checkpoint_id THEN
        PERFORM sandbox_store_internal._raise('SBC04', format('checkpoint %s is not the head of thread %s', to_jsonb(checkpoint_id), to_jsonb(checkpoint_delete_head.thread_id)),
            format('The head is %s.', COALESCE(to_jsonb(head), 'null')));
    END IF;
    DELETE FROM ONLY sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) checkpoint_id
    RETURNING c.parent_id INTO gone;
    IF gone.parent_id IS NULL THEN
        DELETE FROM ONLY sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id;
    ELSE
        UPDATE ONLY sandbox_store.checkpoint_heads h SET head_id = gone.parent_id
         WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id;
    END IF;
    RETURN gone.parent_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_delete_head(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Delete the thread''s head checkpoint (SBC04 if checkpoint_id is not the head); the head moves to its parent and its blob references drop. Returns the new head id or NULL.';

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_fork(
    source_thread_id pg_catalog.text,
    source_checkpoint_id pg_catalog.text,
    destination_thread_id pg_catalog.text,
    destination_checkpoint_id pg_catalog.text,
    created_at pg_catalog.int8,
    writer_thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_source pg_catalog.jsonb;
    v_keys pg_catalog.text[];
    v_copy pg_catalog.jsonb;
BEGIN
    IF checkpoint_fork.at IS NOT NULL AND NOT isfinite(checkpoint_fork.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_fork.at);
    END IF;
    PERFORM sandbox_store_internal._check_id('SBC07', source_thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._check_id('SBC07', source_checkpoint_id, 'checkpoint id', 1024);
    PERFORM sandbox_store_internal._check_id('SBC07', destination_thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._check_id('SBC07', destination_checkpoint_id, 'checkpoint id', 1024);
    IF checkpoint_fork.created_at IS NULL OR checkpoint_fork.created_at NOT BETWEEN -8640000000000000 AND 8640000000000000 THEN
        PERFORM sandbox_store_internal._invalid_entry('createdAt is a whole number of milliseconds since 1970-01-01 UTC.');
    END IF;
    PERFORM sandbox_store_internal._check_writer(destination_thread_id, writer_thread_id, checkpoint_fork.owner_token, checkpoint_fork.fence, COALESCE(checkpoint_fork.at, clock_timestamp()));
    IF source_thread_id = destination_thread_id THEN
        PERFORM sandbox_store_internal._raise('SBC11', format('a fork of thread %s cannot go to the same thread', to_jsonb(source_thread_id)),
            'A fork makes the first checkpoint of another thread.');
    END IF;
    -- (its stored size, read before the checkpoint itself)
    PERFORM sandbox_store_internal._checkpoint_size(pg_column_size(c.checkpoint), 'The source checkpoint')
       FROM ONLY sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) source_checkpoint_id;
    SELECT c.checkpoint, c.blob_keys INTO v_source, v_keys FROM ONLY sandbox_store.checkpoints c
     WHERE c.id OPERATOR(pg_catalog.=) source_checkpoint_id;
    IF v_source IS NULL THEN
        PERFORM sandbox_store_internal._raise('SBC09', format('checkpoint %s does not exist', to_jsonb(source_checkpoint_id)),
            'A fork copies a stored checkpoint.');
    END IF;
    IF v_source ->> 'threadId' IS DISTINCT FROM source_thread_id THEN
        PERFORM sandbox_store_internal._raise('SBC11', format('checkpoint %s is not a checkpoint of thread %s', to_jsonb(source_checkpoint_id), to_jsonb(source_thread_id)),
            format('It belongs to thread %s.', v_source -> 'threadId'));
    END IF;
    IF EXISTS (SELECT FROM ONLY sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) destination_thread_id)
       OR EXISTS (SELECT FROM ONLY sandbox_store.checkpoints c WHERE c.thread_id OPERATOR(pg_catalog.=) destination_thread_id) THEN
        PERFORM sandbox_store_internal._raise('SBC10', format('thread %s already has checkpoints', to_jsonb(destination_thread_id)),
            'A fork makes the first checkpoint of an empty thread.');
    END IF;
    -- The fork root: the source's files, conversation and artifacts, and
    -- nothing of its save (label, sourceRunId).
    v_copy := jsonb_build_object('id', destination_checkpoint_id, 'threadId', destination_thread_id, 'parentCheckpointId', NULL,
                                 'createdAt', checkpoint_fork.created_at, 'reason', 'fork-root',
                                 'files', v_source -> 'files', 'conversation', v_source -> 'conversation',
                                 'artifacts', v_source -> 'artifacts');
    BEGIN
        -- (the same files and artifacts: the same blob keys)
        INSERT INTO sandbox_store.checkpoints (id, thread_id, parent_id, created_at, checkpoint, blob_keys)
        VALUES (destination_checkpoint_id, destination_thread_id, NULL, checkpoint_fork.created_at, v_copy, v_keys);
    EXCEPTION WHEN unique_violation THEN
        PERFORM sandbox_store_internal._raise('SBC03', format('checkpoint %s already exists', to_jsonb(destination_checkpoint_id)),
            'Checkpoints are immutable: an id is appended once.');
    END;
    INSERT INTO sandbox_store.checkpoint_heads (thread_id, head_id) VALUES (destination_thread_id, destination_checkpoint_id);
    RETURN v_copy;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_fork(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Copy a stored checkpoint as the fork-root (no parent) of an empty thread, atomically, under the destination''s writer, and return the copy; SBC09 if the source does not exist, SBC11 if it is not of the source thread (or the threads are the same), SBC10 if the destination has checkpoints.';

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_get(id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF checkpoint_get.id IS NULL OR octet_length(checkpoint_get.id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_get.id, 'checkpoint id', 1024);
    END IF;
    RETURN (SELECT c.checkpoint FROM ONLY sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) checkpoint_get.id);
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_get(pg_catalog.text) IS
'The checkpoint with this id, as appended, or NULL.';

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_head(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF checkpoint_head.thread_id IS NULL OR octet_length(checkpoint_head.thread_id) NOT BETWEEN 1 AND 1000 THEN
        PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_head.thread_id, 'thread id', 1000);
    END IF;
    RETURN (SELECT h.head_id FROM ONLY sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_head.thread_id);
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_head(pg_catalog.text) IS
'The head checkpoint id of a thread, or NULL.';

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_list(thread_id pg_catalog.text)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF checkpoint_list.thread_id IS NULL OR octet_length(checkpoint_list.thread_id) NOT BETWEEN 1 AND 1000 THEN
        PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_list.thread_id, 'thread id', 1000);
    END IF;
    RETURN QUERY SELECT c.checkpoint FROM ONLY sandbox_store.checkpoints c
                  WHERE c.thread_id OPERATOR(pg_catalog.=) checkpoint_list.thread_id
                  ORDER BY c.created_at, c.id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_list(pg_catalog.text) IS
'The checkpoints of a thread, by createdAt, then id as UTF-8 bytes.';

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_release_writer(
    thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_release_writer.thread_id, 'thread id', 1000);
    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key(checkpoint_release_writer.thread_id)
       AND l.owner_token OPERATOR(pg_catalog.=) checkpoint_release_writer.owner_token AND l.fence OPERATOR(pg_catalog.=) checkpoint_release_writer.fence;
    RETURN FOUND;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_release_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8) IS
'End the thread''s writer if owner_token and fence still hold it: true if they did (a stale writer never ends its successor).';

CREATE OR REPLACE FUNCTION sandbox_store.checkpoint_renew_writer(
    thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    lease_ms pg_catalog.int8 DEFAULT 120000,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    now pg_catalog.timestamptz := COALESCE(checkpoint_renew_writer.at, clock_timestamp());
    expires pg_catalog.timestamptz;
BEGIN
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_renew_writer.thread_id, 'thread id', 1000);
    IF lease_ms IS NULL OR lease_ms <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms must be positive', DETAIL = format('The value given is %s.', lease_ms);
    END IF;
    IF checkpoint_renew_writer.at IS NOT NULL AND NOT isfinite(checkpoint_renew_writer.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_renew_writer.at);
    END IF;
    IF lease_ms / 1000.0 >= 9223372036854 OR extract(epoch FROM now) + lease_ms / 1000.0 >= 9224318015999 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms is too long',
            DETAIL = 'now + lease_ms would be past the latest timestamp PostgreSQL has.';
    END IF;
    PERFORM sandbox_store_internal._check_writer(checkpoint_renew_writer.thread_id, checkpoint_renew_writer.thread_id, checkpoint_renew_writer.owner_token, checkpoint_renew_writer.fence, now);
    UPDATE ONLY sandbox_store.leases l SET lease_expires_at = now + make_interval(secs => lease_ms / 1000.0)
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key(checkpoint_renew_writer.thread_id)
    RETURNING l.lease_expires_at INTO expires;
    RETURN expires;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_renew_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.int8, pg_catalog.timestamptz) IS
'Extend the thread''s writer to now + lease_ms while it is still the current, unexpired writer; SB001 otherwise.';


-- A claim of a run (run_claim, or run_update raising driverEpoch) commits
-- durably whatever the session's synchronous_commit: off is raised to
-- local for the rest of the transaction, so a claim whose commit the
-- caller saw is never lost in a crash (another claim would then be given
-- the same number by run_update's patch, or the previous driver would go
-- on while the caller believes it drives the run).
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_durable()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'local', true);
    END IF;
END
$$;

-- The fence of a log write (append, upsert, close) of run_id, called with
-- the log row locked: reads the runs row (a claim takes the log row's lock
-- before it raises the epoch, so it waits for the write's transaction, or
-- the write, which read after the lock, sees the claim) and raises SB001
-- unless the write may go on:
-- without an epoch, while the run has no runs row or was never claimed (a
-- cleared epoch does not count: the highest it had is kept); with one, when
-- it is the run's current driver_epoch.  Returns the run's status (NULL
-- without a runs row).
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_fence(run_id pg_catalog.text, epoch pg_catalog.int8)
RETURNS pg_catalog.text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_status pg_catalog.text;
    v_epoch pg_catalog.int8;
    v_highest pg_catalog.int8;
BEGIN
    SELECT r.status, r.driver_epoch, r.max_driver_epoch INTO v_status, v_epoch, v_highest
      FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) _run_fence.run_id;
    IF epoch IS NULL AND v_highest IS NOT NULL
       OR epoch IS NOT NULL AND v_epoch IS DISTINCT FROM epoch THEN
        PERFORM sandbox_store_internal._run_stale(_run_fence.run_id, epoch, v_epoch, v_highest, v_status IS NOT NULL);
    END IF;
    RETURN v_status;
END
$$;

-- Whether a run's status is a finished one (completed, failed or aborted):
-- the one place the SQL of both editions lists them (src/run_log.c has the
-- same list, in run_status_finished).  A LANGUAGE sql expression with no
-- SET clause, so the planner puts it inline where it is called.  NULL for
-- NULL.
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_finished(status pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE sql
IMMUTABLE
AS $$
    SELECT _run_finished.status OPERATOR(pg_catalog.=) ANY (ARRAY['completed', 'failed', 'aborted']::pg_catalog.text[])
$$;

-- 22003 for an append of n entries to the log of run_id whose last seq is
-- last, when they would take seqs past 2^53 - 1 (the largest whole number a
-- JavaScript number holds exactly, an offset's position in the client).
-- Only run_log_upsert brings a tail that near the end.
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_log_full(run_id pg_catalog.text, last pg_catalog.int8,
                                                    n pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'numeric_value_out_of_range',
        MESSAGE = format('the log of run %s is full', to_jsonb(_run_log_full.run_id)),
        DETAIL = format('Its last seq is %s, and the entries appended would end at seq %s, past 9007199254740991 (2^53 - 1), the greatest seq.  Nothing was changed.',
                        last, last OPERATOR(pg_catalog.+) n),
        HINT = 'A log reaches its end only through run_log_upsert of a seq near it; close the log.';
END
$$;

-- A time in epoch milliseconds, as the client's JavaScript number: a finite
-- float8 (NaN and the infinities are refused, 22023).  what names the
-- argument or the patch key in the error.
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_number(v pg_catalog.float8, what pg_catalog.text)
RETURNS pg_catalog.float8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF v IS NULL OR v = 'NaN'::pg_catalog.float8
       OR v = 'Infinity'::pg_catalog.float8
       OR v = '-Infinity'::pg_catalog.float8 THEN
        PERFORM sandbox_store_internal._raise('22023', format('invalid %s', what),
            format('%s is a finite number; the value given is %s.', what, COALESCE(v::pg_catalog.text, 'missing')));
    END IF;
    RETURN v;
END
$$;

-- The value of key in a run_update patch that must be a finite number (a
-- JSON number that a float8 holds) or null (returned as NULL); 22023
-- otherwise.
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_patch_number(patch pg_catalog.jsonb, key pg_catalog.text)
RETURNS pg_catalog.float8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v pg_catalog.jsonb := patch -> key;
BEGIN
    IF jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) = 'number' THEN
        BEGIN
            RETURN (patch ->> key)::pg_catalog.float8;
        EXCEPTION WHEN numeric_value_out_of_range THEN
            NULL;
        END;
    END IF;
    PERFORM sandbox_store_internal._raise('22023', format('invalid patch key %s', key),
        format('%s is a number of milliseconds (a finite JavaScript number) or null; the value given is %s.', key,
               CASE WHEN jsonb_typeof(v) OPERATOR(pg_catalog.=) 'number' THEN 'a number out of range' ELSE v::pg_catalog.text END));
    RETURN NULL;
END
$$;

-- A run as the client's RunRecord: runId, threadId, status and startedAt
-- always; finishedAt, error, usage, sandboxKey, detachedSince,
-- cancelRequested and driverEpoch only when not NULL (absent, never JSON
-- null).  Numbers are the stored float8 values exactly (the function's
-- extra_float_digits makes their text the shortest that reads back as the
-- same float8).
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_record(r sandbox_store.runs)
RETURNS pg_catalog.jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 1
AS $$
SELECT pg_catalog.jsonb_build_object(
           'runId', r.run_id, 'threadId', r.thread_id, 'status', r.status, 'startedAt', r.started_at,
           'finishedAt', r.finished_at, 'error', r.error, 'usage', r.usage, 'sandboxKey', r.sandbox_key,
           'detachedSince', r.detached_since, 'cancelRequested', r.cancel_requested,
           'driverEpoch', r.driver_epoch)
       OPERATOR(pg_catalog.-) pg_catalog.array_remove(ARRAY[
           CASE WHEN r.finished_at IS NULL THEN 'finishedAt' END,
           CASE WHEN r.error IS NULL THEN 'error' END,
           CASE WHEN r.usage IS NULL THEN 'usage' END,
           CASE WHEN r.sandbox_key IS NULL THEN 'sandboxKey' END,
           CASE WHEN r.detached_since IS NULL THEN 'detachedSince' END,
           CASE WHEN r.cancel_requested IS NULL THEN 'cancelRequested' END,
           CASE WHEN r.driver_epoch IS NULL THEN 'driverEpoch' END], NULL)
$$;

-- SB001 for a write of run_id that carried epoch given (NULL: none) while
-- the run's driver_epoch is current_epoch (NULL: none) and the highest
-- epoch it ever had is highest (NULL: never claimed; has_record: whether
-- the run has a runs row).
CREATE OR REPLACE FUNCTION sandbox_store_internal._run_stale(run_id pg_catalog.text, given pg_catalog.int8,
                                                 current_epoch pg_catalog.int8, highest pg_catalog.int8,
                                                 has_record pg_catalog.bool)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sandbox_store_internal._raise('SB001',
        format('the driver epoch of run %s is not current', to_jsonb(_run_stale.run_id)),
        CASE WHEN given IS NULL AND current_epoch IS NOT NULL
             THEN format('The write carried no epoch, and a driver has claimed the run: its current epoch is %s.  Nothing was changed.',
                         current_epoch)
             WHEN given IS NULL
             THEN format('The write carried no epoch, and a driver has claimed the run: its epoch was cleared (the highest it had is %s).  Nothing was changed.',
                         highest)
             WHEN NOT has_record
             THEN format('The write carried epoch %s, and the run has no record: it was never claimed (no current epoch).  Nothing was changed.',
                         given)
             WHEN current_epoch IS NULL AND highest IS NOT NULL
             THEN format('The write carried epoch %s, and the run has no current epoch: it was cleared (the highest it had is %s).  Nothing was changed.',
                         given, highest)
             WHEN current_epoch IS NULL
             THEN format('The write carried epoch %s, and the run was never claimed (no current epoch).  Nothing was changed.',
                         given)
             ELSE format('The write carried epoch %s; the current epoch is %s.  Nothing was changed.', given, current_epoch) END);
END
$$;

-- Claim a run for a driver: take the lock of its log row (which every log
-- write holds from before its fence check to its commit), then the runs
-- row's, and give the run a new driver epoch: the highest it ever had (its
-- max_driver_epoch, which a clear of driver_epoch keeps; 0 if none) plus a
-- number drawn from fence_seq, as a sandbox claim draws its fence.  The
-- drawn number is never drawn again, even after a crash that loses this
-- transaction (the WAL that covers it is flushed before it is returned),
-- and the highest epoch never goes down, so an epoch once returned is
-- never returned again for the run; and a run's epoch, which a run_update
-- patch may raise to any number, never moves the sequence.
CREATE OR REPLACE FUNCTION sandbox_store.run_claim(run_id pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_epoch pg_catalog.int8;
    v_highest pg_catalog.int8;
    v_next pg_catalog.numeric;
    v_status pg_catalog.text;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_claim.run_id, 'run id', 1024);
    -- The run's log row first (made, empty, if the run has none), locked:
    -- a log write in flight holds it, so the claim waits for it to commit,
    -- and every later write reads the new epoch after taking it.
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_claim.run_id, 0, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at;
    SELECT r.status, r.max_driver_epoch INTO v_status, v_highest
      FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) run_claim.run_id
       FOR UPDATE;
    IF v_status IS NULL THEN
        PERFORM sandbox_store_internal._raise('SBR01', format('run %s does not exist', to_jsonb(run_claim.run_id)),
            'Only a run that run_create_or_resume made can be claimed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_claim.run_id)),
            format('Its status is %s; a finished run cannot be claimed.', v_status));
    END IF;
    v_next := COALESCE(v_highest, 0)::pg_catalog.numeric + sandbox_store_internal._draw_claim_fence(0);
    IF v_next > 9007199254740991 THEN
        PERFORM sandbox_store_internal._raise('22003', format('no driver epoch is left for run %s', to_jsonb(run_claim.run_id)),
            format('The next epoch would be %s, past 9007199254740991 (2^53 - 1), the greatest epoch.  Nothing was changed.', v_next));
    END IF;
    v_epoch := v_next;
    -- (made durable by its commit too, whatever the session's
    -- synchronous_commit: a claim the caller saw commit is never lost)
    PERFORM sandbox_store_internal._run_durable();
    UPDATE ONLY sandbox_store.runs r SET driver_epoch = v_epoch, max_driver_epoch = v_epoch
     WHERE r.run_id OPERATOR(pg_catalog.=) run_claim.run_id;
    RETURN v_epoch;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_claim(pg_catalog.text) IS
'Claim the run for a driver: it gets a new driver epoch, greater than any it had and never returned again for the run (not even after a crash): the highest epoch it ever had (a cleared one included) plus a number drawn from sandbox_store.fence_seq. The new epoch is returned; writes carrying an older epoch, or none, are refused (SB001) from then on. SBR01 if the run does not exist, SBR02 if its status is completed, failed or aborted.';

-- RunStore.createOrResume: insert the run, or return the existing record
-- unchanged (the other arguments are then ignored, but still checked).
CREATE OR REPLACE FUNCTION sandbox_store.run_create_or_resume(
    run_id pg_catalog.text,
    thread_id pg_catalog.text,
    started_at pg_catalog.float8,
    status pg_catalog.text DEFAULT 'running')
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_run sandbox_store.runs;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_create_or_resume.run_id, 'run id', 1024);
    PERFORM sandbox_store_internal._check_id('22023', run_create_or_resume.thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._run_number(run_create_or_resume.started_at, 'startedAt');
    IF run_create_or_resume.status IS NULL
       OR (run_create_or_resume.status NOT IN ('running', 'interrupted')
           AND NOT sandbox_store_internal._run_finished(run_create_or_resume.status)) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid run status',
            format('A status is running, interrupted, completed, failed or aborted; the value given is %s.',
                   COALESCE(to_jsonb(run_create_or_resume.status), 'null')));
    END IF;
    INSERT INTO sandbox_store.runs (run_id, thread_id, status, started_at)
    VALUES (run_create_or_resume.run_id, run_create_or_resume.thread_id, run_create_or_resume.status,
            run_create_or_resume.started_at)
    ON CONFLICT ON CONSTRAINT runs_pkey DO NOTHING;
    SELECT r.* INTO v_run FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) run_create_or_resume.run_id;
    RETURN sandbox_store_internal._run_record(v_run);
END
$$;

COMMENT ON FUNCTION sandbox_store.run_create_or_resume(pg_catalog.text, pg_catalog.text, pg_catalog.float8, pg_catalog.text) IS
'Insert the run (thread, startedAt in epoch ms, status, running by default) and return its record as RunRecord JSON; if the run exists, return its record unchanged (the other arguments are checked, then ignored).';

-- RunStore.findActiveRun.
CREATE OR REPLACE FUNCTION sandbox_store.run_find_active(thread_id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_find_active.thread_id, 'thread id', 1000);
    RETURN (SELECT sandbox_store_internal._run_record(r) FROM ONLY sandbox_store.runs r
             WHERE r.thread_id OPERATOR(pg_catalog.=) run_find_active.thread_id
               AND r.status OPERATOR(pg_catalog.=) 'running'
             ORDER BY r.started_at DESC, r.run_id COLLATE "C" DESC
             LIMIT 1);
END
$$;

COMMENT ON FUNCTION sandbox_store.run_find_active(pg_catalog.text) IS
'The running run of a thread with the latest startedAt (ties: the greatest run id as UTF-8 bytes) as RunRecord JSON, or NULL.';

-- RunStore.get.
CREATE OR REPLACE FUNCTION sandbox_store.run_get(run_id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_get.run_id, 'run id', 1024);
    RETURN (SELECT sandbox_store_internal._run_record(r) FROM ONLY sandbox_store.runs r
             WHERE r.run_id OPERATOR(pg_catalog.=) run_get.run_id);
END
$$;

COMMENT ON FUNCTION sandbox_store.run_get(pg_catalog.text) IS
'The record of the run as RunRecord JSON (fields that are not set are absent), or NULL.';

-- RunStore.listByThread.
CREATE OR REPLACE FUNCTION sandbox_store.run_list_by_thread(thread_id pg_catalog.text)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_list_by_thread.thread_id, 'thread id', 1000);
    RETURN QUERY
        SELECT sandbox_store_internal._run_record(r) FROM ONLY sandbox_store.runs r
         WHERE r.thread_id OPERATOR(pg_catalog.=) run_list_by_thread.thread_id
         ORDER BY r.started_at, r.run_id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.run_list_by_thread(pg_catalog.text) IS
'The runs of a thread as RunRecord JSON, by startedAt, then run id as UTF-8 bytes.';

-- RunStore.listReclaimable: the running runs detached at now - ttl_ms or
-- earlier.
CREATE OR REPLACE FUNCTION sandbox_store.run_list_reclaimable(now pg_catalog.float8, ttl_ms pg_catalog.float8)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    cutoff pg_catalog.float8;
BEGIN
    cutoff := sandbox_store_internal._run_number(run_list_reclaimable.now, 'now')
              - sandbox_store_internal._run_number(run_list_reclaimable.ttl_ms, 'ttl_ms');
    RETURN QUERY
        SELECT sandbox_store_internal._run_record(r) FROM ONLY sandbox_store.runs r
         WHERE r.status OPERATOR(pg_catalog.=) 'running' AND r.detached_since IS NOT NULL
           AND r.detached_since OPERATOR(pg_catalog.<=) cutoff
         ORDER BY r.detached_since, r.run_id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.run_list_reclaimable(pg_catalog.float8, pg_catalog.float8) IS
'The running runs whose detachedSince is at or before now - ttl_ms (epoch ms), as RunRecord JSON, by detachedSince, then run id as UTF-8 bytes.';

-- Close the log of run_id (making a closed, empty log if it has none): true
-- if this call closed it, false if it was closed already.  Fenced like the
-- other log writes; a finished run's log may be closed.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_close(
    run_id pg_catalog.text,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_closed pg_catalog.timestamptz;
    v_watched pg_catalog.bool;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_close.run_id, 'run id', 1024);
    IF run_log_close.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_close.epoch));
    END IF;
    -- The log row, locked, then the fence.
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_close.run_id, 0, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at
    RETURNING l.closed_at, l.watched INTO v_closed, v_watched;
    PERFORM sandbox_store_internal._run_fence(run_log_close.run_id, run_log_close.epoch);
    IF v_closed IS NOT NULL THEN
        RETURN false;
    END IF;
    UPDATE ONLY sandbox_store.run_logs l SET closed_at = clock_timestamp(), updated_at = clock_timestamp()
     WHERE l.run_id OPERATOR(pg_catalog.=) run_log_close.run_id;
    IF v_watched THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_close.run_id);
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_close(pg_catalog.text, pg_catalog.int8) IS
'Close the run''s log (a run without one gets a closed, empty log): true if this call closed it, false if it was closed already. Fenced like run_log_append (SB001); the log of a finished run may be closed. Notifies channel sandbox_store_run_log if a reader watches the log (run_log_watch).';

-- Delete the logs that are finished and quiet (the log row and its
-- entries): closed at least older_than ago, or open with a runs row whose
-- status is terminal and last written at least older_than ago, or open,
-- empty and without a runs row (a reader's run_log_watch made it) and made
-- at least older_than ago.  Any other open log is kept; run
-- records are never deleted.  At most max_logs (NULL: no limit), oldest
-- first; logs another transaction has locked are skipped.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_prune(
    older_than pg_catalog.interval,
    max_logs pg_catalog.int4 DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    cutoff pg_catalog.timestamptz;
    pruned pg_catalog.int8;
BEGIN
    IF run_log_prune.older_than IS NULL OR run_log_prune.older_than < '0'::pg_catalog.interval
       OR NOT isfinite(run_log_prune.older_than) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid older_than',
            format('older_than is a finite interval, 0 or more; the value given is %s.',
                   COALESCE(run_log_prune.older_than::pg_catalog.text, 'missing')));
    END IF;
    IF run_log_prune.max_logs < 0 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid max_logs',
            format('max_logs is 0 or more, or NULL for no limit; the value given is %s.', run_log_prune.max_logs));
    END IF;
    cutoff := clock_timestamp() - run_log_prune.older_than;
    WITH victims AS (
        SELECT l.run_id FROM ONLY sandbox_store.run_logs l
         WHERE (l.closed_at IS NOT NULL AND l.closed_at OPERATOR(pg_catalog.<=) cutoff)
            OR (l.closed_at IS NULL AND l.updated_at OPERATOR(pg_catalog.<=) cutoff
                AND EXISTS (SELECT FROM ONLY sandbox_store.runs r
                             WHERE r.run_id OPERATOR(pg_catalog.=) l.run_id
                               AND sandbox_store_internal._run_finished(r.status)))
            OR (l.closed_at IS NULL AND l.last_seq OPERATOR(pg_catalog.=) 0 AND l.updated_at OPERATOR(pg_catalog.<=) cutoff
                AND NOT EXISTS (SELECT FROM ONLY sandbox_store.runs r
                                 WHERE r.run_id OPERATOR(pg_catalog.=) l.run_id))
         ORDER BY COALESCE(l.closed_at, l.updated_at), l.run_id COLLATE "C"
         LIMIT run_log_prune.max_logs
           FOR UPDATE OF l SKIP LOCKED
    ), entries AS (
        DELETE FROM ONLY sandbox_store.run_log_entries e USING victims v
         WHERE e.run_id OPERATOR(pg_catalog.=) v.run_id
    ), logs AS (
        DELETE FROM ONLY sandbox_store.run_logs l USING victims v
         WHERE l.run_id OPERATOR(pg_catalog.=) v.run_id
        RETURNING l.run_id
    )
    SELECT count(*) INTO pruned FROM logs;
    RETURN pruned;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_prune(pg_catalog.interval, pg_catalog.int4) IS
'Delete the run logs (log and entries) that are finished and quiet: closed at least older_than ago, or open, of a run whose status is completed, failed or aborted, and last written at least older_than ago, or open, empty and of no run record (made by a reader) at least older_than ago. Any other open log is kept; run records are never deleted. At most max_logs (NULL: no limit), oldest first, skipping logs another transaction holds. Returns how many were deleted.';

-- The entries of the log of run_id after seq after, in seq order, at most
-- max_rows of them (NULL: all).  Never waits for a writer.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_read(
    run_id pg_catalog.text,
    after pg_catalog.int8 DEFAULT 0,
    max_rows pg_catalog.int4 DEFAULT NULL)
RETURNS TABLE (seq pg_catalog.int8, chunk pg_catalog.jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_read.run_id, 'run id', 1024);
    IF run_log_read.after IS NULL OR run_log_read.after < 0 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid after',
            format('after is a seq, 0 or more (0: from the start); the value given is %s.',
                   COALESCE(run_log_read.after::pg_catalog.text, 'missing')));
    END IF;
    IF run_log_read.max_rows < 0 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid max_rows',
            format('max_rows is 0 or more, or NULL for all; the value given is %s.', run_log_read.max_rows));
    END IF;
    RETURN QUERY
        SELECT e.seq, e.chunk FROM ONLY sandbox_store.run_log_entries e
         WHERE e.run_id OPERATOR(pg_catalog.=) run_log_read.run_id
           AND e.seq OPERATOR(pg_catalog.>) run_log_read.after
         ORDER BY e.seq
         LIMIT run_log_read.max_rows;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_read(pg_catalog.text, pg_catalog.int8, pg_catalog.int4) IS
'The entries of the run''s log with seq above after, in seq order, at most max_rows (NULL: all). Never waits for a writer.';

-- The tail of the log of run_id and whether it is closed; no row without a
-- log.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_status(run_id pg_catalog.text)
RETURNS TABLE (last_seq pg_catalog.int8, closed pg_catalog.bool)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_status.run_id, 'run id', 1024);
    RETURN QUERY
        SELECT l.last_seq, l.closed_at IS NOT NULL FROM ONLY sandbox_store.run_logs l
         WHERE l.run_id OPERATOR(pg_catalog.=) run_log_status.run_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_status(pg_catalog.text) IS
'The greatest seq stored in the run''s log (0: none) and whether the log is closed: one row, or none when the run has no log.';

-- Write entries at given seqs: seqs[i] pairs with chunks -> (i - 1).  A seq
-- already stored is replaced; a new one must come after the tail and after
-- every preceding new seq of the batch; none may repeat (SBR03, the whole
-- batch checked before anything is written).
CREATE OR REPLACE FUNCTION sandbox_store.run_log_upsert(
    run_id pg_catalog.text,
    seqs pg_catalog.int8[],
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.int8[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    n pg_catalog.int8;
    objects pg_catalog.bool;
    bad pg_catalog.int8;
    v_last pg_catalog.int8;
    v_closed pg_catalog.timestamptz;
    v_status pg_catalog.text;
    v_watched pg_catalog.bool;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_upsert.run_id, 'run id', 1024);
    IF jsonb_typeof(run_log_upsert.chunks) IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            format('chunks is a JSON array of JSON objects; the value given is %s.',
                   COALESCE(jsonb_typeof(run_log_upsert.chunks), 'missing')));
    END IF;
    SELECT count(*), COALESCE(bool_and(jsonb_typeof(c) OPERATOR(pg_catalog.=) 'object'), true)
      INTO n, objects
      FROM jsonb_array_elements(run_log_upsert.chunks) c;
    IF NOT objects THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            'chunks is a JSON array of JSON objects; an element is not an object.');
    END IF;
    IF run_log_upsert.seqs IS NULL OR COALESCE(cardinality(run_log_upsert.seqs), 0) <> n THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid seqs',
            format('seqs pairs one seq with each chunk: %s seqs were given for %s chunks.',
                   COALESCE(cardinality(run_log_upsert.seqs)::pg_catalog.text, 'no'), n));
    END IF;
    -- (at most 2^53 - 1: an offset's position is a JavaScript number, and
    -- the log's tail must stay far from bigint's end, or no append could
    -- follow)
    IF EXISTS (SELECT FROM unnest(run_log_upsert.seqs) s
                WHERE s IS NULL OR s OPERATOR(pg_catalog.<) 1 OR s OPERATOR(pg_catalog.>) 9007199254740991) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid seqs',
            'A seq is a whole number from 1 to 9007199254740991; seqs has a NULL, a smaller or a larger one.');
    END IF;
    IF run_log_upsert.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_upsert.epoch));
    END IF;
    IF n = 0 THEN
        PERFORM sandbox_store_internal._run_fence(run_log_upsert.run_id, run_log_upsert.epoch);
        RETURN '{}'::pg_catalog.int8[];
    END IF;

    -- The log row, locked (its last_seq as it was), then the fence.
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_upsert.run_id, 0, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = EXCLUDED.updated_at
    RETURNING l.last_seq, l.closed_at, l.watched INTO v_last, v_closed, v_watched;
    v_status := sandbox_store_internal._run_fence(run_log_upsert.run_id, run_log_upsert.epoch);
    IF v_closed IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('the log of run %s is closed', to_jsonb(run_log_upsert.run_id)),
            'A closed log takes no more entries.  Nothing was changed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_log_upsert.run_id)),
            format('Its status is %s: its log takes no more entries.  Nothing was changed.', v_status));
    END IF;

    SELECT s INTO bad FROM unnest(run_log_upsert.seqs) s GROUP BY s HAVING count(*) OPERATOR(pg_catalog.>) 1
     ORDER BY s LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR03', 'invalid log offset',
            format('Seq %s is repeated in the batch; each may appear once.  Nothing was changed.', bad));
    END IF;
    -- A seq not stored must be above the tail and above every preceding new
    -- seq of the batch.
    SELECT y.s INTO bad FROM (
        SELECT x.i, x.s, x.stored,
               max(x.s) FILTER (WHERE NOT x.stored)
                   OVER (ORDER BY x.i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_it
          FROM (SELECT u.i, u.s,
                       EXISTS (SELECT FROM ONLY sandbox_store.run_log_entries e
                                WHERE e.run_id OPERATOR(pg_catalog.=) run_log_upsert.run_id
                                  AND e.seq OPERATOR(pg_catalog.=) u.s) AS stored
                  FROM unnest(run_log_upsert.seqs) WITH ORDINALITY u(s, i)) x) y
     WHERE NOT y.stored AND y.s OPERATOR(pg_catalog.<=) GREATEST(v_last, y.before_it)
     ORDER BY y.i LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR03', 'invalid log offset',
            format('Seq %s is not stored, and it is not after the tail (%s) and every preceding new seq of the batch.  Nothing was changed.',
                   bad, v_last));
    END IF;

    INSERT INTO sandbox_store.run_log_entries AS e (run_id, seq, chunk)
    SELECT run_log_upsert.run_id, x.s, x.c
      FROM ROWS FROM (unnest(run_log_upsert.seqs), jsonb_array_elements(run_log_upsert.chunks)) x(s, c)
    ON CONFLICT ON CONSTRAINT run_log_entries_pkey DO UPDATE SET chunk = EXCLUDED.chunk;
    UPDATE ONLY sandbox_store.run_logs l
       SET last_seq = GREATEST(l.last_seq, (SELECT max(s) FROM unnest(run_log_upsert.seqs) s))
     WHERE l.run_id OPERATOR(pg_catalog.=) run_log_upsert.run_id;
    IF v_watched THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_upsert.run_id);
    END IF;
    RETURN run_log_upsert.seqs;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_upsert(pg_catalog.text, pg_catalog.int8[], pg_catalog.jsonb, pg_catalog.int8) IS
'Write chunks at the given seqs of the run''s log (seqs[i] with the i-th chunk) and return the seqs: a seq already stored is replaced, a new one must come after the tail and every preceding new seq of the batch, and none may repeat (SBR03; the whole batch is checked before anything is written). Fenced and refused like run_log_append; notifies channel sandbox_store_run_log if a reader watches the log (run_log_watch).';

-- Wake the readers of logs written with notify false, after the writes
-- committed: notify channel sandbox_store_run_log once for each given run
-- whose log is watched, and return how many were notified.  The read needs
-- no lock: at READ COMMITTED its snapshot is taken after the writes
-- committed (before this call), so a reader's run_log_watch that it does
-- not see commits after them, and the reader's first read after that sees
-- them.  At REPEATABLE READ or SERIALIZABLE the transaction's snapshot may
-- be older than the writes and the mark: every run named is notified,
-- watched or not (a reader ignores a wake it did not need; it must never
-- miss one).
CREATE OR REPLACE FUNCTION sandbox_store.run_log_wake(VARIADIC run_ids pg_catalog.text[])
RETURNS pg_catalog.int4
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_id pg_catalog.text;
    n pg_catalog.int4 := 0;
BEGIN
    IF run_log_wake.run_ids IS NULL THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid run ids',
            'run_ids is an array of run ids; the value given is missing.');
    END IF;
    FOREACH v_id IN ARRAY run_log_wake.run_ids LOOP
        PERFORM sandbox_store_internal._check_id('22023', v_id, 'run id', 1024);
    END LOOP;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        FOR v_id IN SELECT DISTINCT u.id FROM unnest(run_log_wake.run_ids) AS u(id) LOOP
            PERFORM pg_notify('sandbox_store_run_log', v_id);
            n := n + 1;
        END LOOP;
        RETURN n;
    END IF;
    FOR v_id IN
        SELECT l.run_id
          FROM ONLY sandbox_store.run_logs l
         WHERE l.run_id OPERATOR(pg_catalog.=) ANY (run_log_wake.run_ids)
           AND l.watched
    LOOP
        PERFORM pg_notify('sandbox_store_run_log', v_id);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_wake(pg_catalog.text[]) IS
'Wake the readers of the given runs'' logs after writes made with notify false committed: notifies channel sandbox_store_run_log with each run id whose log a reader watches (run_log_watch), and returns how many; at REPEATABLE READ or SERIALIZABLE, every run id given (the snapshot may predate the writes). Call it after the commit, never in the writing transaction (there it would notify at the same commit and gain nothing).';

-- A reader's start: mark the log of run_id watched (making an open, empty
-- log if it has none) and return its tail and whether it is closed, as
-- run_log_status does.  The reader LISTENs on sandbox_store_run_log first:
-- the mark is made under the log row's lock, so every write that commits
-- after it sees the mark and notifies, and every write before it had
-- committed, and is read, when this returns.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_watch(run_id pg_catalog.text)
RETURNS TABLE (last_seq pg_catalog.int8, closed pg_catalog.bool)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_watch.run_id, 'run id', 1024);
    RETURN QUERY
        INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at, watched)
        VALUES (run_log_watch.run_id, 0, clock_timestamp(), true)
        ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET watched = true
        RETURNING l.last_seq, l.closed_at IS NOT NULL;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_watch(pg_catalog.text) IS
'Start reading the run''s log: mark it watched (an open, empty log is made if it has none) and return its greatest seq (0: none) and whether it is closed. From then on every write of the log notifies channel sandbox_store_run_log with the run id; LISTEN on it before calling this, and no write is missed.';

-- RunStore.update: apply a patch of RunRecord fields (camelCase keys; a key
-- with JSON null clears its field, an absent key leaves it).  With epoch,
-- the run's driver_epoch must be epoch (SB001 otherwise).  driverEpoch in
-- the patch may clear the epoch (null), keep it (the current value) or
-- raise it above every epoch the run had (max_driver_epoch: a claim, made
-- durable); any other value could let a superseded driver write again
-- (SB001).  It takes the run's log row lock first, as run_claim and every
-- log write do, so the calls of one run always lock in one order (no two
-- deadlock, even several in one transaction), a log write in flight
-- commits before a finish or a raise of driverEpoch, and every later one
-- sees it.  False for an unknown run, true otherwise.
CREATE OR REPLACE FUNCTION sandbox_store.run_update(
    run_id pg_catalog.text,
    patch pg_catalog.jsonb,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    bad pg_catalog.text;
    v_finished pg_catalog.float8;
    v_detached pg_catalog.float8;
    v_driver pg_catalog.int8;
    v_current pg_catalog.int8;
    v_highest pg_catalog.int8;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_update.run_id, 'run id', 1024);
    IF jsonb_typeof(run_update.patch) IS DISTINCT FROM 'object' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid run patch',
            format('A patch is a JSON object; the value given is %s.',
                   COALESCE(jsonb_typeof(run_update.patch), 'missing')));
    END IF;
    SELECT k INTO bad FROM jsonb_object_keys(run_update.patch) k
     WHERE k OPERATOR(pg_catalog.<>) ALL (ARRAY['status', 'finishedAt', 'error', 'usage', 'sandboxKey',
                                               'detachedSince', 'cancelRequested', 'driverEpoch'])
     ORDER BY k COLLATE "C" LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('22023', format('invalid patch key %s', to_jsonb(bad)),
            'A patch has the keys status, finishedAt, error, usage, sandboxKey, detachedSince, cancelRequested and driverEpoch.');
    END IF;
    IF run_update.patch ? 'status'
       AND (jsonb_typeof(run_update.patch -> 'status') IS DISTINCT FROM 'string'
            OR (run_update.patch ->> 'status' NOT IN ('running', 'interrupted')
                AND NOT sandbox_store_internal._run_finished(run_update.patch ->> 'status'))) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid patch key status',
            format('A status is running, interrupted, completed, failed or aborted, and cannot be cleared; the value given is %s.',
                   run_update.patch -> 'status'));
    END IF;
    IF run_update.patch ? 'finishedAt' THEN
        v_finished := sandbox_store_internal._run_patch_number(run_update.patch, 'finishedAt');
    END IF;
    IF run_update.patch ? 'detachedSince' THEN
        v_detached := sandbox_store_internal._run_patch_number(run_update.patch, 'detachedSince');
    END IF;
    SELECT k INTO bad FROM (VALUES ('error'), ('usage')) v(k)
     WHERE run_update.patch ? k AND jsonb_typeof(run_update.patch -> k) NOT IN ('object', 'null')
     LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('22023', format('invalid patch key %s', bad),
            format('%s is a JSON object or null; the value given is %s.', bad, run_update.patch -> bad));
    END IF;
    IF run_update.patch ? 'sandboxKey' AND jsonb_typeof(run_update.patch -> 'sandboxKey') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid patch key sandboxKey',
            format('sandboxKey is a string or null; the value given is %s.', run_update.patch -> 'sandboxKey'));
    END IF;
    IF run_update.patch ? 'cancelRequested' AND jsonb_typeof(run_update.patch -> 'cancelRequested') NOT IN ('boolean', 'null') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid patch key cancelRequested',
            format('cancelRequested is true, false or null; the value given is %s.', run_update.patch -> 'cancelRequested'));
    END IF;
    IF run_update.patch ? 'driverEpoch' AND jsonb_typeof(run_update.patch -> 'driverEpoch') <> 'null' THEN
        -- (at most 2^53 - 1: the client holds an epoch in a JavaScript number)
        IF jsonb_typeof(run_update.patch -> 'driverEpoch') IS DISTINCT FROM 'number'
           OR run_update.patch ->> 'driverEpoch' !~ '^[0-9]{1,16}$'
           OR (run_update.patch ->> 'driverEpoch')::pg_catalog.int8 NOT BETWEEN 1 AND 9007199254740991 THEN
            PERFORM sandbox_store_internal._raise('22023', 'invalid patch key driverEpoch',
                format('driverEpoch is a whole number from 1 to 9007199254740991; the value given is %s.', run_update.patch -> 'driverEpoch'));
        END IF;
        v_driver := (run_update.patch ->> 'driverEpoch')::pg_catalog.int8;
    END IF;
    IF run_update.epoch IS NOT NULL AND run_update.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_update.epoch));
    END IF;

    -- The log row's lock first, as run_claim takes it (only when the run
    -- exists: an unknown run is left alone): a patch that sets or clears
    -- driverEpoch is a claim or ends the driver's writes, and one that
    -- finishes the run ends every driver's writes, so each waits for the
    -- log write in flight; any other patch takes it too, so that the locks
    -- of one run are always taken log row first.
    -- (Those that end writes write a new version of the log row, as
    -- run_claim does: a log writer at REPEATABLE READ whose snapshot
    -- predates their commit then fails its upsert of the row (40001)
    -- instead of reading the runs row as its snapshot has it.  The others
    -- take a row lock of the log row when it exists, no new row version;
    -- the upsert, which waits for a first append's insert in flight, when
    -- it does not.)
    IF EXISTS (
        SELECT FROM ONLY sandbox_store.runs r WHERE r.run_id OPERATOR(pg_catalog.=) run_update.run_id) THEN
        IF run_update.patch ? 'driverEpoch'
           OR sandbox_store_internal._run_finished(run_update.patch ->> 'status') THEN
            INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
            VALUES (run_update.run_id, 0, clock_timestamp())
            ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at;
        ELSE
            PERFORM FROM ONLY sandbox_store.run_logs l WHERE l.run_id OPERATOR(pg_catalog.=) run_update.run_id FOR UPDATE;
            IF NOT FOUND THEN
                INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
                VALUES (run_update.run_id, 0, clock_timestamp())
                ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at;
            END IF;
        END IF;
    END IF;
    SELECT r.driver_epoch, r.max_driver_epoch INTO v_current, v_highest FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) run_update.run_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF run_update.epoch IS NOT NULL AND v_current IS DISTINCT FROM run_update.epoch THEN
        PERFORM sandbox_store_internal._run_stale(run_update.run_id, run_update.epoch, v_current, v_highest, true);
    END IF;
    -- driverEpoch: null clears it (the highest is kept), the current value
    -- keeps it, a value above every epoch the run had raises it; a value at
    -- or below the highest, other than the current one, is refused.
    IF v_driver IS DISTINCT FROM v_current AND v_driver <= COALESCE(v_highest, 0) THEN
        PERFORM sandbox_store_internal._raise('SB001',
            format('the driver epoch of run %s is not current', to_jsonb(run_update.run_id)),
            format('The patch sets %s as driverEpoch, and %s: a driverEpoch other than the current one must be above every epoch the run had.  Nothing was changed.',
                   v_driver,
                   CASE WHEN v_current IS NULL
                        THEN format('the run has no current epoch (it was cleared; the highest it had is %s)', v_highest)
                        ELSE format('the current epoch is %s', v_current) END));
    END IF;
    IF v_driver > COALESCE(v_highest, 0) THEN
        PERFORM sandbox_store_internal._run_durable();
    END IF;

    UPDATE ONLY sandbox_store.runs r SET
        status = CASE WHEN run_update.patch ? 'status' THEN run_update.patch ->> 'status' ELSE r.status END,
        finished_at = CASE WHEN run_update.patch ? 'finishedAt' THEN v_finished ELSE r.finished_at END,
        error = CASE WHEN run_update.patch ? 'error'
                     THEN NULLIF(run_update.patch -> 'error', 'null'::pg_catalog.jsonb) ELSE r.error END,
        usage = CASE WHEN run_update.patch ? 'usage'
                     THEN NULLIF(run_update.patch -> 'usage', 'null'::pg_catalog.jsonb) ELSE r.usage END,
        sandbox_key = CASE WHEN run_update.patch ? 'sandboxKey' THEN run_update.patch ->> 'sandboxKey' ELSE r.sandbox_key END,
        detached_since = CASE WHEN run_update.patch ? 'detachedSince' THEN v_detached ELSE r.detached_since END,
        cancel_requested = CASE WHEN run_update.patch ? 'cancelRequested'
                                THEN (run_update.patch ->> 'cancelRequested')::pg_catalog.bool ELSE r.cancel_requested END,
        driver_epoch = CASE WHEN run_update.patch ? 'driverEpoch' THEN v_driver ELSE r.driver_epoch END,
        max_driver_epoch = GREATEST(r.max_driver_epoch, v_driver)
     WHERE r.run_id OPERATOR(pg_catalog.=) run_update.run_id;
    RETURN true;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_update(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8) IS
'Apply a patch of RunRecord fields to the run (status, finishedAt, error, usage, sandboxKey, detachedSince, cancelRequested, driverEpoch; a key with null clears its field, except status): false for an unknown run, true otherwise. With epoch: refused (SB001, nothing changed) unless it is the run''s current driver epoch. A driverEpoch in the patch may clear the epoch (null), keep it, or raise it above every epoch the run had; any other value is refused (SB001).';


-- The SQL edition's check of a checkpoint before it is appended (the C
-- edition's is C, checkpoint_check.c, with the same checks, order and
-- messages): its size against sandbox_store.max_checkpoint_bytes, its ids
-- (SBC07), then its fields and entries (SBC08).  Returns the blob keys it
-- points to, each once, by bytes (the checkpoints row's blob_keys).
--
-- First one query decides whether the whole checkpoint is valid and
-- collects its keys, without a loop: the paths joined with '/' are checked
-- as one path (stricter than each alone: a segment "c:x" after the first
-- takes the long way), the hex digits of the file keys joined as one string
-- (a regular expression per key costs more than the rest of the check),
-- and a file followed, in
-- the order of path || '/' as bytes, by a path beneath it.  Only when that
-- says no are the checks run one by one, in the documented order, to raise
-- the first error with its message (or, if none is found, go on).
CREATE OR REPLACE FUNCTION sandbox_store_internal._checkpoint_check(c pg_catalog.jsonb)
RETURNS pg_catalog.text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    e pg_catalog.jsonb;
    bad pg_catalog.text;
    ok pg_catalog.bool;
    keys pg_catalog.text[];
BEGIN
    PERFORM sandbox_store_internal._checkpoint_size(pg_column_size(c), 'The checkpoint');
    SELECT t.ok AND f.ok AND a.ok,
           ARRAY(SELECT DISTINCT k COLLATE "C" FROM unnest(f.keys || a.keys) k ORDER BY 1)
      INTO ok, keys
      FROM (SELECT jsonb_typeof(c) = 'object'
               AND jsonb_typeof(c -> 'id') = 'string' AND octet_length(c ->> 'id') BETWEEN 1 AND 1024
               AND jsonb_typeof(c -> 'threadId') = 'string' AND octet_length(c ->> 'threadId') BETWEEN 1 AND 1000
               AND CASE jsonb_typeof(c -> 'parentCheckpointId')
                   WHEN 'string' THEN octet_length(c ->> 'parentCheckpointId') BETWEEN 1 AND 1024
                   WHEN 'null' THEN true ELSE c -> 'parentCheckpointId' IS NULL END
               AND CASE WHEN jsonb_typeof(c -> 'createdAt') = 'number' AND c ->> 'createdAt' ~ '^-?[0-9]{1,16}$'
                        THEN (c ->> 'createdAt')::pg_catalog.int8 BETWEEN -8640000000000000 AND 8640000000000000
                        ELSE false END
               AND jsonb_typeof(c -> 'reason') = 'string' AND c ->> 'reason' IN ('automatic', 'named', 'fork-root')
               AND COALESCE(jsonb_typeof(c -> 'label') IN ('string', 'null'), true)
               AND COALESCE(jsonb_typeof(c -> 'sourceRunId') IN ('string', 'null'), true)
               AND c ? 'conversation'
               AND jsonb_typeof(c -> 'files') = 'array' AND jsonb_typeof(c -> 'artifacts') = 'array' AS ok) t,
           (SELECT COALESCE(bool_and(COALESCE(
                       jsonb_typeof(s.ent) = 'object' AND jsonb_typeof(s.ent -> 'path') = 'string'
                       AND CASE s.kind
                           WHEN 'file' THEN jsonb_typeof(s.ent -> 'blobKey') = 'string'
                                -- (the 64 hex digits of every key: below, in one match)
                                AND starts_with(s.ent ->> 'blobKey', 'sandbox-files/sha256/')
                                AND octet_length(s.ent ->> 'blobKey') = 85
                                AND jsonb_typeof(s.ent -> 'size') = 'number'
                                AND CASE WHEN s.ent ->> 'size' ~ '^[0-9]{1,16}$'
                                         THEN (s.ent ->> 'size')::pg_catalog.int8 <= 9007199254740991 ELSE false END
                           WHEN 'dir' THEN NOT (s.ent ? 'blobKey' OR s.ent ? 'size')
                           ELSE false END
                       AND NOT COALESCE(s.kind = 'file' AND starts_with(s.next_path, s.path || '/'), false),
                       false)), true)
                   AND count(DISTINCT s.path) = count(*)
                   AND COALESCE(string_agg(substr(s.ent ->> 'blobKey', 22), '') FILTER (WHERE s.kind = 'file')
                                ~ '^[0-9a-f]*$', true)
                   AND COALESCE(string_agg(s.path, '/') ~ E'^[^/\\\\]+(/[^/\\\\]+)*$'
                                AND string_agg(s.path, '/') !~ E'(^|/)(\\.\\.?(/|$)|[A-Za-z]:)', true) AS ok,
                   COALESCE(array_agg(s.ent ->> 'blobKey') FILTER (WHERE s.kind = 'file'), '{}') AS keys
              FROM (SELECT x.ent, x.ent ->> 'path' AS path, x.ent ->> 'kind' AS kind,
                           lead(x.ent ->> 'path') OVER (ORDER BY ((x.ent ->> 'path') || '/') COLLATE "C") AS next_path
                      FROM jsonb_array_elements(CASE jsonb_typeof(c -> 'files') WHEN 'array' THEN c -> 'files'
                                                ELSE '[]' END) x(ent)) s) f,
           (SELECT COALESCE(bool_and(COALESCE(
                       jsonb_typeof(y.art) = 'object'
                       AND jsonb_typeof(y.art -> 'artifactId') = 'string' AND y.art ->> 'artifactId' <> ''
                       AND jsonb_typeof(y.art -> 'name') = 'string' AND y.art ->> 'name' <> ''
                       AND jsonb_typeof(y.art -> 'mimeType') = 'string' AND y.art ->> 'mimeType' <> ''
                       AND jsonb_typeof(y.art -> 'size') = 'number' AND y.art ->> 'size' ~ '^[0-9]{1,16}$'
                       AND jsonb_typeof(y.art -> 'createdAt') = 'number'
                       AND jsonb_typeof(y.art -> 'blobKey') = 'string' AND y.art ->> 'blobKey' ~ '^sandbox-artifacts/.'
                       AND octet_length(y.art ->> 'blobKey') <= 1024, false)), true) AS ok,
                   COALESCE(array_agg(y.art ->> 'blobKey'), '{}') AS keys
              FROM jsonb_array_elements(CASE jsonb_typeof(c -> 'artifacts') WHEN 'array' THEN c -> 'artifacts'
                                        ELSE '[]' END) y(art)) a;
    IF ok THEN
        RETURN keys;
    END IF;

    -- The checks one by one, in order: the first error raised.
    IF jsonb_typeof(c) IS DISTINCT FROM 'object' THEN
        PERFORM sandbox_store_internal._invalid_entry('A checkpoint is a JSON object.');
    END IF;
    IF jsonb_typeof(c -> 'id') IS DISTINCT FROM 'string' THEN
        PERFORM sandbox_store_internal._check_id('SBC07', NULL, 'checkpoint id', 1024);
    END IF;
    PERFORM sandbox_store_internal._check_id('SBC07', c ->> 'id', 'checkpoint id', 1024);
    IF jsonb_typeof(c -> 'threadId') IS DISTINCT FROM 'string' THEN
        PERFORM sandbox_store_internal._check_id('SBC07', NULL, 'thread id', 1000);
    END IF;
    PERFORM sandbox_store_internal._check_id('SBC07', c ->> 'threadId', 'thread id', 1000);
    IF jsonb_typeof(c -> 'parentCheckpointId') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._check_id('SBC07', NULL, 'parent checkpoint id', 1024);
    END IF;
    IF jsonb_typeof(c -> 'parentCheckpointId') = 'string' THEN
        PERFORM sandbox_store_internal._check_id('SBC07', c ->> 'parentCheckpointId', 'parent checkpoint id', 1024);
    END IF;

    IF (CASE WHEN jsonb_typeof(c -> 'createdAt') IS DISTINCT FROM 'number' THEN true
             -- (written as a whole number: 1.0 is a number with a fraction)
             WHEN c ->> 'createdAt' !~ '^-?[0-9]{1,16}$' THEN true
             ELSE (c ->> 'createdAt')::pg_catalog.int8 NOT BETWEEN -8640000000000000 AND 8640000000000000 END) THEN
        PERFORM sandbox_store_internal._invalid_entry('createdAt is a whole number of milliseconds since 1970-01-01 UTC.');
    END IF;
    IF jsonb_typeof(c -> 'reason') IS DISTINCT FROM 'string'
       OR c ->> 'reason' NOT IN ('automatic', 'named', 'fork-root') THEN
        PERFORM sandbox_store_internal._invalid_entry('reason is "automatic", "named" or "fork-root".');
    END IF;
    IF jsonb_typeof(c -> 'label') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._invalid_entry('label is a string when present.');
    END IF;
    IF jsonb_typeof(c -> 'sourceRunId') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._invalid_entry('sourceRunId is a string when present.');
    END IF;
    IF NOT (c ? 'conversation') THEN
        PERFORM sandbox_store_internal._invalid_entry('conversation is required (the model messages).');
    END IF;

    -- files: {path, kind: 'file', blobKey, size} or {path, kind: 'dir'}.
    -- (Set-based: one pass over the entries, the first bad one reported;
    -- then duplicates and entries beneath a file, by hashing, not pairs.)
    IF jsonb_typeof(c -> 'files') IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._invalid_entry('files is an array.');
    END IF;
    SELECT r INTO bad FROM (
        SELECT i, CASE
            WHEN jsonb_typeof(ent) IS DISTINCT FROM 'object' OR jsonb_typeof(ent -> 'path') IS DISTINCT FROM 'string'
                THEN 'Each file entry is an object with a path.'
            WHEN ent ->> 'path' !~ E'^[^/\\\\]+(/[^/\\\\]+)*$' OR ent ->> 'path' ~ E'(^|/)\\.\\.?(/|$)'
                 OR ent ->> 'path' ~ '^[A-Za-z]:'
                THEN format('Path %s is not a normalized relative path.', ent -> 'path')
            WHEN ent ->> 'kind' = 'dir' AND (ent ? 'blobKey' OR ent ? 'size')
                THEN format('Directory %s has a blob key or a size; only files have them.', ent -> 'path')
            WHEN ent ->> 'kind' = 'file' AND (jsonb_typeof(ent -> 'blobKey') IS DISTINCT FROM 'string'
                                         OR ent ->> 'blobKey' !~ '^sandbox-files/sha256/[0-9a-f]{64}$')
                THEN format('The blob key of file %s is not sandbox-files/sha256/ and 64 lowercase hex digits.', ent -> 'path')
            WHEN ent ->> 'kind' = 'file'
                 AND (jsonb_typeof(ent -> 'size') IS DISTINCT FROM 'number'
                      OR CASE WHEN ent ->> 'size' ~ '^[0-9]{1,16}$'
                              THEN (ent ->> 'size')::pg_catalog.int8 > 9007199254740991 ELSE true END)
                THEN format('The size of file %s is not a whole number of bytes.', ent -> 'path')
            WHEN ent ->> 'kind' IS DISTINCT FROM 'file' AND ent ->> 'kind' IS DISTINCT FROM 'dir'
                THEN format('Entry %s has kind %s; a kind is "file" or "dir".', ent -> 'path', COALESCE(ent -> 'kind', 'null'))
            END AS r
          FROM jsonb_array_elements(c -> 'files') WITH ORDINALITY x(ent, i)) s
     WHERE r IS NOT NULL ORDER BY i LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._invalid_entry(bad);
    END IF;
    SELECT f ->> 'path' INTO bad FROM jsonb_array_elements(c -> 'files') f
     GROUP BY f ->> 'path' HAVING count(*) > 1 LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._invalid_entry(format('Path %s is listed more than once.', to_jsonb(bad)));
    END IF;
    -- An entry beneath a file: ordered by path || '/' as bytes, everything
    -- beneath an entry comes right after it, so a file is followed by an
    -- entry beneath it exactly when any entry is beneath it.
    SELECT s.next_path INTO bad FROM (
        SELECT ent ->> 'kind' AS kind, (ent ->> 'path') || '/' AS prefix,
               lead(ent ->> 'path') OVER (ORDER BY ((ent ->> 'path') || '/') COLLATE "C") AS next_path
          FROM jsonb_array_elements(c -> 'files') ent) s
     WHERE s.kind = 'file' AND starts_with(s.next_path, s.prefix) LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._invalid_entry(format('Path %s is beneath a file.', to_jsonb(bad)));
    END IF;

    -- artifacts: {artifactId, name, mimeType, size, blobKey, createdAt}.
    IF jsonb_typeof(c -> 'artifacts') IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._invalid_entry('artifacts is an array.');
    END IF;
    FOR e IN SELECT * FROM jsonb_array_elements(c -> 'artifacts') LOOP
        IF jsonb_typeof(e) IS DISTINCT FROM 'object'
           OR jsonb_typeof(e -> 'artifactId') IS DISTINCT FROM 'string' OR e ->> 'artifactId' = ''
           OR jsonb_typeof(e -> 'name') IS DISTINCT FROM 'string' OR e ->> 'name' = ''
           OR jsonb_typeof(e -> 'mimeType') IS DISTINCT FROM 'string' OR e ->> 'mimeType' = ''
           OR e ->> 'size' !~ '^[0-9]{1,16}$'
           OR jsonb_typeof(e -> 'size') IS DISTINCT FROM 'number'
           OR jsonb_typeof(e -> 'createdAt') IS DISTINCT FROM 'number' THEN
            PERFORM sandbox_store_internal._invalid_entry('Each artifact has artifactId, name, mimeType, size, blobKey and createdAt.');
        END IF;
        IF jsonb_typeof(e -> 'blobKey') IS DISTINCT FROM 'string'
           OR e ->> 'blobKey' !~ '^sandbox-artifacts/.' THEN
            PERFORM sandbox_store_internal._invalid_entry(format('The blob key of artifact %s is not under sandbox-artifacts/.', e -> 'artifactId'));
        END IF;
        -- (a key of checkpoint_blobs: short enough for its index)
        IF octet_length(e ->> 'blobKey') > 1024 THEN
            PERFORM sandbox_store_internal._invalid_entry(format('The blob key of artifact %s has %s bytes; at most 1024 are allowed.',
                                                        e -> 'artifactId', octet_length(e ->> 'blobKey')));
        END IF;
    END LOOP;
    -- (valid after all: the query above was stricter)
    RETURN ARRAY(SELECT DISTINCT s.k COLLATE "C" FROM (
        SELECT f ->> 'blobKey' FROM jsonb_array_elements(c -> 'files') f WHERE f ->> 'kind' = 'file'
        UNION ALL
        SELECT a ->> 'blobKey' FROM jsonb_array_elements(c -> 'artifacts') a) s(k)
      ORDER BY 1);
END
$$;


-- sandbox_store.max_checkpoint_bytes in bytes (0: not set, or no limit).
-- Without a library it is a placeholder: a text that any role may set,
-- read here as a size with or without a unit (kB, MB, GB).
CREATE OR REPLACE FUNCTION sandbox_store_internal._max_checkpoint_bytes()
RETURNS pg_catalog.int8
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting pg_catalog.text := btrim(current_setting('sandbox_store.max_checkpoint_bytes', true));
BEGIN
    IF setting IS NULL OR setting = '' THEN
        RETURN 0;
    END IF;
    -- (a block with an exception handler only when there is a value to read)
    BEGIN
        RETURN pg_size_bytes(regexp_replace(setting, '^([0-9]+) *B$', E'\\1 bytes'));
    EXCEPTION WHEN invalid_parameter_value OR numeric_value_out_of_range THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('invalid value for sandbox_store.max_checkpoint_bytes: %s', to_jsonb(setting)),
            DETAIL = 'It is a size in bytes, with or without a unit (kB, MB, GB), such as 104857600 or 100MB; 0 means no limit.',
            HINT = 'Set it to a valid size, or RESET it.';
    END;
END
$$;

-- A fenced write goes through only with the fence of the key's current
-- claim: the key's newest fence, its claim still set.  SB001 otherwise.
CREATE OR REPLACE FUNCTION sandbox_store_internal._check_fence(k pg_catalog.text, f pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    newest pg_catalog.int8;
    is_claimed boolean;
BEGIN
    SELECT l.fence, l.owner_token IS NOT NULL INTO newest, is_claimed
      FROM ONLY sandbox_store.leases l
     WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
    IF NOT FOUND THEN
        -- (REPEATABLE READ: a claim committed after the snapshot is 40001.)
        IF sandbox_store_internal._snapshot_isolation() THEN
            PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
        END IF;
        newest := 0;
        is_claimed := false;
    END IF;
    IF newest > f THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'old', f, newest);
    ELSIF newest <> f THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'foreign', f, newest);
    ELSIF NOT is_claimed THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'ended', f, newest);
    END IF;
END
$$;

-- Insert or fully replace a record (sandbox_upsert, sandbox_upsert_release),
-- arguments already checked.
CREATE OR REPLACE FUNCTION sandbox_store_internal._upsert(k pg_catalog.text, f pg_catalog.int8, release pg_catalog.bool,
                                      p_provider pg_catalog.text, p_provider_sandbox_id pg_catalog.text,
                                      p_thread_id pg_catalog.text, p_latest_snapshot_id pg_catalog.text,
                                      p_latest_run_id pg_catalog.text, p_updated_at pg_catalog.timestamptz)
RETURNS sandbox_store.instances
LANGUAGE plpgsql
AS $$
DECLARE
    rr boolean := sandbox_store_internal._snapshot_isolation();
    r sandbox_store.instances;
    newest pg_catalog.int8;
    is_claimed boolean;
BEGIN
    IF f IS NOT NULL OR rr THEN
        -- _lock and _check_fence, here (two calls fewer)
        IF pg_is_in_recovery() THEN
            PERFORM sandbox_store_internal._refuse_on_standby(k);
        END IF;
        IF (pg_advisory_xact_lock(sandbox_store_internal._lock_id(k))) IS NULL THEN END IF;
        IF f IS NOT NULL THEN
            SELECT l.fence, l.owner_token IS NOT NULL INTO newest, is_claimed
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
            IF NOT FOUND THEN
                IF rr THEN
                    PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
                END IF;
                newest := 0;
                is_claimed := false;
            END IF;
            IF newest > f THEN
                PERFORM sandbox_store_internal._claim_lost(k, 'old', f, newest);
            ELSIF newest <> f THEN
                PERFORM sandbox_store_internal._claim_lost(k, 'foreign', f, newest);
            ELSIF NOT is_claimed THEN
                PERFORM sandbox_store_internal._claim_lost(k, 'ended', f, newest);
            END IF;
        END IF;
        IF release THEN
            IF rr THEN
                BEGIN
                    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
                     WHERE l.key OPERATOR(pg_catalog.=) k AND l.fence OPERATOR(pg_catalog.=) f
                       AND l.owner_token IS NOT NULL;
                EXCEPTION WHEN serialization_failure THEN
                    PERFORM sandbox_store_internal._changed(k, 'claim');
                END;
            ELSE    -- (no 40001 at READ COMMITTED: no subtransaction)
                UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
                 WHERE l.key OPERATOR(pg_catalog.=) k AND l.fence OPERATOR(pg_catalog.=) f
                   AND l.owner_token IS NOT NULL;
            END IF;
            IF NOT FOUND THEN
                IF rr THEN
                    PERFORM sandbox_store_internal._changed(k, 'claim');
                END IF;
                RAISE EXCEPTION 'the checked claim of fence % on sandbox key "%" was not found', f, k
                    USING ERRCODE = 'internal_error';
            END IF;
        END IF;
    END IF;
    IF rr THEN
        PERFORM sandbox_store_internal._current_record(k);
    END IF;
    INSERT INTO sandbox_store.instances AS i
           (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at)
    VALUES (k, p_provider, p_provider_sandbox_id, p_latest_snapshot_id, p_thread_id, p_latest_run_id, p_updated_at)
    ON CONFLICT ON CONSTRAINT instances_pkey DO UPDATE SET
           provider = EXCLUDED.provider,
           provider_sandbox_id = EXCLUDED.provider_sandbox_id,
           latest_snapshot_id = EXCLUDED.latest_snapshot_id,
           thread_id = EXCLUDED.thread_id,
           latest_run_id = EXCLUDED.latest_run_id,
           updated_at = EXCLUDED.updated_at
    RETURNING i.* INTO r;
    RETURN r;
END
$$;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_ensure(
    key pg_catalog.text,
    run_id pg_catalog.text,
    max_age pg_catalog.interval DEFAULT NULL,
    provider pg_catalog.text DEFAULT NULL,
    wait pg_catalog.interval DEFAULT NULL,
    lease pg_catalog.interval DEFAULT NULL)
RETURNS SETOF sandbox_store.ensure_result
LANGUAGE plpgsql VOLATILE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    c record;
    r sandbox_store.instances;
    res sandbox_store.ensure_result;
    cutoff pg_catalog.timestamptz;
    c_fence pg_catalog.int8;
    c_live boolean;
BEGIN
    -- One condition for the text arguments and max_age; when it holds, the
    -- checks in their order (key, run_id, max_age, provider) say which one
    -- is bad, and a good max_age gives the cutoff.  (The lengths as
    -- '[1,1024]' @> n: one operator each, where NOT BETWEEN evaluates the
    -- length twice with two operators.)
    IF sandbox_ensure.key IS NULL OR sandbox_ensure.run_id IS NULL
       OR NOT '[1,1024]'::int4range @> octet_length(sandbox_ensure.key)
       OR NOT '[1,1024]'::int4range @> octet_length(sandbox_ensure.run_id)
       OR NOT '[1,1024]'::int4range @> octet_length(sandbox_ensure.provider)
       OR starts_with(sandbox_ensure.key, E'\x01') OR max_age IS NOT NULL THEN
        IF sandbox_ensure.key IS NULL OR octet_length(sandbox_ensure.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_ensure.key, E'\x01') THEN
            PERFORM sandbox_store_internal._bad_text(sandbox_ensure.key, 'key');
        END IF;
        IF sandbox_ensure.run_id IS NULL OR octet_length(sandbox_ensure.run_id) NOT BETWEEN 1 AND 1024 THEN
            PERFORM sandbox_store_internal._bad_text(sandbox_ensure.run_id, 'run_id');
        END IF;
        IF max_age IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval(max_age, 'max_age', false)) IS NULL THEN END IF;
        END IF;
        IF octet_length(sandbox_ensure.provider) NOT BETWEEN 1 AND 1024 THEN
            PERFORM sandbox_store_internal._bad_text(sandbox_ensure.provider, 'provider');
        END IF;
        IF max_age IS NOT NULL THEN
            cutoff := sandbox_store_internal._cutoff(max_age);
        END IF;
    END IF;

    IF wait IS NULL AND lease IS NULL AND NOT sandbox_store_internal._snapshot_isolation() AND NOT pg_is_in_recovery() THEN
        -- Lock mode without a wait at READ COMMITTED: _take's first step
        -- here (one call fewer), _take itself only when a claim is found.
        BEGIN
            IF (pg_advisory_xact_lock(sandbox_store_internal._lock_id(sandbox_ensure.key))) IS NULL THEN END IF;
            SELECT l.fence, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) sandbox_ensure.key AND l.owner_token IS NOT NULL;
            IF c_live THEN
                -- Give the lock back (the subtransaction's rollback does).
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            c_live := true;
        END;
        -- (nested: without a claim, the path sets up no call of _retire)
        IF c_fence IS NOT NULL THEN
            IF c_live OR NOT sandbox_store_internal._retire(sandbox_ensure.key) THEN
                c := sandbox_store_internal._take(sandbox_ensure.key, sandbox_store_internal._lock_id(sandbox_ensure.key), NULL, NULL);
            END IF;
        END IF;
    ELSE
        IF wait IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval(wait, 'wait', false)) IS NULL THEN END IF;
        END IF;
        IF lease IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval(lease, 'lease', true)) IS NULL THEN END IF;
        END IF;
        c := sandbox_store_internal._take(sandbox_ensure.key, sandbox_store_internal._lock_id(sandbox_ensure.key), wait, lease);
    END IF;

    IF lease IS NULL AND cutoff IS NULL AND sandbox_ensure.provider IS NULL THEN
        -- Lock mode, no condition on the record: a resume's row comes
        -- straight from the UPDATE (no claim).
        RETURN QUERY
        UPDATE ONLY sandbox_store.instances i
           SET latest_run_id = sandbox_ensure.run_id, updated_at = GREATEST(i.updated_at, now())
         WHERE i.key OPERATOR(pg_catalog.=) sandbox_ensure.key
        RETURNING 'resume'::pg_catalog.text, i.key::pg_catalog.text, i.provider::pg_catalog.text,
                  i.provider_sandbox_id::pg_catalog.text, i.latest_snapshot_id::pg_catalog.text,
                  i.thread_id::pg_catalog.text, i.latest_run_id::pg_catalog.text, i.updated_at,
                  NULL::pg_catalog.int8, NULL::pg_catalog.uuid, NULL::pg_catalog.timestamptz;
        IF FOUND THEN
            RETURN;
        END IF;
    ELSE
        UPDATE ONLY sandbox_store.instances i
           SET latest_run_id = sandbox_ensure.run_id, updated_at = GREATEST(i.updated_at, now())
         WHERE i.key OPERATOR(pg_catalog.=) sandbox_ensure.key
           AND (cutoff IS NULL OR i.updated_at OPERATOR(pg_catalog.>=) cutoff)
           AND (sandbox_ensure.provider IS NULL OR i.provider OPERATOR(pg_catalog.=) sandbox_ensure.provider)
        RETURNING i.* INTO r;
    END IF;
    IF FOUND THEN
        res.action := 'resume';
    ELSE
        IF sandbox_store_internal._snapshot_isolation() THEN
            r := sandbox_store_internal._current_record(sandbox_ensure.key);
        ELSE
            SELECT i.* INTO r FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) sandbox_ensure.key;
        END IF;
        res.action := CASE WHEN r.key IS NULL THEN 'create' ELSE 'recreate' END;
        -- Lock mode in autocommit: the lock ends with the statement.  (A
        -- procedure or DO block holds it until its own COMMIT.)
        IF lease IS NULL AND transaction_timestamp() = statement_timestamp()
           AND current_query() !~* E'^\\s*(call|do)\\M' THEN
            RAISE WARNING USING
                MESSAGE = format('sandbox_ensure returned "%s" outside a transaction block', res.action),
                DETAIL = 'The lock on the key ends with the statement, so another session may also be told to create a sandbox for it.',
                HINT = 'Call sandbox_ensure after BEGIN (or in a procedure) and upsert the new record before COMMIT, or pass a lease.';
        END IF;
    END IF;
    IF lease IS NULL THEN    -- lock mode: no claim (c is not set on the path above)
        RETURN NEXT ROW(res.action, r.key, r.provider, r.provider_sandbox_id, r.latest_snapshot_id, r.thread_id,
                        r.latest_run_id, r.updated_at, NULL, NULL, NULL)::sandbox_store.ensure_result;
    ELSE
        RETURN NEXT ROW(res.action, r.key, r.provider, r.provider_sandbox_id, r.latest_snapshot_id, r.thread_id,
                        r.latest_run_id, r.updated_at, c.fence, c.owner_token, c.lease_expires_at)::sandbox_store.ensure_result;
    END IF;
END
$$;

-- The SQL edition's run_log_append (the C edition's is C: src/run_log.c,
-- the same checks, order and messages; its comment is in comments.sql).
-- The hot path: append chunks to the log of run_id as its next entries, in
-- few statements: the log row's upsert (which locks it: appenders of one
-- run are serialized and commit in seq order) returning the seq before them
-- and whether a reader watches the log, the fence (a plain read of the runs
-- row), one INSERT ... SELECT of the entries, and a notification if so
-- and notify is true (1.7.0; false: the caller wakes the readers with
-- run_log_wake after the commit).  src/sql/build.sh makes the form
-- without notify from this text (part sql-edition/run_log.run_log_append-3):
-- keep the notify argument's lines as they are, or its build fails.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_append(
    run_id pg_catalog.text,
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8,
    notify pg_catalog.bool)
RETURNS pg_catalog.int8[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    n pg_catalog.int8;
    v_last pg_catalog.int8;
    v_closed pg_catalog.timestamptz;
    v_status pg_catalog.text;
    v_watched pg_catalog.bool;
    v_seqs pg_catalog.int8[];
BEGIN
    -- (the checks are simple expressions, which PL/pgSQL evaluates without
    -- running a query)
    IF run_log_append.run_id IS NULL OR octet_length(run_log_append.run_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._check_id('22023', run_log_append.run_id, 'run id', 1024);
    END IF;
    IF jsonb_typeof(run_log_append.chunks) IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            format('chunks is a JSON array of JSON objects; the value given is %s.',
                   COALESCE(jsonb_typeof(run_log_append.chunks), 'missing')));
    END IF;
    -- (strict: in lax mode a nested array is unwrapped, and its elements
    -- would be checked instead of the array itself)
    IF jsonb_path_exists(run_log_append.chunks, 'strict $[*] ? (@.type() != "object")') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            'chunks is a JSON array of JSON objects; an element is not an object.');
    END IF;
    IF run_log_append.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_append.epoch));
    END IF;
    IF run_log_append.notify IS NULL THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid notify',
            'notify is true (a watched log''s append notifies when it commits) or false (the caller wakes the readers with run_log_wake after the commit); the value given is missing.');
    END IF;
    n := jsonb_array_length(run_log_append.chunks);
    IF n = 0 THEN
        PERFORM sandbox_store_internal._run_fence(run_log_append.run_id, run_log_append.epoch);
        RETURN '{}'::pg_catalog.int8[];
    END IF;

    -- The log row, locked, its tail moved past the new entries (appenders
    -- of one run are serialized here, and so is run_claim, which takes
    -- this lock before it raises the epoch).
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_append.run_id, n, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE
       SET last_seq = l.last_seq OPERATOR(pg_catalog.+) EXCLUDED.last_seq, updated_at = EXCLUDED.updated_at
    RETURNING l.last_seq OPERATOR(pg_catalog.-) n, l.closed_at, l.watched INTO v_last, v_closed, v_watched;

    -- The fence, read after the lock: a claim committed before it is seen,
    -- one after it waited for this transaction.
    v_status := sandbox_store_internal._run_fence(run_log_append.run_id, run_log_append.epoch);
    IF v_closed IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('the log of run %s is closed', to_jsonb(run_log_append.run_id)),
            'A closed log takes no more entries.  Nothing was changed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_log_append.run_id)),
            format('Its status is %s: its log takes no more entries.  Nothing was changed.', v_status));
    END IF;
    IF v_last > 9007199254740991 - n THEN
        PERFORM sandbox_store_internal._run_log_full(run_log_append.run_id, v_last, n);
    END IF;

    -- The entries; their seqs, the result, are counted (cheaper than
    -- returning them from the insert and aggregating them).
    INSERT INTO sandbox_store.run_log_entries (run_id, seq, chunk)
    SELECT run_log_append.run_id, v_last OPERATOR(pg_catalog.+) x.i, x.c
      FROM jsonb_array_elements(run_log_append.chunks) WITH ORDINALITY x(c, i);
    v_seqs := '{}';
    FOR i IN 1 .. n LOOP
        v_seqs[i] := v_last + i;
    END LOOP;
    IF v_watched AND run_log_append.notify THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_append.run_id);
    END IF;
    RETURN v_seqs;
END
$$;

-- The SQL edition's run_log_append without notify (before 1.7.0 its
-- only form), made by src/sql/build.sh from
-- sql-edition/run_log.run_log_append.sql: the form with notify, with
-- notify true (a watched log's append notifies at its commit).  Its
-- comment is in shared/comments.sql.
CREATE OR REPLACE FUNCTION sandbox_store.run_log_append(
    run_id pg_catalog.text,
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.int8[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    n pg_catalog.int8;
    v_last pg_catalog.int8;
    v_closed pg_catalog.timestamptz;
    v_status pg_catalog.text;
    v_watched pg_catalog.bool;
    v_seqs pg_catalog.int8[];
BEGIN
    -- (the checks are simple expressions, which PL/pgSQL evaluates without
    -- running a query)
    IF run_log_append.run_id IS NULL OR octet_length(run_log_append.run_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._check_id('22023', run_log_append.run_id, 'run id', 1024);
    END IF;
    IF jsonb_typeof(run_log_append.chunks) IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            format('chunks is a JSON array of JSON objects; the value given is %s.',
                   COALESCE(jsonb_typeof(run_log_append.chunks), 'missing')));
    END IF;
    -- (strict: in lax mode a nested array is unwrapped, and its elements
    -- would be checked instead of the array itself)
    IF jsonb_path_exists(run_log_append.chunks, 'strict $[*] ? (@.type() != "object")') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            'chunks is a JSON array of JSON objects; an element is not an object.');
    END IF;
    IF run_log_append.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_append.epoch));
    END IF;
    n := jsonb_array_length(run_log_append.chunks);
    IF n = 0 THEN
        PERFORM sandbox_store_internal._run_fence(run_log_append.run_id, run_log_append.epoch);
        RETURN '{}'::pg_catalog.int8[];
    END IF;

    -- The log row, locked, its tail moved past the new entries (appenders
    -- of one run are serialized here, and so is run_claim, which takes
    -- this lock before it raises the epoch).
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_append.run_id, n, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE
       SET last_seq = l.last_seq OPERATOR(pg_catalog.+) EXCLUDED.last_seq, updated_at = EXCLUDED.updated_at
    RETURNING l.last_seq OPERATOR(pg_catalog.-) n, l.closed_at, l.watched INTO v_last, v_closed, v_watched;

    -- The fence, read after the lock: a claim committed before it is seen,
    -- one after it waited for this transaction.
    v_status := sandbox_store_internal._run_fence(run_log_append.run_id, run_log_append.epoch);
    IF v_closed IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('the log of run %s is closed', to_jsonb(run_log_append.run_id)),
            'A closed log takes no more entries.  Nothing was changed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_log_append.run_id)),
            format('Its status is %s: its log takes no more entries.  Nothing was changed.', v_status));
    END IF;
    IF v_last > 9007199254740991 - n THEN
        PERFORM sandbox_store_internal._run_log_full(run_log_append.run_id, v_last, n);
    END IF;

    -- The entries; their seqs, the result, are counted (cheaper than
    -- returning them from the insert and aggregating them).
    INSERT INTO sandbox_store.run_log_entries (run_id, seq, chunk)
    SELECT run_log_append.run_id, v_last OPERATOR(pg_catalog.+) x.i, x.c
      FROM jsonb_array_elements(run_log_append.chunks) WITH ORDINALITY x(c, i);
    v_seqs := '{}';
    FOR i IN 1 .. n LOOP
        v_seqs[i] := v_last + i;
    END LOOP;
    IF v_watched THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_append.run_id);
    END IF;
    RETURN v_seqs;
END
$$;

DROP FUNCTION sandbox_store_internal._checkpoint_error(pg_catalog.text, pg_catalog.text, pg_catalog.text);
DROP FUNCTION sandbox_store_internal._run_raise(pg_catalog.text, pg_catalog.text, pg_catalog.text);
DROP FUNCTION sandbox_store_internal._checkpoint_id(pg_catalog.text, pg_catalog.text, pg_catalog.int4);
DROP FUNCTION sandbox_store_internal._run_id(pg_catalog.text, pg_catalog.text, pg_catalog.int4);

-- The internal helpers: nobody but the owner (an update script runs this
-- too, for the helpers it makes).
REVOKE ALL ON SCHEMA sandbox_store_internal FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store_internal FROM PUBLIC;

-- Which edition of sandbox_store this database has, and its version: c (the
-- C edition, CREATE EXTENSION with the library), pg_tle (the SQL edition
-- registered with pg_tle, then CREATE EXTENSION) or plain (the SQL edition's
-- plain script, run with psql).
CREATE OR REPLACE FUNCTION sandbox_store.edition(OUT edition pg_catalog.text, OUT version pg_catalog.text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE WHEN l.lanname OPERATOR(pg_catalog.=) 'c' THEN 'c'
            WHEN e.oid IS NOT NULL THEN 'pg_tle'
            ELSE 'plain' END,
       COALESCE(e.extversion, '1.7.1')
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
  LEFT JOIN pg_catalog.pg_extension e ON e.extname OPERATOR(pg_catalog.=) 'sandbox_store'
 WHERE p.oid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure('sandbox_store.sandbox_get(pg_catalog.text)')
$$;

COMMENT ON FUNCTION sandbox_store.edition() IS
'Which edition of sandbox_store this database has (c, pg_tle or plain) and its version.';

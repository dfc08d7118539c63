-- The checkpoint store's functions (checkpoint-tables.sql has its tables and
-- how the store works).  The same PL/pgSQL in both editions; the check of a
-- checkpoint before it is appended, _checkpoint_check(jsonb) (size, ids,
-- fields and entries, in that order; returns the blob keys), is each
-- edition's own: C in internal-c.sql, PL/pgSQL in checkpoint-check-sql.sql.

-- The reserved claim key of a thread's checkpoint writer.
CREATE FUNCTION sandbox_store_internal._writer_key(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT E'\x01checkpoint-writer\x01' OPERATOR(pg_catalog.||) thread_id $$;

-- A checkpoint error (SQLSTATE SBCnn or SB001), message and detail given.
CREATE FUNCTION sandbox_store_internal._checkpoint_error(state pg_catalog.text, message pg_catalog.text,
                                                detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message, DETAIL = detail;
END
$$;

-- An id argument (checkpoint or thread): a string of 1..max_bytes bytes.
-- (Text in the database is always well-formed Unicode: a JSON string with a
-- lone surrogate escape is refused where the jsonb is read, 22P05, and the
-- client refuses such strings before sending them.)
CREATE FUNCTION sandbox_store_internal._checkpoint_id(v pg_catalog.text, what pg_catalog.text,
                                             max_bytes pg_catalog.int4)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF v IS NULL OR octet_length(v) NOT BETWEEN 1 AND max_bytes THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC07', format('invalid %s', what),
            format('A %s is a string of 1 to %s bytes; the value given is %s.', what, max_bytes,
                   CASE WHEN v IS NULL THEN 'missing' ELSE octet_length(v) || ' bytes long' END));
    END IF;
END
$$;

-- An entry of a checkpoint that is not as the contract says: SBC08.
CREATE FUNCTION sandbox_store_internal._invalid_entry(detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'SBC08', MESSAGE = 'invalid checkpoint entry', DETAIL = detail;
END
$$;

-- A checkpoint larger than the setting sandbox_store.max_checkpoint_bytes
-- (0: no limit) is refused with SBC08 before anything else reads it:
-- working on a checkpoint takes many times its size in memory.  size is its
-- jsonb value's size as pg_column_size gives it.  Each edition reads the
-- setting in _max_checkpoint_bytes() (the C edition's library defines it,
-- for superusers; the SQL edition parses the text anyone may set).
CREATE FUNCTION sandbox_store_internal._checkpoint_size(size pg_catalog.int8, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    max_bytes pg_catalog.int8 := sandbox_store_internal._max_checkpoint_bytes();
BEGIN
    IF max_bytes OPERATOR(pg_catalog.>) 0 AND size OPERATOR(pg_catalog.>) max_bytes THEN
        PERFORM sandbox_store_internal._invalid_entry(
            format('%s is %s bytes; sandbox_store.max_checkpoint_bytes allows at most %s.', what, size, max_bytes));
    END IF;
END
$$;

-- The writer check of every write: writer_thread_id's lease row, locked,
-- must hold owner_token and fence, unexpired at now, and be the writer of
-- thread_id.  SB001 otherwise.
CREATE FUNCTION sandbox_store_internal._check_writer(thread_id pg_catalog.text, writer_thread_id pg_catalog.text,
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
        PERFORM sandbox_store_internal._checkpoint_error('SB001', format('the checkpoint writer of thread %s was lost', to_jsonb(thread_id)),
            format('The writer given holds thread %s, not this one.  Nothing was changed.', to_jsonb(writer_thread_id)));
    END IF;
    SELECT s.owner_token, s.fence, s.lease_expires_at INTO l
      FROM ONLY sandbox_store.leases s
     WHERE s.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key(thread_id)
       FOR UPDATE;
    IF l.owner_token IS NULL OR l.owner_token IS DISTINCT FROM $3
       OR l.fence IS DISTINCT FROM $4 OR l.lease_expires_at OPERATOR(pg_catalog.<=) now THEN
        PERFORM sandbox_store_internal._checkpoint_error('SB001', format('the checkpoint writer of thread %s was lost', to_jsonb(thread_id)),
            CASE WHEN l.owner_token IS NULL THEN 'The thread has no writer: it was released or never taken.  Nothing was changed.'
                 WHEN l.owner_token IS DISTINCT FROM $3 OR l.fence IS DISTINCT FROM $4
                 THEN format('The thread''s writer has fence %s now: the lease was taken over.  Nothing was changed.', l.fence)
                 ELSE format('The writer''s lease expired at %s.  Nothing was changed.', l.lease_expires_at) END);
    END IF;
END
$$;

-- The interface.

CREATE FUNCTION sandbox_store.checkpoint_acquire_writer(
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
    now pg_catalog.timestamptz := COALESCE($3, clock_timestamp());
    cur record;
BEGIN
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    IF $2 IS NULL OR $2 <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms must be positive', DETAIL = format('The value given is %s.', $2);
    END IF;
    IF $3 IS NOT NULL AND NOT isfinite($3) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', $3);
    END IF;
    IF $2 / 1000.0 >= 9223372036854 OR extract(epoch FROM now) + $2 / 1000.0 >= 9224318015999 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms is too long',
            DETAIL = 'now + lease_ms would be past the latest timestamp PostgreSQL has.';
    END IF;
    k := sandbox_store_internal._writer_key($1);
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
        PERFORM sandbox_store_internal._checkpoint_error('SBC05', format('thread %s has a checkpoint writer', to_jsonb($1)),
            'Another transaction is acquiring, renewing, releasing or writing with the thread''s writer and has not ended.');
    END;
    IF cur.owner_token IS NOT NULL AND cur.lease_expires_at > now THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC05', format('thread %s has a checkpoint writer', to_jsonb($1)),
            format('Its lease (fence %s) runs until %s.', cur.fence, cur.lease_expires_at));
    END IF;
    INSERT INTO sandbox_store.leases AS l (key, fence, owner_token, lease_expires_at)
    VALUES (k, sandbox_store_internal._draw_claim_fence(COALESCE(cur.fence, 0)), gen_random_uuid(),
            now + make_interval(secs => $2 / 1000.0))
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
        PERFORM sandbox_store_internal._checkpoint_error('SBC05', format('thread %s has a checkpoint writer', to_jsonb($1)),
            'Another writer took the lease at the same time.');
    END IF;
    RETURN NEXT;
END
$$;

CREATE FUNCTION sandbox_store.checkpoint_renew_writer(
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
    now pg_catalog.timestamptz := COALESCE($5, clock_timestamp());
    expires pg_catalog.timestamptz;
BEGIN
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    IF $4 IS NULL OR $4 <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms must be positive', DETAIL = format('The value given is %s.', $4);
    END IF;
    IF $5 IS NOT NULL AND NOT isfinite($5) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', $5);
    END IF;
    IF $4 / 1000.0 >= 9223372036854 OR extract(epoch FROM now) + $4 / 1000.0 >= 9224318015999 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms is too long',
            DETAIL = 'now + lease_ms would be past the latest timestamp PostgreSQL has.';
    END IF;
    PERFORM sandbox_store_internal._check_writer($1, $1, $2, $3, now);
    UPDATE ONLY sandbox_store.leases l SET lease_expires_at = now + make_interval(secs => $4 / 1000.0)
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key($1)
    RETURNING l.lease_expires_at INTO expires;
    RETURN expires;
END
$$;

CREATE FUNCTION sandbox_store.checkpoint_release_writer(
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
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key($1)
       AND l.owner_token OPERATOR(pg_catalog.=) $2 AND l.fence OPERATOR(pg_catalog.=) $3;
    RETURN FOUND;
END
$$;

CREATE FUNCTION sandbox_store.checkpoint_append(
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
    v_id pg_catalog.text := $1 ->> 'id';
    v_thread pg_catalog.text := $1 ->> 'threadId';
    v_parent pg_catalog.text := $1 ->> 'parentCheckpointId';
    v_head pg_catalog.text;
    v_keys pg_catalog.text[];
BEGIN
    IF $6 IS NOT NULL AND NOT isfinite($6) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', $6);
    END IF;
    v_keys := sandbox_store_internal._checkpoint_check($1);
    PERFORM sandbox_store_internal._check_writer(v_thread, $3, $4, $5, COALESCE($6, clock_timestamp()));
    IF EXISTS (SELECT FROM sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) v_id) THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC03', format('checkpoint %s already exists', to_jsonb(v_id)),
            'Checkpoints are immutable: an id is appended once.');
    END IF;
    SELECT h.head_id INTO v_head FROM sandbox_store.checkpoint_heads h
     WHERE h.thread_id OPERATOR(pg_catalog.=) v_thread FOR UPDATE;
    IF v_head IS DISTINCT FROM $2 THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC01', format('the head of thread %s is not the expected one', to_jsonb(v_thread)),
            format('The head is %s; the append expected %s.', COALESCE(to_jsonb(v_head), 'null'), COALESCE(to_jsonb($2), 'null')));
    END IF;
    IF v_parent IS DISTINCT FROM $2 THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC02', format('the parent of checkpoint %s is not the head', to_jsonb(v_id)),
            format('Its parent is %s; the head is %s.', COALESCE(to_jsonb(v_parent), 'null'), COALESCE(to_jsonb($2), 'null')));
    END IF;
    BEGIN
        INSERT INTO sandbox_store.checkpoints (id, thread_id, parent_id, created_at, checkpoint, blob_keys)
        VALUES (v_id, v_thread, v_parent, ($1 ->> 'createdAt')::pg_catalog.int8, $1, v_keys);
    EXCEPTION WHEN unique_violation THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC03', format('checkpoint %s already exists', to_jsonb(v_id)),
            'Checkpoints are immutable: an id is appended once.');
    END;
    INSERT INTO sandbox_store.checkpoint_heads AS h (thread_id, head_id) VALUES (v_thread, v_id)
    ON CONFLICT ON CONSTRAINT checkpoint_heads_pkey DO UPDATE SET head_id = EXCLUDED.head_id;
    RETURN v_id;
END
$$;

CREATE FUNCTION sandbox_store.checkpoint_delete_head(
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
    IF $6 IS NOT NULL AND NOT isfinite($6) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', $6);
    END IF;
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    PERFORM sandbox_store_internal._checkpoint_id($2, 'checkpoint id', 1024);
    PERFORM sandbox_store_internal._check_writer($1, $3, $4, $5, COALESCE($6, clock_timestamp()));
    SELECT h.head_id INTO head FROM sandbox_store.checkpoint_heads h
     WHERE h.thread_id OPERATOR(pg_catalog.=) $1 FOR UPDATE;
    IF head IS DISTINCT FROM $2 THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC04', format('checkpoint %s is not the head of thread %s', to_jsonb($2), to_jsonb($1)),
            format('The head is %s.', COALESCE(to_jsonb(head), 'null')));
    END IF;
    DELETE FROM sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) $2
    RETURNING c.parent_id INTO gone;
    IF gone.parent_id IS NULL THEN
        DELETE FROM sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) $1;
    ELSE
        UPDATE sandbox_store.checkpoint_heads h SET head_id = gone.parent_id
         WHERE h.thread_id OPERATOR(pg_catalog.=) $1;
    END IF;
    RETURN gone.parent_id;
END
$$;

CREATE FUNCTION sandbox_store.checkpoint_fork(
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
    IF $9 IS NOT NULL AND NOT isfinite($9) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', $9);
    END IF;
    PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    PERFORM sandbox_store_internal._checkpoint_id($2, 'checkpoint id', 1024);
    PERFORM sandbox_store_internal._checkpoint_id($3, 'thread id', 1000);
    PERFORM sandbox_store_internal._checkpoint_id($4, 'checkpoint id', 1024);
    IF $5 IS NULL OR $5 NOT BETWEEN -8640000000000000 AND 8640000000000000 THEN
        PERFORM sandbox_store_internal._invalid_entry('createdAt is a whole number of milliseconds since 1970-01-01 UTC.');
    END IF;
    PERFORM sandbox_store_internal._check_writer($3, $6, $7, $8, COALESCE($9, clock_timestamp()));
    IF $1 OPERATOR(pg_catalog.=) $3 THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC11', format('a fork of thread %s cannot go to the same thread', to_jsonb($1)),
            'A fork makes the first checkpoint of another thread.');
    END IF;
    -- (its stored size, read before the checkpoint itself)
    PERFORM sandbox_store_internal._checkpoint_size(pg_column_size(c.checkpoint), 'The source checkpoint')
       FROM sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) $2;
    SELECT c.checkpoint, c.blob_keys INTO v_source, v_keys FROM sandbox_store.checkpoints c
     WHERE c.id OPERATOR(pg_catalog.=) $2;
    IF v_source IS NULL THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC09', format('checkpoint %s does not exist', to_jsonb($2)),
            'A fork copies a stored checkpoint.');
    END IF;
    IF v_source ->> 'threadId' IS DISTINCT FROM $1 THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC11', format('checkpoint %s is not a checkpoint of thread %s', to_jsonb($2), to_jsonb($1)),
            format('It belongs to thread %s.', v_source -> 'threadId'));
    END IF;
    IF EXISTS (SELECT FROM sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) $3)
       OR EXISTS (SELECT FROM sandbox_store.checkpoints c WHERE c.thread_id OPERATOR(pg_catalog.=) $3) THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC10', format('thread %s already has checkpoints', to_jsonb($3)),
            'A fork makes the first checkpoint of an empty thread.');
    END IF;
    -- The fork root: the source's files, conversation and artifacts, and
    -- nothing of its save (label, sourceRunId).
    v_copy := jsonb_build_object('id', $4, 'threadId', $3, 'parentCheckpointId', NULL,
                                 'createdAt', $5, 'reason', 'fork-root',
                                 'files', v_source -> 'files', 'conversation', v_source -> 'conversation',
                                 'artifacts', v_source -> 'artifacts');
    BEGIN
        -- (the same files and artifacts: the same blob keys)
        INSERT INTO sandbox_store.checkpoints (id, thread_id, parent_id, created_at, checkpoint, blob_keys)
        VALUES ($4, $3, NULL, $5, v_copy, v_keys);
    EXCEPTION WHEN unique_violation THEN
        PERFORM sandbox_store_internal._checkpoint_error('SBC03', format('checkpoint %s already exists', to_jsonb($4)),
            'Checkpoints are immutable: an id is appended once.');
    END;
    INSERT INTO sandbox_store.checkpoint_heads (thread_id, head_id) VALUES ($3, $4);
    RETURN v_copy;
END
$$;

CREATE FUNCTION sandbox_store.checkpoint_get(id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._checkpoint_id($1, 'checkpoint id', 1024);
    END IF;
    RETURN (SELECT c.checkpoint FROM sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) $1);
END
$$;

CREATE FUNCTION sandbox_store.checkpoint_list(thread_id pg_catalog.text)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1000 THEN
        PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    END IF;
    RETURN QUERY SELECT c.checkpoint FROM sandbox_store.checkpoints c
                  WHERE c.thread_id OPERATOR(pg_catalog.=) $1
                  ORDER BY c.created_at, c.id COLLATE "C";
END
$$;

CREATE FUNCTION sandbox_store.checkpoint_head(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1000 THEN
        PERFORM sandbox_store_internal._checkpoint_id($1, 'thread id', 1000);
    END IF;
    RETURN (SELECT h.head_id FROM sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) $1);
END
$$;

CREATE FUNCTION sandbox_store.checkpoint_blob_references()
RETURNS TABLE (key pg_catalog.text, refs pg_catalog.int8)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
AS $$
-- (every checkpoint's keys, counted now: no row per blob is written)
SELECT k.key, pg_catalog.count(*) FROM sandbox_store.checkpoints c, pg_catalog.unnest(c.blob_keys) k(key)
 GROUP BY k.key ORDER BY k.key COLLATE "C"
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_acquire_writer(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz) IS
'Take the single checkpoint writer of a thread for lease_ms, without waiting: a claim (fence, owner_token, expires_at) on the thread''s reserved key, its fence above every fence the thread had. SBC05 if another unexpired writer holds it, or another transaction holds the writer at the moment.';
COMMENT ON FUNCTION sandbox_store.checkpoint_renew_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.int8, pg_catalog.timestamptz) IS
'Extend the thread''s writer to now + lease_ms while it is still the current, unexpired writer; SB001 otherwise.';
COMMENT ON FUNCTION sandbox_store.checkpoint_release_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8) IS
'End the thread''s writer if owner_token and fence still hold it: true if they did (a stale writer never ends its successor).';
COMMENT ON FUNCTION sandbox_store.checkpoint_append(pg_catalog.jsonb, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Append a checkpoint as the thread''s new head, in one call that checks the writer and the head together: SBC07/SBC08 invalid, SB001 writer lost, SBC03 duplicate id, SBC01 stale head, SBC02 parent mismatch. Returns the new head id.';
COMMENT ON FUNCTION sandbox_store.checkpoint_delete_head(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Delete the thread''s head checkpoint (SBC04 if checkpoint_id is not the head); the head moves to its parent and its blob references drop. Returns the new head id or NULL.';
COMMENT ON FUNCTION sandbox_store.checkpoint_fork(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Copy a stored checkpoint as the fork-root (no parent) of an empty thread, atomically, under the destination''s writer, and return the copy; SBC09 if the source does not exist, SBC11 if it is not of the source thread (or the threads are the same), SBC10 if the destination has checkpoints.';
COMMENT ON FUNCTION sandbox_store.checkpoint_get(pg_catalog.text) IS
'The checkpoint with this id, as appended, or NULL.';
COMMENT ON FUNCTION sandbox_store.checkpoint_list(pg_catalog.text) IS
'The checkpoints of a thread, by createdAt, then id as UTF-8 bytes.';
COMMENT ON FUNCTION sandbox_store.checkpoint_head(pg_catalog.text) IS
'The head checkpoint id of a thread, or NULL.';
COMMENT ON FUNCTION sandbox_store.checkpoint_blob_references() IS
'Every blob key a stored checkpoint points to, with the number of checkpoints that point to it, by key as UTF-8 bytes.';

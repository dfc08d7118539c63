-- The writer check of every write: writer_thread_id's writer row, locked,
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
        PERFORM sandbox_store_internal._raise('SB001', format('the checkpoint writer of thread %s was lost', to_jsonb(thread_id)),
            format('The writer given holds thread %s, not this one.  Nothing was changed.', to_jsonb(writer_thread_id)));
    END IF;
    SELECT s.owner_token, s.fence, s.lease_expires_at INTO l
      FROM ONLY sandbox_store.checkpoint_writers s
     WHERE s.thread_id OPERATOR(pg_catalog.=) _check_writer.thread_id
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

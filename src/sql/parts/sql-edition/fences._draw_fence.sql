-- A new fence above `above`, drawn from fence_seq.  A draw holds the fence
-- draw lock (advisory (0, 21315)) shared; moving the sequence up to the key
-- holds it exclusive, draws again and calls setval only if still needed, so
-- the sequence never moves back under another draw.  In this edition the
-- draw lock lasts until the transaction ends.
CREATE FUNCTION sandbox_store_internal._draw_fence(above pg_catalog.int8)
RETURNS pg_catalog.int8
LANGUAGE plpgsql
AS $$
DECLARE
    f pg_catalog.int8;
BEGIN
    IF (pg_advisory_xact_lock_shared(0, 21315)) IS NULL THEN END IF;
    f := nextval('sandbox_store.fence_seq');
    IF f > above THEN
        RETURN f;
    END IF;
    IF (pg_advisory_xact_lock(0, 21315)) IS NULL THEN END IF;
    f := nextval('sandbox_store.fence_seq');
    IF f <= above THEN
        PERFORM setval('sandbox_store.fence_seq', above);
        f := nextval('sandbox_store.fence_seq');
    END IF;
    IF f <= above THEN
        RAISE EXCEPTION 'sequence sandbox_store.fence_seq gave % after being set to %', f, above
            USING ERRCODE = 'internal_error';
    END IF;
    RETURN f;
END
$$;

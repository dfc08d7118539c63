-- The key's record, row-locked, at REPEATABLE READ or SERIALIZABLE: the one
-- the snapshot shows must be the newest (40001 otherwise).  NULL key when
-- there is none.
CREATE FUNCTION sandbox_store_internal._current_record(k pg_catalog.text)
RETURNS sandbox_store.instances
LANGUAGE plpgsql
AS $$
DECLARE
    r sandbox_store.instances;
BEGIN
    BEGIN
        SELECT i.* INTO r FROM ONLY sandbox_store.instances i
         WHERE i.key OPERATOR(pg_catalog.=) k FOR UPDATE;
    EXCEPTION WHEN serialization_failure THEN
        PERFORM sandbox_store_internal._changed(k, 'record');
    END;
    IF r.key IS NULL THEN
        PERFORM sandbox_store_internal._probe_hidden(k, 'record');
    END IF;
    RETURN r;
END
$$;

-- REPEATABLE READ / SERIALIZABLE: a statement reads with the transaction's
-- snapshot, which may hide a row committed after it.  An INSERT ... ON
-- CONFLICT DO NOTHING that conflicts with a row the snapshot cannot see
-- raises PostgreSQL's 40001; the probe's own row, if it inserts one, is
-- rolled back with the block.  what: 'claim' (leases) or 'record'
-- (instances).
CREATE FUNCTION sandbox_store_internal._probe_hidden(k pg_catalog.text, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    BEGIN
        IF what = 'claim' THEN
            INSERT INTO sandbox_store.leases (key, fence) VALUES (k, 0)
                ON CONFLICT ON CONSTRAINT leases_pkey DO NOTHING;
        ELSE
            INSERT INTO sandbox_store.instances (key, provider, provider_sandbox_id, thread_id, updated_at)
                VALUES (k, '-', '-', '-', now())
                ON CONFLICT ON CONSTRAINT instances_pkey DO NOTHING;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'SBP01';
    EXCEPTION
        WHEN SQLSTATE 'SBP01' THEN
            NULL;
        WHEN serialization_failure THEN
            PERFORM sandbox_store_internal._changed(k, what);
    END;
END
$$;

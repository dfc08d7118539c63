CREATE FUNCTION sandbox_store.sandbox_upsert(
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now(),
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS sandbox_store.instances
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    r sandbox_store.instances;
BEGIN
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 IS NULL OR octet_length($2) NOT BETWEEN 1 AND 1024 OR $3 IS NULL OR octet_length($3) NOT BETWEEN 1 AND 1024
       OR $4 IS NULL OR octet_length($4) NOT BETWEEN 1 AND 1024 OR octet_length($5) NOT BETWEEN 1 AND 1024
       OR octet_length($6) NOT BETWEEN 1 AND 1024 OR $7 IS NULL OR NOT isfinite($7) THEN
        PERFORM sandbox_store_internal._check_record_args($2, $3, $4, $5, $6, $7);
    END IF;
    IF $8 <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg($8);
    END IF;
    IF $8 IS NULL AND NOT sandbox_store_internal._snapshot_isolation() THEN
        -- _upsert without a fence at READ COMMITTED (no lock): here, one
        -- call fewer.
        INSERT INTO sandbox_store.instances AS i
               (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at)
        VALUES ($1, $2, $3, $5, $4, $6, $7)
        ON CONFLICT ON CONSTRAINT instances_pkey DO UPDATE SET
               provider = EXCLUDED.provider,
               provider_sandbox_id = EXCLUDED.provider_sandbox_id,
               latest_snapshot_id = EXCLUDED.latest_snapshot_id,
               thread_id = EXCLUDED.thread_id,
               latest_run_id = EXCLUDED.latest_run_id,
               updated_at = EXCLUDED.updated_at
        RETURNING i.* INTO r;
        RETURN r;
    END IF;
    RETURN sandbox_store_internal._upsert($1, $8, false, $2, $3, $4, $5, $6, $7);
END
$$;

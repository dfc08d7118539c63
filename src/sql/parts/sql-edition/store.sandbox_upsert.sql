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
    IF sandbox_upsert.key IS NULL OR octet_length(sandbox_upsert.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_upsert.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_upsert.key, 'key');
    END IF;
    IF sandbox_upsert.provider IS NULL OR octet_length(sandbox_upsert.provider) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR sandbox_upsert.provider_sandbox_id IS NULL OR octet_length(sandbox_upsert.provider_sandbox_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@
       OR sandbox_upsert.thread_id IS NULL OR octet_length(sandbox_upsert.thread_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR octet_length(sandbox_upsert.latest_snapshot_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@
       OR octet_length(sandbox_upsert.latest_run_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR sandbox_upsert.updated_at IS NULL OR NOT isfinite(sandbox_upsert.updated_at) THEN
        PERFORM sandbox_store_internal._check_record_args(sandbox_upsert.provider, sandbox_upsert.provider_sandbox_id, sandbox_upsert.thread_id, sandbox_upsert.latest_snapshot_id, sandbox_upsert.latest_run_id, sandbox_upsert.updated_at);
    END IF;
    IF sandbox_upsert.fence <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg(sandbox_upsert.fence);
    END IF;
    IF sandbox_upsert.fence IS NULL AND NOT sandbox_store_internal._snapshot_isolation() THEN
        -- _upsert without a fence at READ COMMITTED (no lock): here, one
        -- call fewer.
        INSERT INTO sandbox_store.instances AS i
               (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at)
        VALUES (sandbox_upsert.key, sandbox_upsert.provider, sandbox_upsert.provider_sandbox_id, sandbox_upsert.latest_snapshot_id, sandbox_upsert.thread_id, sandbox_upsert.latest_run_id, sandbox_upsert.updated_at)
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
    RETURN sandbox_store_internal._upsert(sandbox_upsert.key, sandbox_upsert.fence, false, sandbox_upsert.provider, sandbox_upsert.provider_sandbox_id, sandbox_upsert.thread_id, sandbox_upsert.latest_snapshot_id, sandbox_upsert.latest_run_id, sandbox_upsert.updated_at);
END
$$;

CREATE FUNCTION sandbox_store.sandbox_upsert_release(
    key pg_catalog.text,
    fence pg_catalog.int8,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now())
RETURNS sandbox_store.instances
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_upsert_release.key IS NULL OR octet_length(sandbox_upsert_release.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_upsert_release.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_upsert_release.key, 'key');
    END IF;
    IF sandbox_upsert_release.fence IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('fence');
    END IF;
    IF sandbox_upsert_release.fence <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg(sandbox_upsert_release.fence);
    END IF;
    IF sandbox_upsert_release.provider IS NULL OR octet_length(sandbox_upsert_release.provider) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR sandbox_upsert_release.provider_sandbox_id IS NULL OR octet_length(sandbox_upsert_release.provider_sandbox_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@
       OR sandbox_upsert_release.thread_id IS NULL OR octet_length(sandbox_upsert_release.thread_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR octet_length(sandbox_upsert_release.latest_snapshot_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@
       OR octet_length(sandbox_upsert_release.latest_run_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR sandbox_upsert_release.updated_at IS NULL OR NOT isfinite(sandbox_upsert_release.updated_at) THEN
        PERFORM sandbox_store_internal._check_record_args(sandbox_upsert_release.provider, sandbox_upsert_release.provider_sandbox_id, sandbox_upsert_release.thread_id, sandbox_upsert_release.latest_snapshot_id, sandbox_upsert_release.latest_run_id, sandbox_upsert_release.updated_at);
    END IF;
    RETURN sandbox_store_internal._upsert(sandbox_upsert_release.key, sandbox_upsert_release.fence, true, sandbox_upsert_release.provider, sandbox_upsert_release.provider_sandbox_id, sandbox_upsert_release.thread_id, sandbox_upsert_release.latest_snapshot_id, sandbox_upsert_release.latest_run_id, sandbox_upsert_release.updated_at);
END
$$;

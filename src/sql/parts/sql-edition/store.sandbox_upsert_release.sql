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
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF $2 IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('fence');
    END IF;
    IF $2 <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg($2);
    END IF;
    IF $3 IS NULL OR octet_length($3) NOT BETWEEN 1 AND 1024 OR $4 IS NULL OR octet_length($4) NOT BETWEEN 1 AND 1024
       OR $5 IS NULL OR octet_length($5) NOT BETWEEN 1 AND 1024 OR octet_length($6) NOT BETWEEN 1 AND 1024
       OR octet_length($7) NOT BETWEEN 1 AND 1024 OR $8 IS NULL OR NOT isfinite($8) THEN
        PERFORM sandbox_store_internal._check_record_args($3, $4, $5, $6, $7, $8);
    END IF;
    RETURN sandbox_store_internal._upsert($1, $2, true, $3, $4, $5, $6, $7, $8);
END
$$;

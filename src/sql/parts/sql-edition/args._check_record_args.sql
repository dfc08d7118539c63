-- Arguments of the record writers, in declaration order.
CREATE FUNCTION sandbox_store_internal._check_record_args(p_provider pg_catalog.text, p_provider_sandbox_id pg_catalog.text,
                                                 p_thread_id pg_catalog.text, p_latest_snapshot_id pg_catalog.text,
                                                 p_latest_run_id pg_catalog.text, p_updated_at pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF p_provider IS NULL OR octet_length(p_provider) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ THEN
        PERFORM sandbox_store_internal._bad_text(p_provider, 'provider');
    END IF;
    IF p_provider_sandbox_id IS NULL OR octet_length(p_provider_sandbox_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ THEN
        PERFORM sandbox_store_internal._bad_text(p_provider_sandbox_id, 'provider_sandbox_id');
    END IF;
    IF p_thread_id IS NULL OR octet_length(p_thread_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ THEN
        PERFORM sandbox_store_internal._bad_text(p_thread_id, 'thread_id');
    END IF;
    IF octet_length(p_latest_snapshot_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ THEN
        PERFORM sandbox_store_internal._bad_text(p_latest_snapshot_id, 'latest_snapshot_id');
    END IF;
    IF octet_length(p_latest_run_id) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ THEN
        PERFORM sandbox_store_internal._bad_text(p_latest_run_id, 'latest_run_id');
    END IF;
    IF p_updated_at IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = 'updated_at must not be null',
            HINT = 'Omit updated_at to use the current time.';
    END IF;
    IF NOT isfinite(p_updated_at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'updated_at must be a finite timestamp',
            DETAIL = 'Records are swept by age, which an infinite timestamp does not have.';
    END IF;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_lock_holder(key pg_catalog.text)
RETURNS pg_catalog.int4
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    holder pg_catalog.int4;
BEGIN
    IF sandbox_lock_holder.key IS NULL OR octet_length(sandbox_lock_holder.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_lock_holder.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_lock_holder.key, 'key');
    END IF;
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION USING ERRCODE = 'read_only_sql_transaction',
            MESSAGE = format('cannot report the holder of sandbox key "%s" on a standby', sandbox_lock_holder.key),
            DETAIL = 'The key''s lock is held on the primary, whose locks a standby cannot see.',
            HINT = 'Connect to the primary.';
    END IF;
    SELECT COALESCE(k.pid, 0) INTO holder FROM sandbox_store.key_locks k
     WHERE k.lock_id OPERATOR(pg_catalog.=) sandbox_store_internal._lock_id(sandbox_lock_holder.key) AND k.granted
     LIMIT 1;
    RETURN holder;
END
$$;

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
    IF $1 IS NULL OR octet_length($1) NOT BETWEEN 1 AND 1024 OR starts_with($1, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text($1, 'key');
    END IF;
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION USING ERRCODE = 'read_only_sql_transaction',
            MESSAGE = format('cannot report the holder of sandbox key "%s" on a standby', $1),
            DETAIL = 'The key''s lock is held on the primary, whose locks a standby cannot see.',
            HINT = 'Connect to the primary.';
    END IF;
    SELECT COALESCE(k.pid, 0) INTO holder FROM sandbox_store.key_locks k
     WHERE k.lock_id OPERATOR(pg_catalog.=) sandbox_store_internal._lock_id($1) AND k.granted
     LIMIT 1;
    RETURN holder;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_get(key pg_catalog.text)
RETURNS SETOF sandbox_store.instances
LANGUAGE plpgsql STABLE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_get.key IS NULL OR octet_length(sandbox_get.key) NOT BETWEEN 1 AND @MAX_TEXT_BYTES@ OR starts_with(sandbox_get.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_get.key, 'key');
    END IF;
    RETURN QUERY SELECT i.* FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) sandbox_get.key;
END
$$;

-- An id argument (run or thread): a string of 1..max_bytes bytes; 22023
-- otherwise.
CREATE FUNCTION sandbox_store_internal._run_id(v pg_catalog.text, what pg_catalog.text,
                                              max_bytes pg_catalog.int4)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF v IS NULL OR octet_length(v) NOT BETWEEN 1 AND max_bytes THEN
        PERFORM sandbox_store_internal._run_raise('22023', format('invalid %s', what),
            format('A %s is a string of 1 to %s bytes; the value given is %s.', what, max_bytes,
                   CASE WHEN v IS NULL THEN 'missing' ELSE octet_length(v) || ' bytes long' END));
    END IF;
END
$$;

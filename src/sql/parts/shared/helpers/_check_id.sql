-- An id argument (checkpoint, run or thread): a string of 1..max_bytes
-- bytes; otherwise the error state (the checkpoint store's SBC07, the run
-- store's 22023).  (Text in the database is always well-formed Unicode: a
-- JSON string with a lone surrogate escape is refused where the jsonb is
-- read, 22P05, and the client refuses such strings before sending them.)
CREATE FUNCTION sandbox_store_internal._check_id(state pg_catalog.text, v pg_catalog.text,
                                                what pg_catalog.text, max_bytes pg_catalog.int4)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF v IS NULL OR octet_length(v) NOT BETWEEN 1 AND max_bytes THEN
        PERFORM sandbox_store_internal._raise(state, format('invalid %s', what),
            format('A %s is a string of 1 to %s bytes; the value given is %s.', what, max_bytes,
                   CASE WHEN v IS NULL THEN 'missing' ELSE octet_length(v) || ' bytes long' END));
    END IF;
END
$$;

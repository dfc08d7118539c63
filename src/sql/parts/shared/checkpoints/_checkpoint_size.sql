-- A checkpoint larger than the setting sandbox_store.max_checkpoint_bytes
-- (0: no limit) is refused with SBC08 before anything else reads it:
-- working on a checkpoint takes many times its size in memory.  size is its
-- jsonb value's size as pg_column_size gives it.  Each edition reads the
-- setting in _max_checkpoint_bytes() (the C edition's library defines it,
-- for superusers; the SQL edition parses the text anyone may set).
CREATE FUNCTION sandbox_store_internal._checkpoint_size(size pg_catalog.int8, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    max_bytes pg_catalog.int8 := sandbox_store_internal._max_checkpoint_bytes();
BEGIN
    IF max_bytes > 0 AND size > max_bytes THEN
        PERFORM sandbox_store_internal._invalid_entry(
            format('%s is %s bytes; sandbox_store.max_checkpoint_bytes allows at most %s.', what, size, max_bytes));
    END IF;
END
$$;

CREATE FUNCTION sandbox_store.checkpoint_blob_references()
RETURNS TABLE (key pg_catalog.text, refs pg_catalog.int8)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
AS $$
-- (every checkpoint's keys, counted now: no row per blob is written)
SELECT k.key, pg_catalog.count(*) FROM ONLY sandbox_store.checkpoints c, pg_catalog.unnest(c.blob_keys) k(key)
 GROUP BY k.key ORDER BY k.key COLLATE "C"
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_blob_references() IS
'Every blob key a stored checkpoint points to, with the number of checkpoints that point to it, by key as UTF-8 bytes.';

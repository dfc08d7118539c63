-- The reaper's candidates, oldest first: a sequential read (there is no
-- index on updated_at), whatever the caller's enable_seqscan.
CREATE FUNCTION sandbox_store_internal._reap_candidates(cutoff pg_catalog.timestamptz)
RETURNS SETOF pg_catalog.text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = on
AS $$
SELECT i.key FROM ONLY sandbox_store.instances i
 WHERE i.updated_at OPERATOR(pg_catalog.<) cutoff
 ORDER BY i.updated_at, i.key
$$;

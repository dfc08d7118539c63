-- Whether the transaction reads with one snapshot (REPEATABLE READ or
-- SERIALIZABLE).
CREATE FUNCTION sandbox_store_internal._snapshot_isolation()
RETURNS pg_catalog.bool
LANGUAGE sql STABLE
AS $$
SELECT pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.=) ANY ('{repeatable read,serializable}'::pg_catalog.text[])
$$;

-- The fence just drawn must survive a crash before the client sees it.  On
-- PostgreSQL 17 and later the WAL that covers it is flushed now (a claim
-- made in a transaction block, or by a statement that streams its rows, is
-- seen before its commit).  Earlier versions have no SQL function that
-- flushes WAL: there the commit flushes it (synchronous_commit is raised for
-- the transaction if it is off), which covers a claim made by a statement
-- in autocommit (docs/reference.md, "Editions").
CREATE FUNCTION sandbox_store_internal._keep_fence()
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        IF (set_config('synchronous_commit', 'local', true)) IS NULL THEN END IF;
    END IF;
    IF current_setting('server_version_num')::pg_catalog.int4 >= 170000 THEN
        IF (pg_logical_emit_message(false, 'sandbox_store', ''::pg_catalog.text, true)) IS NULL THEN END IF;
    END IF;
END
$$;

-- 25006 on a hot standby: a standby's advisory lock excludes nothing on the
-- primary.
CREATE FUNCTION sandbox_store_internal._refuse_on_standby(k pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'read_only_sql_transaction',
        MESSAGE = format('cannot lock sandbox key "%s" on a standby', k),
        DETAIL = 'A standby''s locks exclude nothing on the primary, where the key is held.',
        HINT = 'Connect to the primary.';
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_available_extensions a WHERE a.name OPERATOR(pg_catalog.=) 'sandbox_store')
       AND NOT EXISTS (SELECT FROM pgtle.available_extensions() a WHERE a.name OPERATOR(pg_catalog.=) 'sandbox_store') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'duplicate_object',
            MESSAGE = 'the C edition of sandbox_store is installed on this server',
            DETAIL = 'The server has the control file of the C edition, so pg_tle cannot register the SQL edition under the same name.',
            HINT = 'Use the C edition: CREATE EXTENSION sandbox_store.';
    END IF;
END
$$;

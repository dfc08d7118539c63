DO $$
DECLARE
    installed pg_catalog.text;
    language pg_catalog.name;
    owner_name pg_catalog.name;
BEGIN
    SELECT e.extversion INTO installed
      FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'sandbox_store';
    IF installed IS NOT NULL THEN
        SELECT l.lanname INTO language
          FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
          JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
         WHERE n.nspname OPERATOR(pg_catalog.=) 'sandbox_store' AND p.proname OPERATOR(pg_catalog.=) 'sandbox_get';
        RAISE EXCEPTION USING
            ERRCODE = 'duplicate_object',
            MESSAGE = 'sandbox_store is already installed in this database',
            DETAIL = pg_catalog.format('Extension sandbox_store %s is installed (%s).', installed,
                                       CASE WHEN language OPERATOR(pg_catalog.=) 'c' THEN 'the C edition'
                                            ELSE 'the SQL edition, through pg_tle' END),
            HINT = 'Keep one edition per database: use ALTER EXTENSION sandbox_store UPDATE to change its version.';
    END IF;
    -- The script makes two schemas: the role needs CREATE on the database.
    IF NOT pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = pg_catalog.format('role %I cannot create schemas in database %I', CURRENT_USER, pg_catalog.current_database()),
            DETAIL = 'The plain script makes the schemas sandbox_store and sandbox_store_internal, which needs the CREATE privilege on the database.',
            HINT = 'Run it as the database owner, or as a role that was granted CREATE on the database (GRANT CREATE ON DATABASE ... TO ...).';
    END IF;
    -- A schema sandbox_store this role cannot create in: most often the
    -- empty one DROP EXTENSION leaves (CREATE EXTENSION made it, owned by
    -- the role that created the extension).
    SELECT r.rolname INTO owner_name
      FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
     WHERE n.nspname OPERATOR(pg_catalog.=) 'sandbox_store';
    IF owner_name IS NOT NULL AND NOT pg_catalog.has_schema_privilege('sandbox_store', 'CREATE') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = pg_catalog.format('schema sandbox_store already exists and role %I cannot create in it', CURRENT_USER),
            DETAIL = pg_catalog.format('It belongs to role %I.  DROP EXTENSION sandbox_store leaves the schema that CREATE EXTENSION made.', owner_name),
            HINT = 'If it is empty, drop it as its owner or a superuser (DROP SCHEMA sandbox_store) and run this script again, as the reference''s "Moving between editions" describes.';
    END IF;
END
$$;

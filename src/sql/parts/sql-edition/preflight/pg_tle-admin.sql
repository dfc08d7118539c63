DO $$
DECLARE
    admin pg_catalog.bool := pg_catalog.to_regrole('pgtle_admin') IS NOT NULL;
BEGIN
    IF pg_catalog.to_regnamespace('pgtle') IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'undefined_object',
            MESSAGE = pg_catalog.format('pg_tle is not installed in database "%s"', pg_catalog.current_database()),
            DETAIL = 'The SQL edition is registered with pg_tle, and pg_tle is created per database: CREATE EXTENSION pg_tle in another database does not count.',
            HINT = 'Run CREATE EXTENSION pg_tle in this database, as a role that may create it (pg_tle must also be in shared_preload_libraries), then run this script again.';
    END IF;
    IF admin THEN
        admin := pg_catalog.pg_has_role('pgtle_admin'::pg_catalog.name, 'USAGE');
    END IF;
    IF NOT admin THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = 'permission denied to register sandbox_store with pg_tle',
            DETAIL = pg_catalog.format('Registering an extension with pg_tle needs the privileges of the role pgtle_admin, and role "%s" does not have them.', CURRENT_USER),
            HINT = pg_catalog.format('Run this script as a role that has pgtle_admin, or have a role that may grant it run: GRANT pgtle_admin TO %I;', CURRENT_USER);
    END IF;
END
$$;

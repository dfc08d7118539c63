DO $$
DECLARE
    current pg_catalog.text;
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'sandbox_store') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'wrong_object_type',
            MESSAGE = 'sandbox_store is installed as an extension in this database',
            HINT = 'Update it with ALTER EXTENSION sandbox_store UPDATE TO ''@VERSION@''.';
    END IF;
    IF pg_catalog.to_regprocedure('sandbox_store.edition()') IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'undefined_object',
            MESSAGE = 'this database has no plain script of sandbox_store',
            HINT = 'Install sandbox_store-@VERSION@.sql instead.';
    END IF;
    SELECT e.version INTO current FROM sandbox_store.edition() e;
    IF current <> '@FROM@' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = pg_catalog.format('this script updates sandbox_store from @FROM@, but the database has %s', current),
            HINT = 'Run the update scripts from the installed version on, one after the other.';
    END IF;
END
$$;

-- The event trigger's function: cheap when no command touched the
-- extension's relations (one catalog probe per command).
CREATE FUNCTION sandbox_store.guard()
RETURNS pg_catalog.event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    changes pg_catalog.text;
BEGIN
    IF NOT EXISTS (
        SELECT FROM pg_catalog.pg_event_trigger_ddl_commands() c
          JOIN pg_catalog.pg_extension e ON e.extname OPERATOR(pg_catalog.=) 'sandbox_store'
         WHERE NOT c.in_extension
           AND c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND EXISTS (SELECT FROM pg_catalog.pg_depend d
                        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                          AND d.refobjid OPERATOR(pg_catalog.=) e.oid
                          AND d.deptype OPERATOR(pg_catalog.=) 'e'
                          AND (d.objid OPERATOR(pg_catalog.=) c.objid
                               OR d.objid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i
                                               WHERE i.inhparent OPERATOR(pg_catalog.=) c.objid))))
    THEN
        RETURN;
    END IF;
    SELECT pg_catalog.string_agg(u.change, '; ') INTO changes
      FROM sandbox_store.unsupported_changes() AS u(change);
    IF changes IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'feature_not_supported',
            MESSAGE = 'this change to the tables of sandbox_store is not supported',
            DETAIL = pg_catalog.format('The change leaves the tables unlike what the extension made: %s.  pg_dump does not carry changes to the extension''s tables: a restore makes them as the extension does, and no record of the dump would load into them.', changes),
            HINT = 'Keep extra per-record data in a table of your own, keyed by the instance key.';
    END IF;
END
$$;

COMMENT ON FUNCTION sandbox_store.guard() IS
'Event trigger function of sandbox_store_guard: refuses an ALTER that leaves the relations of sandbox_store different from what the extension made (see unsupported_changes()).';

CREATE EVENT TRIGGER sandbox_store_guard ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'ALTER INDEX', 'ALTER SEQUENCE', 'ALTER VIEW',
                 'ALTER MATERIALIZED VIEW', 'ALTER FOREIGN TABLE')
    EXECUTE FUNCTION sandbox_store.guard();

COMMENT ON EVENT TRIGGER sandbox_store_guard IS
'Refuses changes to the relations of sandbox_store that pg_dump cannot carry (a restore would lose every record).';

REVOKE ALL ON FUNCTION sandbox_store.guard() FROM PUBLIC;

/* sandbox_store--1.3--1.4.sql: the guard against changes pg_dump cannot carry; the key_locks view */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sandbox_store UPDATE TO '1.4'" to load this file. \quit

-- The guard (1.4).  pg_dump writes only the data and grants of the
-- extension's tables; a restore makes the tables with CREATE EXTENSION, as
-- this script does.  A column an admin added, dropped, renamed or retyped,
-- or a relation renamed or moved, would make the restore's COPY fail and
-- lose every record (a plain psql restore even exits 0).  So such changes
-- are refused: the event trigger sandbox_store_guard checks the relations
-- after every ALTER that touched one of them (or a parent it inherits
-- from), and rolls the change back.  Commands run by the extension's own
-- scripts pass (in_extension), and so does distribute()'s retype of
-- instances.key to text, which the check allows.

-- The key locks of this database, as pg_locks shows them, so that tests,
-- monitoring queries and operators never spell out the lock-tag class
-- (objsubid 21314): who holds (granted) and who waits for each key's lock.
-- lock_id is sandbox_lock_id(key) of the key.  pg_locks shows every
-- database's locks; this view, this database's keys only.
CREATE VIEW sandbox_store.key_locks AS
SELECT l.pid,
       l.granted,
       (l.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
         OPERATOR(pg_catalog.|) l.objid::pg_catalog.int8 AS lock_id,
       l.mode,
       l.virtualtransaction,
       l.waitstart
  FROM pg_catalog.pg_locks l
 WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
   AND l.objsubid OPERATOR(pg_catalog.=) 21314
   AND l.database OPERATOR(pg_catalog.=)
       (SELECT d.oid FROM pg_catalog.pg_database d
         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());
COMMENT ON VIEW sandbox_store.key_locks IS
'Key locks of this database: the backend (pid; NULL for a prepared transaction), whether it holds (granted) or waits, and the key''s lock id (sandbox_lock_id(key)).';
REVOKE ALL ON TABLE sandbox_store.key_locks FROM PUBLIC;

-- What differs in the extension's relations from what its scripts made:
-- one line per difference, none when they are as made.  Members are found
-- through pg_depend, never by name alone.  Constraints, indexes, defaults,
-- statistics targets, storage parameters and comments are not compared.
CREATE FUNCTION sandbox_store.unsupported_changes()
RETURNS SETOF pg_catalog.text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
WITH ext AS (
    SELECT e.oid, e.extnamespace
      FROM pg_catalog.pg_extension e
     WHERE e.extname OPERATOR(pg_catalog.=) 'sandbox_store'
), members AS (
    SELECT c.oid, c.relname, c.relkind, c.relnamespace OPERATOR(pg_catalog.=) ext.extnamespace AS in_schema
      FROM ext
      JOIN pg_catalog.pg_depend d
        ON d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
       AND d.refobjid OPERATOR(pg_catalog.=) ext.oid
       AND d.deptype OPERATOR(pg_catalog.=) 'e'
       AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
     WHERE c.relkind OPERATOR(pg_catalog.<>) 'c'
), relations (relname, relkind) AS (
    VALUES ('instances'::pg_catalog.name, 'r'::pg_catalog."char"),
           ('leases', 'r'),
           ('fence_seq', 'S'),
           ('claims', 'v'),
           ('key_locks', 'v')
), columns (relname, attname, types, not_null, collated) AS (
    VALUES
    ('instances'::pg_catalog.name, 'key'::pg_catalog.name,
     -- distribute() makes it text for citus
     ARRAY['sandbox_store.bounded_text', 'pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('instances', 'provider', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], true, true),
    ('instances', 'provider_sandbox_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], true, true),
    ('instances', 'latest_snapshot_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], false, true),
    ('instances', 'thread_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], true, true),
    ('instances', 'latest_run_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], false, true),
    ('instances', 'updated_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], true, false),
    ('leases', 'key', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('leases', 'fence', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('leases', 'owner_token', ARRAY['pg_catalog.uuid']::pg_catalog.regtype[], false, false),
    ('leases', 'lease_expires_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('claims', 'key', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, true),
    ('claims', 'fence', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], false, false),
    ('claims', 'owner_token', ARRAY['pg_catalog.uuid']::pg_catalog.regtype[], false, false),
    ('claims', 'lease_expires_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('key_locks', 'pid', ARRAY['pg_catalog.int4']::pg_catalog.regtype[], false, false),
    ('key_locks', 'granted', ARRAY['pg_catalog.bool']::pg_catalog.regtype[], false, false),
    ('key_locks', 'lock_id', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], false, false),
    ('key_locks', 'mode', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, false),
    ('key_locks', 'virtualtransaction', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, false),
    ('key_locks', 'waitstart', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false)
), found AS (
    SELECT r.relname, r.relkind, m.oid
      FROM relations r
      JOIN members m ON m.relname OPERATOR(pg_catalog.=) r.relname
                    AND m.relkind OPERATOR(pg_catalog.=) r.relkind
                    AND m.in_schema
), actual AS (
    SELECT f.relname, a.attname, a.atttypid, a.attnotnull, a.attcollation
      FROM found f
      JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) f.oid
     WHERE a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
       AND f.relkind OPERATOR(pg_catalog.<>) 'S'
)
SELECT pg_catalog.format('relation sandbox_store.%s is missing (renamed, moved to another schema, or taken out of the extension)',
                         r.relname)
  FROM relations r
 WHERE NOT EXISTS (SELECT FROM found f WHERE f.relname OPERATOR(pg_catalog.=) r.relname)
UNION ALL
SELECT pg_catalog.format('relation %s of the extension has a name or schema the extension did not give it',
                         m.oid::pg_catalog.regclass)
  FROM members m
 WHERE NOT EXISTS (SELECT FROM found f WHERE f.oid OPERATOR(pg_catalog.=) m.oid)
UNION ALL
SELECT pg_catalog.format('sandbox_store.%s inherits from %s', f.relname, i.inhparent::pg_catalog.regclass)
  FROM found f
  JOIN pg_catalog.pg_inherits i ON i.inhrelid OPERATOR(pg_catalog.=) f.oid
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s was added or renamed', a.attname, a.relname)
  FROM actual a
 WHERE NOT EXISTS (SELECT FROM columns c
                    WHERE c.relname OPERATOR(pg_catalog.=) a.relname
                      AND c.attname OPERATOR(pg_catalog.=) a.attname)
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s was dropped or renamed', c.attname, c.relname)
  FROM columns c
 WHERE EXISTS (SELECT FROM found f WHERE f.relname OPERATOR(pg_catalog.=) c.relname)
   AND NOT EXISTS (SELECT FROM actual a
                    WHERE a.relname OPERATOR(pg_catalog.=) c.relname
                      AND a.attname OPERATOR(pg_catalog.=) c.attname)
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s has type %s instead of %s',
                         c.attname, c.relname, a.atttypid::pg_catalog.regtype, c.types[1])
  FROM columns c
  JOIN actual a ON a.relname OPERATOR(pg_catalog.=) c.relname AND a.attname OPERATOR(pg_catalog.=) c.attname
 WHERE NOT a.atttypid::pg_catalog.regtype OPERATOR(pg_catalog.=) ANY (c.types)
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s has collation %s instead of the default',
                         c.attname, c.relname, a.attcollation::pg_catalog.regcollation)
  FROM columns c
  JOIN actual a ON a.relname OPERATOR(pg_catalog.=) c.relname AND a.attname OPERATOR(pg_catalog.=) c.attname
 WHERE c.collated
   AND a.atttypid::pg_catalog.regtype OPERATOR(pg_catalog.=) ANY (c.types)
   AND a.attcollation OPERATOR(pg_catalog.<>) 'pg_catalog.default'::pg_catalog.regcollation
UNION ALL
SELECT pg_catalog.format(CASE WHEN c.not_null THEN 'column %I of sandbox_store.%s is no longer NOT NULL'
                              ELSE 'column %I of sandbox_store.%s was made NOT NULL' END,
                         c.attname, c.relname)
  FROM columns c
  JOIN actual a ON a.relname OPERATOR(pg_catalog.=) c.relname AND a.attname OPERATOR(pg_catalog.=) c.attname
 WHERE c.relname OPERATOR(pg_catalog.<>) ALL (ARRAY['claims', 'key_locks']::pg_catalog.name[])
   AND a.attnotnull OPERATOR(pg_catalog.<>) c.not_null
$$;

COMMENT ON FUNCTION sandbox_store.unsupported_changes() IS
'What differs in the relations of sandbox_store from what the extension made (columns, their types, collations and NOT NULL, relation names, schema, inheritance), one line per difference; none when they are as made. pg_dump cannot carry such changes.';

-- Tables that already differ from what the extension made (an admin's
-- column, a renamed relation) cannot be guarded: the update is refused
-- (55000) and the database stays at 1.3, its data untouched.
DO $$
DECLARE
    changes pg_catalog.text;
BEGIN
    SELECT pg_catalog.string_agg(u.change, '; ') INTO changes
      FROM sandbox_store.unsupported_changes() AS u(change);
    IF changes IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = 'sandbox_store cannot be updated to 1.4 while its tables differ from what the extension made',
            DETAIL = pg_catalog.format('What differs: %s.  From 1.4 such changes are refused: pg_dump does not carry them, and a restore would lose every record.', changes),
            HINT = 'Stay on 1.3, or move the extra data to a table of your own keyed by the instance key, undo the changes (for an added column: ALTER TABLE sandbox_store.instances DROP COLUMN ...), and update again.';
    END IF;
END
$$;

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

CREATE EVENT TRIGGER sandbox_store_guard ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'ALTER INDEX', 'ALTER SEQUENCE', 'ALTER VIEW',
                 'ALTER MATERIALIZED VIEW', 'ALTER FOREIGN TABLE')
    EXECUTE FUNCTION sandbox_store.guard();

COMMENT ON EVENT TRIGGER sandbox_store_guard IS
'Refuses changes to the relations of sandbox_store that pg_dump cannot carry (a restore would lose every record).';

REVOKE ALL ON FUNCTION sandbox_store.unsupported_changes(), sandbox_store.guard() FROM PUBLIC;

-- Which edition this database has (the SQL edition, 1.4, has the same function).
CREATE FUNCTION sandbox_store.edition(OUT edition pg_catalog.text, OUT version pg_catalog.text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE WHEN l.lanname OPERATOR(pg_catalog.=) 'c' THEN 'c'
            WHEN e.oid IS NOT NULL THEN 'pg_tle'
            ELSE 'plain' END,
       COALESCE(e.extversion, '1.4')
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
  LEFT JOIN pg_catalog.pg_extension e ON e.extname OPERATOR(pg_catalog.=) 'sandbox_store'
 WHERE p.oid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure('sandbox_store.sandbox_get(pg_catalog.text)')
$$;

COMMENT ON FUNCTION sandbox_store.edition() IS
'Which edition of sandbox_store this database has (c, pg_tle or plain) and its version.';

REVOKE ALL ON FUNCTION sandbox_store.edition() FROM PUBLIC;

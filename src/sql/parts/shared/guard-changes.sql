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
    UNION ALL
    -- The plain script's relations are no extension's members: those of
    -- its schema are.
    SELECT c.oid, c.relname, c.relkind, true
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE NOT EXISTS (SELECT FROM ext)
       AND n.nspname OPERATOR(pg_catalog.=) 'sandbox_store'
       AND c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p', 'v', 'm', 'S', 'f']::pg_catalog."char"[])
), relations (relname, relkind) AS (
    VALUES ('instances'::pg_catalog.name, 'r'::pg_catalog."char"),
           ('leases', 'r'),
           ('fence_seq', 'S'),
           ('claims', 'v'),
           ('key_locks', 'v'),
           ('checkpoints', 'r'),
           ('checkpoint_heads', 'r'),
           ('checkpoint_ids', 'r'),
           ('checkpoint_writers', 'r'),
           ('runs', 'r'),
           ('run_logs', 'r'),
           ('run_log_entries', 'r')
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
    ('key_locks', 'waitstart', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('checkpoints', 'id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoints', 'thread_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoints', 'parent_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, true),
    ('checkpoints', 'created_at', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('checkpoints', 'checkpoint', ARRAY['pg_catalog.jsonb']::pg_catalog.regtype[], true, false),
    ('checkpoints', 'blob_keys', ARRAY['pg_catalog.text[]']::pg_catalog.regtype[], true, true),
    ('checkpoint_heads', 'thread_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoint_heads', 'head_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoint_ids', 'id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoint_ids', 'thread_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoint_writers', 'thread_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoint_writers', 'fence', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('checkpoint_writers', 'owner_token', ARRAY['pg_catalog.uuid']::pg_catalog.regtype[], false, false),
    ('checkpoint_writers', 'lease_expires_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('runs', 'run_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('runs', 'thread_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('runs', 'status', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('runs', 'started_at', ARRAY['pg_catalog.float8']::pg_catalog.regtype[], true, false),
    ('runs', 'finished_at', ARRAY['pg_catalog.float8']::pg_catalog.regtype[], false, false),
    ('runs', 'error', ARRAY['pg_catalog.jsonb']::pg_catalog.regtype[], false, false),
    ('runs', 'usage', ARRAY['pg_catalog.jsonb']::pg_catalog.regtype[], false, false),
    ('runs', 'sandbox_key', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, true),
    ('runs', 'detached_since', ARRAY['pg_catalog.float8']::pg_catalog.regtype[], false, false),
    ('runs', 'cancel_requested', ARRAY['pg_catalog.bool']::pg_catalog.regtype[], false, false),
    ('runs', 'driver_epoch', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], false, false),
    ('runs', 'max_driver_epoch', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], false, false),
    ('run_logs', 'run_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('run_logs', 'last_seq', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('run_logs', 'closed_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('run_logs', 'updated_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], true, false),
    ('run_logs', 'watched', ARRAY['pg_catalog.bool']::pg_catalog.regtype[], true, false),
    ('run_log_entries', 'run_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('run_log_entries', 'seq', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('run_log_entries', 'chunk', ARRAY['pg_catalog.jsonb']::pg_catalog.regtype[], true, false)
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

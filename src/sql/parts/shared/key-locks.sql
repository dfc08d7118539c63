-- The key locks of this database, as pg_locks shows them, so that tests,
-- monitoring queries and operators never spell out the lock-tag class
-- (objsubid @KEY_LOCK_CLASS@): who holds (granted) and who waits for each key's lock.
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
   AND l.objsubid OPERATOR(pg_catalog.=) @KEY_LOCK_CLASS@
   AND l.database OPERATOR(pg_catalog.=)
       (SELECT d.oid FROM pg_catalog.pg_database d
         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());
COMMENT ON VIEW sandbox_store.key_locks IS
'Key locks of this database: the backend (pid; NULL for a prepared transaction), whether it holds (granted) or waits, and the key''s lock id (sandbox_lock_id(key)).';

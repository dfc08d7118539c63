--
-- distribute (1.3): sandbox_store.distribute() needs citus.  Without it the
-- call fails with 0A000 and a hint, and changes nothing (the citus suite,
-- test/citus/citus.pl, runs it on a real cluster).
--
\i sql/include/fresh.sql
SELECT sandbox_store.distribute();
SELECT pg_temp.err('SELECT sandbox_store.distribute()') AS without_citus;
SELECT format_type(atttypid, atttypmod) AS key_type
  FROM pg_attribute WHERE attrelid = 'sandbox_store.instances'::regclass AND attname = 'key';
SELECT count(*) AS constraints FROM pg_constraint
 WHERE conrelid = 'sandbox_store.instances'::regclass AND contype = 'c';
-- Nothing for PUBLIC, like every function of the extension.
SELECT proacl IS NOT NULL AS has_acl, has_function_privilege('public', 'sandbox_store.distribute()', 'EXECUTE') AS public_may_execute
  FROM pg_proc WHERE oid = 'sandbox_store.distribute()'::regprocedure;

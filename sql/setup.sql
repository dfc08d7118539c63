--
-- setup: install, and what the extension puts in the catalog.
--
CREATE EXTENSION sandbox_store;

SELECT extversion, extrelocatable, extnamespace::regnamespace AS schema,
       extconfig::regclass[] AS dumped_tables
  FROM pg_extension WHERE extname = 'sandbox_store';

-- The schema is fixed: the extension cannot be moved.
ALTER EXTENSION sandbox_store SET SCHEMA public;

\d sandbox_store.instances
SELECT proname, pg_get_function_arguments(oid) AS arguments, provolatile, proisstrict, proretset
  FROM pg_proc WHERE pronamespace = 'sandbox_store'::regnamespace ORDER BY 1;
SELECT proname, pg_get_function_result(oid) AS result
  FROM pg_proc WHERE pronamespace = 'sandbox_store'::regnamespace ORDER BY 1;

-- Everything the extension made is commented, so \dx+ and \df+ explain it.
SELECT pg_describe_object(classid, objid, objsubid) AS object,
       obj_description(objid, classid::regclass::text) IS NOT NULL AS commented
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sandbox_store')
   AND deptype = 'e'
 ORDER BY 1;

-- Nothing is granted to PUBLIC: not the schema, the table or any function.
SELECT count(*) AS public_grants FROM (
  SELECT aclexplode(nspacl) AS a FROM pg_namespace WHERE nspname = 'sandbox_store'
  UNION ALL
  SELECT aclexplode(relacl) FROM pg_class WHERE relnamespace = 'sandbox_store'::regnamespace
  UNION ALL
  SELECT aclexplode(proacl) FROM pg_proc WHERE pronamespace = 'sandbox_store'::regnamespace
) s WHERE (a).grantee = 0;
SELECT proname, proacl IS NOT NULL AS has_acl, prosecdef
  FROM pg_proc WHERE pronamespace = 'sandbox_store'::regnamespace ORDER BY 1;


--
-- setup: install, and what the extension puts in the catalog.
--
\i sql/include/fresh.sql

SELECT extversion, extrelocatable, extnamespace::regnamespace AS schema,
       extconfig::regclass[] AS dumped_tables
  FROM pg_extension WHERE extname = 'sandbox_store';

-- The schema is fixed: the extension cannot be moved.
ALTER EXTENSION sandbox_store SET SCHEMA public;

-- 1.2: the text columns are of the domain bounded_text (1..1024 bytes), and
-- neither column a resume stamps (latest_run_id, updated_at) is indexed, so
-- with the free space fillfactor leaves, stamps are HOT updates.
\d sandbox_store.instances
\dD sandbox_store.*
SELECT relname, reloptions FROM pg_class
 WHERE relnamespace = 'sandbox_store'::regnamespace AND relkind = 'r' ORDER BY 1;
-- 1.1: claims and fences.  leases keeps one row per key ever claimed (its
-- newest fence); claims shows the live ones; fence_seq hands out fences.
\d sandbox_store.leases
\d sandbox_store.claims
-- (Its definition is not printed: PostgreSQL 16 and later print view
-- definitions without table-qualified columns.  The leases test checks what
-- it shows.)
\d sandbox_store.fence_seq
SELECT proname, pg_get_function_arguments(oid) AS arguments, provolatile, proisstrict, proretset
  FROM pg_proc WHERE pronamespace = 'sandbox_store'::regnamespace ORDER BY 1, 2;
-- 1.2: sandbox_ensure returns SETOF this row type (the columns of its
-- former RETURNS TABLE).
\d sandbox_store.ensure_result
SELECT proname, pg_get_function_result(oid) AS result
  FROM pg_proc WHERE pronamespace = 'sandbox_store'::regnamespace ORDER BY 1, pronargs;

-- Everything the extension made is commented, so \dx+ and \df+ explain it.
SELECT pg_describe_object(classid, objid, objsubid) AS object,
       obj_description(objid, classid::regclass::text) IS NOT NULL AS commented
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sandbox_store')
   AND deptype = 'e'
   -- PostgreSQL 17 and later also record the row types of the tables and
   -- the view, and the array types, as members (before, they hung off their
   -- table or type): left out, so the listing is the same on every version.
   AND NOT (classid = 'pg_type'::regclass AND objid IN (
         SELECT t.oid FROM pg_type t LEFT JOIN pg_class c ON c.oid = t.typrelid
          WHERE t.typcategory = 'A' OR c.relkind IN ('r', 'v')))
   -- Each edition's internal helpers (names starting with _) are explained
   -- in the scripts, not in the catalog.
   AND NOT (classid = 'pg_proc'::regclass
            AND (SELECT proname FROM pg_proc WHERE oid = objid) LIKE '\_%')
 ORDER BY 1;

-- The comments themselves (unaligned: they are long).
\a
SELECT pg_describe_object(classid, objid, objsubid) AS object,
       obj_description(objid, classid::regclass::text) AS comment
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sandbox_store')
   AND deptype = 'e'
   -- PostgreSQL 17 and later also record the row types of the tables and
   -- the view, and the array types, as members (before, they hung off their
   -- table or type): left out, so the listing is the same on every version.
   AND NOT (classid = 'pg_type'::regclass AND objid IN (
         SELECT t.oid FROM pg_type t LEFT JOIN pg_class c ON c.oid = t.typrelid
          WHERE t.typcategory = 'A' OR c.relkind IN ('r', 'v')))
   -- Each edition's internal helpers (names starting with _) are explained
   -- in the scripts, not in the catalog.
   AND NOT (classid = 'pg_proc'::regclass
            AND (SELECT proname FROM pg_proc WHERE oid = objid) LIKE '\_%')
 ORDER BY 1;
\a

-- Nothing is granted to PUBLIC: not the schemas, the tables, the view, the
-- sequence or any function.
SELECT count(*) AS public_grants FROM (
  SELECT aclexplode(nspacl) AS a FROM pg_namespace
   WHERE nspname IN ('sandbox_store', 'sandbox_store_internal')
  UNION ALL
  SELECT aclexplode(relacl) FROM pg_class WHERE relnamespace = 'sandbox_store'::regnamespace
  UNION ALL
  SELECT aclexplode(proacl) FROM pg_proc
   WHERE pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace)
) s WHERE (a).grantee = 0;
-- The internal helpers: in a schema of their own, which only its owner, the
-- owner of the extension's tables, may use; none is SECURITY DEFINER, and
-- none has a grant but its owner's.
SELECT n.nspowner = (SELECT relowner FROM pg_class WHERE oid = 'sandbox_store.instances'::regclass)
         AS owned_by_table_owner,
       (SELECT count(*) FROM aclexplode(n.nspacl) a WHERE a.grantee <> n.nspowner) AS other_grants,
       (SELECT count(*) FROM pg_proc p WHERE p.pronamespace = n.oid) > 0 AS has_functions,
       (SELECT count(*) FROM pg_proc p WHERE p.pronamespace = n.oid AND p.prosecdef) AS security_definer,
       (SELECT count(*) FROM pg_proc p CROSS JOIN LATERAL aclexplode(p.proacl) a
         WHERE p.pronamespace = n.oid AND a.grantee <> p.proowner) AS function_grants,
       (SELECT count(*) FROM pg_proc p WHERE p.pronamespace = n.oid AND p.proname !~ '^_')
         AS without_underscore
  FROM pg_namespace n WHERE n.nspname = 'sandbox_store_internal';
SELECT proname, proacl IS NOT NULL AS has_acl, prosecdef
  FROM pg_proc WHERE pronamespace = 'sandbox_store'::regnamespace ORDER BY 1, pronargs;
-- Every relation: no grant at all but the owner's (the owner's own entry is
-- shown as "owner"), and no SECURITY DEFINER function above.  (MAINTAIN,
-- which PostgreSQL 17 added to an owner's privileges on tables and views, is
-- left out so the listing is the same on every version.)
SELECT c.relname, c.relkind,
       array_agg(CASE WHEN a.grantee = c.relowner THEN 'owner' ELSE a.grantee::regrole::text END
                 || ':' || a.privilege_type ORDER BY a.privilege_type) AS privileges
  FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
 WHERE c.relnamespace = 'sandbox_store'::regnamespace AND a.privilege_type <> 'MAINTAIN'
 GROUP BY c.relname, c.relkind ORDER BY 1;
SELECT count(*) AS non_owner_grants FROM (
  SELECT aclexplode(relacl) AS a, relowner AS owner FROM pg_class
   WHERE relnamespace = 'sandbox_store'::regnamespace
  UNION ALL
  SELECT aclexplode(proacl), proowner FROM pg_proc
   WHERE pronamespace = 'sandbox_store'::regnamespace
) s WHERE (a).grantee <> owner;

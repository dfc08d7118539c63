--
-- upgrade: a live 1.0 database with records and the README's grants, taken
-- to the default version (1.0 -> 1.1 -> ... -> 1.7.2 -> 1.8.0 -> 1.9.0) by ALTER
-- EXTENSION ... UPDATE (with the new library installed all along), compared
-- with a fresh CREATE EXTENSION (the default version's single install script).  Then a 1.1
-- database with a live claim, taken to 1.2; statements prepared at 1.2 that
-- work on at 1.3; and a 1.3 database whose admin added a column, which 1.4
-- refuses to update until the column is gone.
--
\i sql/include/fresh.sql
\pset null '<null>'
SET timezone = 'UTC';

-- err(sql): run sql; 'ok', or the SQLSTATE and message it raised.
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT oid::regprocedure AS function FROM pg_proc
 WHERE pronamespace = 'sandbox_store'::regnamespace ORDER BY oid::regprocedure::text;

CREATE ROLE regress_sb_up_app;
CREATE ROLE regress_sb_up_nobody;
-- The two lines the README tells an admin to run:
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_up_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_up_app;

--
-- The app writes records through the 1.0 functions, served by the new
-- library: every one works as in 1.0, and ensure returns its 8 columns.
--
SET ROLE regress_sb_up_app;
BEGIN;
SELECT * FROM sandbox_store.sandbox_ensure('up/1', 'run-1');
SELECT * FROM sandbox_store.sandbox_upsert('up/1', 'prov-x', 'sbx-1', 'thread-up',
                                           latest_snapshot_id => 'snap-1', latest_run_id => 'run-1',
                                           updated_at => '2026-01-02 03:04:05.678901+00');
COMMIT;
BEGIN;
SELECT action, key, provider_sandbox_id, latest_run_id, updated_at = now() AS stamped_now
  FROM sandbox_store.sandbox_ensure('up/1', 'run-2');
COMMIT;
BEGIN;
SELECT action, key, provider, provider_sandbox_id, latest_run_id
  FROM sandbox_store.sandbox_ensure('up/1', 'run-3', max_age => '0', provider => 'prov-y',
                                    wait => '1 second');
ROLLBACK;
SELECT key FROM sandbox_store.sandbox_upsert('up/minimal', 'p', 's', 'thread-up');
SELECT key FROM sandbox_store.sandbox_upsert('up/old', 'prov-x', 'sbx-old', 'thread-up',
                                             updated_at => '2000-01-01 00:00:00+00');
SELECT key FROM sandbox_store.sandbox_upsert(E'up/odd \'"\\;\n\t ключ 🔑', 'p', E's\\1', 't');
SELECT octet_length(key) FROM sandbox_store.sandbox_upsert(repeat('é', 512), repeat('p', 1024),
  repeat('s', 1024), repeat('t', 1024), repeat('n', 1024), repeat('r', 1024),
  '1999-12-31 23:59:59.999999+00');
SELECT key FROM sandbox_store.sandbox_upsert('up/gone', 'p', 's', 'thread-up');
SELECT sandbox_store.sandbox_delete('up/gone'), sandbox_store.sandbox_delete('up/gone');
SELECT key FROM sandbox_store.sandbox_get('up/1');
SELECT key FROM sandbox_store.sandbox_list('thread-up') ORDER BY key;
BEGIN;
SELECT sandbox_store.sandbox_lock('up/1', wait => '0'), sandbox_store.sandbox_try_lock('up/2');
COMMIT;
SELECT sandbox_store.sandbox_lock_id('up/1') = sandbox_store.sandbox_lock_id('up/1') AS lock_id;
-- 1.0 has no lease mode and none of the new functions.  (Terse: the hint
-- PostgreSQL adds to "does not exist" changed in 19.)
\set VERBOSITY terse
SELECT * FROM sandbox_store.sandbox_ensure('up/1', 'run-4', lease => '1 minute');
SELECT sandbox_store.sandbox_lock_holder('up/1');
\set VERBOSITY default
RESET ROLE;
SELECT to_regclass('sandbox_store.leases') AS leases, to_regclass('sandbox_store.claims') AS claims;

-- A copy of every record, to compare with after the update.
CREATE TEMP TABLE before_update AS SELECT * FROM sandbox_store.instances;
SELECT count(*) AS records FROM before_update;

--
-- The update.
--
ALTER EXTENSION sandbox_store UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';

-- Every record survived, byte for byte: no row lost, added or changed, and
-- each column's binary representation is the same.
SELECT count(*) AS records FROM sandbox_store.instances;
SELECT count(*) AS differing_rows FROM (
  (TABLE before_update EXCEPT ALL TABLE sandbox_store.instances)
  UNION ALL
  (TABLE sandbox_store.instances EXCEPT ALL TABLE before_update)) d;
SELECT count(*) AS differing_bytes
  FROM before_update b FULL JOIN sandbox_store.instances i ON textsend(b.key) = textsend(i.key)
 WHERE (textsend(b.provider), textsend(b.provider_sandbox_id), textsend(b.latest_snapshot_id),
        textsend(b.thread_id), textsend(b.latest_run_id), timestamptz_send(b.updated_at))
       IS DISTINCT FROM
       (textsend(i.provider), textsend(i.provider_sandbox_id), textsend(i.latest_snapshot_id),
        textsend(i.thread_id), textsend(i.latest_run_id), timestamptz_send(i.updated_at));
SELECT key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id,
       updated_at = '2000-01-01 00:00:00+00' AS in_2000
  FROM sandbox_store.instances WHERE key IN ('up/minimal', 'up/old') ORDER BY key;

-- The functions of 1.1: the new ones, and the new signatures of ensure,
-- upsert and delete in place of the old ones.
SELECT oid::regprocedure AS function FROM pg_proc
 WHERE pronamespace = 'sandbox_store'::regnamespace ORDER BY oid::regprocedure::text;
SELECT to_regprocedure('sandbox_store.sandbox_ensure(text,text,interval,text,interval)') AS old_ensure,
       to_regprocedure('sandbox_store.sandbox_upsert(text,text,text,text,text,text,timestamptz)')
         AS old_upsert,
       to_regprocedure('sandbox_store.sandbox_delete(text)') AS old_delete;
SELECT extconfig::regclass[] AS dumped FROM pg_extension WHERE extname = 'sandbox_store';

--
-- Privileges carried over: the app role can execute every function, and has
-- nothing on the tables, the sequence or the claims view (reading owner
-- tokens stays a separate grant); the role without grants and PUBLIC have
-- nothing.
--
SELECT p.oid::regprocedure AS function,
       has_function_privilege('regress_sb_up_app', p.oid, 'EXECUTE') AS app,
       has_function_privilege('regress_sb_up_nobody', p.oid, 'EXECUTE') AS nobody
  FROM pg_proc p WHERE p.pronamespace = 'sandbox_store'::regnamespace
 ORDER BY p.oid::regprocedure::text;
SELECT c.relname, c.relkind, r.rolname,
       has_table_privilege(r.rolname, c.oid, 'SELECT') AS sel,
       has_table_privilege(r.rolname, c.oid, 'INSERT') AS ins,
       has_table_privilege(r.rolname, c.oid, 'UPDATE') AS upd,
       has_table_privilege(r.rolname, c.oid, 'DELETE') AS del,
       has_table_privilege(r.rolname, c.oid, 'TRUNCATE') AS trunc
  FROM pg_class c CROSS JOIN (VALUES ('regress_sb_up_app'), ('regress_sb_up_nobody')) r(rolname)
 WHERE c.relnamespace = 'sandbox_store'::regnamespace AND c.relkind IN ('r', 'v')
 ORDER BY 1, 3;
SELECT r.rolname,
       has_sequence_privilege(r.rolname, 'sandbox_store.fence_seq', 'USAGE') AS usage,
       has_sequence_privilege(r.rolname, 'sandbox_store.fence_seq', 'SELECT') AS sel,
       has_sequence_privilege(r.rolname, 'sandbox_store.fence_seq', 'UPDATE') AS upd
  FROM (VALUES ('regress_sb_up_app'), ('regress_sb_up_nobody')) r(rolname) ORDER BY 1;
SELECT count(*) AS public_grants FROM (
  SELECT aclexplode(relacl) AS a FROM pg_class WHERE relnamespace = 'sandbox_store'::regnamespace
  UNION ALL
  SELECT aclexplode(proacl) FROM pg_proc WHERE pronamespace = 'sandbox_store'::regnamespace
) s WHERE (a).grantee = 0;

--
-- Lease mode works at once, for the app role, on the upgraded records.
--
SET ROLE regress_sb_up_app;
SELECT action, provider_sandbox_id, latest_run_id, fence AS up_fence, owner_token AS up_token
  FROM sandbox_store.sandbox_ensure('up/1', 'run-5', lease => '1 minute') \gset
SELECT :'action' AS action, :'provider_sandbox_id' AS provider_sandbox_id,
       :'latest_run_id' AS latest_run_id;
SELECT pg_temp.err($$SELECT * FROM sandbox_store.claims$$) AS app_reads_claims;
RESET ROLE;
SELECT key, fence = :up_fence AS same_fence, owner_token = :'up_token' AS same_token
  FROM sandbox_store.claims;
SET ROLE regress_sb_up_app;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('up/1', 'run-6', wait => '0')$$);
SELECT sandbox_store.sandbox_renew('up/1', :'up_token', '2 minutes') > now() AS renewed;
SELECT key, provider_sandbox_id
  FROM sandbox_store.sandbox_upsert('up/1', 'prov-x', 'sbx-1b', 'thread-up', fence => :up_fence);
SELECT sandbox_store.sandbox_lock_holder('up/1') AS lock_holder;
SELECT left(key, 8) AS key, updated_at FROM sandbox_store.sandbox_reap('1 day');
SELECT sandbox_store.sandbox_release('up/1', :'up_token') AS released;
SELECT action, fence > :up_fence AS higher_fence, owner_token AS up_token2
  FROM sandbox_store.sandbox_ensure('up/1', 'run-7', lease => '1 minute') \gset
SELECT :'action' AS action, :'higher_fence' AS higher_fence;
SELECT sandbox_store.sandbox_release('up/1', :'up_token2') AS released;
-- ... and so does lock mode, with the claim columns NULL.
BEGIN;
SELECT action, provider_sandbox_id, fence, owner_token, lease_expires_at
  FROM sandbox_store.sandbox_ensure('up/1', 'run-8');
COMMIT;
RESET ROLE;

--
-- The upgraded catalog is the catalog of a fresh CREATE EXTENSION.  Every
-- extension member is described (kind and name; functions with arguments,
-- defaults, result, language, volatility, strictness, parallel safety, cost,
-- rows, security, symbol and library; relations with their columns,
-- constraints, indexes, view definition, sequence parameters; comments of
-- members and columns; dependencies; config-dump registration), then the
-- extension is dropped and created fresh and described again.
--
CREATE FUNCTION pg_temp.sb_catalog() RETURNS SETOF text LANGUAGE sql AS $$
  WITH ext AS (
    SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store'),
  members AS (
    SELECT d.classid, d.objid FROM pg_catalog.pg_depend d, ext
     WHERE d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.refobjid = ext.oid
       AND d.deptype = 'e'),
  rels AS (
    SELECT c.* FROM pg_catalog.pg_class c JOIN members m
        ON m.classid = 'pg_catalog.pg_class'::regclass AND m.objid = c.oid)
  SELECT 'extension: version ' || extversion || ', relocatable ' || extrelocatable
         || ', schema ' || extnamespace::regnamespace
    FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store'
  UNION ALL
  SELECT 'member: ' || pg_catalog.pg_describe_object(classid, objid, 0) FROM members
  UNION ALL
  SELECT 'config_dump: ' || u.rel::regclass || ' where ' || pg_catalog.quote_literal(u.cond)
    FROM pg_catalog.pg_extension e, unnest(e.extconfig, e.extcondition) u(rel, cond)
   WHERE e.extname = 'sandbox_store'
  UNION ALL
  SELECT 'comment: ' || pg_catalog.pg_describe_object(d.classoid, d.objoid, d.objsubid)
         || ' = ' || d.description
    FROM pg_catalog.pg_description d JOIN members m
      ON m.classid = d.classoid AND m.objid = d.objoid
  UNION ALL
  SELECT pg_catalog.format(
           'function: %s(%s) returns %s; language %s, volatile %s, strict %s, retset %s, '
           'parallel %s, leakproof %s, secdef %s, cost %s, rows %s, kind %s, '
           'symbol %s, library %s, config %s, owner_is_extension_owner %s',
           p.oid::regproc, pg_catalog.pg_get_function_arguments(p.oid),
           pg_catalog.pg_get_function_result(p.oid), l.lanname, p.provolatile, p.proisstrict,
           p.proretset, p.proparallel, p.proleakproof, p.prosecdef, p.procost, p.prorows,
           p.prokind, p.prosrc, p.probin, p.proconfig,
           p.proowner = (SELECT extowner FROM pg_catalog.pg_extension
                          WHERE extname = 'sandbox_store'))
    FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
    JOIN members m ON m.classid = 'pg_catalog.pg_proc'::regclass AND m.objid = p.oid
  UNION ALL
  SELECT pg_catalog.format('relation: %s kind %s, persistence %s, options %s, '
                           'rowsecurity %s, owner_is_extension_owner %s',
           c.oid::regclass, c.relkind, c.relpersistence, c.reloptions, c.relrowsecurity,
           c.relowner = (SELECT extowner FROM pg_catalog.pg_extension
                          WHERE extname = 'sandbox_store'))
    FROM rels c
  UNION ALL
  SELECT pg_catalog.format('column: %s.%s #%s %s, not null %s, default %s, collation %s, '
                           'identity %s, generated %s',
           a.attrelid::regclass, a.attname, a.attnum,
           pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
           pg_catalog.pg_get_expr(ad.adbin, ad.adrelid), a.attcollation::regcollation,
           a.attidentity, a.attgenerated)
    FROM pg_catalog.pg_attribute a JOIN rels c ON c.oid = a.attrelid
    LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
   WHERE a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT pg_catalog.format('constraint: %s on %s: %s, deferrable %s, validated %s',
           co.conname, co.conrelid::regclass, pg_catalog.pg_get_constraintdef(co.oid),
           co.condeferrable, co.convalidated)
    FROM pg_catalog.pg_constraint co JOIN rels c ON c.oid = co.conrelid
  UNION ALL
  SELECT pg_catalog.format('type: %s #%s %s %s', t.oid::regtype, a.attnum, a.attname,
           pg_catalog.format_type(a.atttypid, a.atttypmod))
    FROM pg_catalog.pg_type t JOIN members m
      ON m.classid = 'pg_catalog.pg_type'::regclass AND m.objid = t.oid
    JOIN pg_catalog.pg_attribute a ON a.attrelid = t.typrelid
   WHERE a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT pg_catalog.format('type: %s domain over %s', t.oid::regtype, t.typbasetype::regtype)
    FROM pg_catalog.pg_type t JOIN members m
      ON m.classid = 'pg_catalog.pg_type'::regclass AND m.objid = t.oid
   WHERE t.typtype = 'd'
  UNION ALL
  SELECT pg_catalog.format('constraint: %s on type %s: %s', co.conname,
           co.contypid::regtype, pg_catalog.pg_get_constraintdef(co.oid))
    FROM pg_catalog.pg_constraint co JOIN members m
      ON m.classid = 'pg_catalog.pg_type'::regclass AND m.objid = co.contypid
  UNION ALL
  SELECT pg_catalog.format('index: %s', pg_catalog.pg_get_indexdef(i.indexrelid))
    FROM pg_catalog.pg_index i JOIN rels c ON c.oid = i.indrelid
  UNION ALL
  SELECT pg_catalog.format('trigger: %s on %s', t.tgname, t.tgrelid::regclass)
    FROM pg_catalog.pg_trigger t JOIN rels c ON c.oid = t.tgrelid
  UNION ALL
  SELECT pg_catalog.format('view: %s as %s', c.oid::regclass, pg_catalog.pg_get_viewdef(c.oid))
    FROM rels c WHERE c.relkind = 'v'
  UNION ALL
  SELECT pg_catalog.format('sequence: %s as %s start %s increment %s min %s max %s cache %s cycle %s',
           s.seqrelid::regclass, s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmin,
           s.seqmax, s.seqcache, s.seqcycle)
    FROM pg_catalog.pg_sequence s JOIN rels c ON c.oid = s.seqrelid
  UNION ALL
  SELECT pg_catalog.format('dependency: %s -> %s (%s)',
           pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid),
           pg_catalog.pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid), d.deptype)
    FROM pg_catalog.pg_depend d JOIN members m ON m.classid = d.classid AND m.objid = d.objid
   WHERE d.deptype <> 'e'
  UNION ALL
  SELECT pg_catalog.format('event trigger: %s on %s when tag in %s executes %s, enabled %s',
           e.evtname, e.evtevent, e.evttags, e.evtfoid::regprocedure, e.evtenabled)
    FROM pg_catalog.pg_event_trigger e JOIN members m
      ON m.classid = 'pg_catalog.pg_event_trigger'::regclass AND m.objid = e.oid
$$;

-- Privileges of the members, as (object, grantee, privilege, grantable,
-- grantor), the owner shown as "owner": current ones (acl) and the ones
-- pg_dump compares them with (initprivs, from pg_init_privs).
CREATE FUNCTION pg_temp.sb_privileges()
RETURNS TABLE (source text, object text, grantee text, privilege text, grantable boolean,
               grantor text) LANGUAGE sql AS $$
  WITH ext AS (
    SELECT oid, extowner FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store'),
  members AS (
    SELECT d.classid, d.objid FROM pg_catalog.pg_depend d, ext
     WHERE d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.refobjid = ext.oid
       AND d.deptype = 'e'),
  acls AS (
    SELECT 'acl' AS source, m.classid, m.objid,
           coalesce(p.proacl, pg_catalog.acldefault('f'::"char", p.proowner)) AS acl
      FROM members m JOIN pg_catalog.pg_proc p
        ON m.classid = 'pg_catalog.pg_proc'::regclass AND p.oid = m.objid
    UNION ALL
    SELECT 'acl', m.classid, m.objid,
           coalesce(c.relacl, pg_catalog.acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char",
                                                    c.relowner))
      FROM members m JOIN pg_catalog.pg_class c
        ON m.classid = 'pg_catalog.pg_class'::regclass AND c.oid = m.objid
    UNION ALL
    SELECT 'initprivs', ip.classoid, ip.objoid, ip.initprivs
      FROM pg_catalog.pg_init_privs ip JOIN members m
        ON m.classid = ip.classoid AND m.objid = ip.objoid AND ip.objsubid = 0)
  SELECT a.source, pg_catalog.pg_describe_object(a.classid, a.objid, 0),
         CASE WHEN x.grantee = 0 THEN 'PUBLIC' WHEN x.grantee = ext.extowner THEN 'owner'
              ELSE x.grantee::regrole::text END,
         x.privilege_type, x.is_grantable,
         CASE WHEN x.grantor = ext.extowner THEN 'owner' ELSE x.grantor::regrole::text END
    FROM acls a CROSS JOIN LATERAL pg_catalog.aclexplode(a.acl) x CROSS JOIN ext
$$;

CREATE TEMP TABLE upgraded_catalog AS SELECT * FROM pg_temp.sb_catalog() AS item;
CREATE TEMP TABLE upgraded_privileges AS SELECT * FROM pg_temp.sb_privileges();

DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store;
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';

CREATE TEMP TABLE fresh_catalog AS SELECT * FROM pg_temp.sb_catalog() AS item;
CREATE TEMP TABLE fresh_privileges AS SELECT * FROM pg_temp.sb_privileges();

-- What was compared (lines per kind), the same on both sides ...  The
-- number of lines of some kinds depends on the PostgreSQL version and is not
-- printed: 17 and later record row and array types as members (more member,
-- type and dependency lines), 18 keeps NOT NULL constraints in pg_constraint
-- (more constraint lines).  Every line is compared all the same.
SELECT kind, u.n = f.n AS same,
       CASE WHEN kind IN ('constraint', 'dependency', 'member', 'type') THEN NULL ELSE f.n END AS fresh
  FROM (SELECT split_part(item, ':', 1) AS kind, count(*) AS n FROM upgraded_catalog GROUP BY 1) u
  FULL JOIN (SELECT split_part(item, ':', 1) AS kind, count(*) AS n FROM fresh_catalog GROUP BY 1) f
 USING (kind) ORDER BY kind;
-- ... and no line differs, either way.
(TABLE upgraded_catalog EXCEPT ALL TABLE fresh_catalog) ORDER BY 1;
(TABLE fresh_catalog EXCEPT ALL TABLE upgraded_catalog) ORDER BY 1;

-- Privileges: the upgraded extension has exactly the fresh one's, plus the
-- grants carried over to the app role (every function, and SELECT on the
-- claims view); nothing of the fresh one is missing.
SELECT object, grantee, privilege, grantable, grantor
  FROM (SELECT * FROM upgraded_privileges WHERE source = 'acl'
        EXCEPT ALL
        SELECT * FROM fresh_privileges WHERE source = 'acl') d
 ORDER BY object, grantee, privilege;
SELECT * FROM fresh_privileges WHERE source = 'acl'
EXCEPT ALL
SELECT * FROM upgraded_privileges WHERE source = 'acl';
-- The initial privileges pg_dump compares with are those of a fresh install:
-- the carried-over grants are the admin's, not the extension's, so pg_dump
-- must dump them (and a restore, which runs a fresh CREATE EXTENSION, must
-- get them back).
-- (Counted without MAINTAIN, which PostgreSQL 17 and later add to the
-- owner's privileges on tables and views.)
SELECT count(*) AS initprivs FROM fresh_privileges
 WHERE source = 'initprivs' AND privilege <> 'MAINTAIN';
(SELECT * FROM upgraded_privileges WHERE source = 'initprivs'
 EXCEPT ALL
 SELECT * FROM fresh_privileges WHERE source = 'initprivs') ORDER BY 2, 3, 4;
(SELECT * FROM fresh_privileges WHERE source = 'initprivs'
 EXCEPT ALL
 SELECT * FROM upgraded_privileges WHERE source = 'initprivs') ORDER BY 2, 3, 4;

-- The fresh extension has no grants: nothing left for the roles.
SELECT count(*) AS app_grants FROM fresh_privileges WHERE grantee LIKE 'regress_sb_up_%';
REVOKE ALL ON SCHEMA sandbox_store FROM regress_sb_up_app;
DROP ROLE regress_sb_up_app, regress_sb_up_nobody;

--
-- 1.1 -> 1.2 under a live claim.  The new library serves 1.1 (the claim
-- holds the key against lock mode); the update rewrites the table, keeps
-- every record and the claim, and from then on the length rule is the
-- domain's, for superusers too.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.1';
SELECT key FROM sandbox_store.sandbox_upsert('v11/1', 'p', 'sbx-1', 'thread-v11');
SELECT key FROM sandbox_store.sandbox_upsert('v11/2', 'p', 'sbx-2', 'thread-v11',
                                             latest_snapshot_id => 'snap', latest_run_id => 'run');
SELECT action, fence AS v11_fence, owner_token AS v11_token
  FROM sandbox_store.sandbox_ensure('v11/1', 'run-1', lease => '1 hour') \gset
SELECT :'action' AS action;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('v11/1', 'run-2', wait => '0')$$) AS claimed_v11;
SELECT action FROM sandbox_store.sandbox_ensure('v11/2', 'run-2');
CREATE TEMP TABLE before_v12 AS SELECT * FROM sandbox_store.instances;
ALTER EXTENSION sandbox_store UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT count(*) AS records, count(*) FILTER (WHERE (i.*)::text IN (SELECT (b.*)::text FROM before_v12 b))
         AS unchanged
  FROM sandbox_store.instances i;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('v11/1', 'run-3', wait => '0')$$) AS claimed_v12;
SELECT key, provider_sandbox_id
  FROM sandbox_store.sandbox_upsert('v11/1', 'p', 'sbx-1b', 'thread-v11', fence => :v11_fence);
SELECT sandbox_store.sandbox_release('v11/1', :'v11_token') AS released;
SELECT action, latest_run_id FROM sandbox_store.sandbox_ensure('v11/1', 'run-4');
SELECT pg_temp.err($$INSERT INTO sandbox_store.instances VALUES ('', 'p', 's', NULL, 't', NULL, now())$$)
         AS superuser_empty_key;
SELECT pg_temp.err($$UPDATE sandbox_store.instances SET latest_run_id = repeat('r', 1025)$$)
         AS superuser_long_run_id;

--
-- 1.2 -> 1.3 (one C symbol per SQL signature) changes no result type, so
-- statements prepared before the update work on after it, in the session
-- that updates and in any other (their plans are made again).  The
-- functions keep their OIDs and grants.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.2';
SELECT key FROM sandbox_store.sandbox_upsert('v12/1', 'p', 'sbx-1', 'thread-v12');
CREATE TEMP TABLE v12_functions AS
  SELECT oid, oid::regprocedure::text AS name, proacl FROM pg_proc
   WHERE pronamespace = 'sandbox_store'::regnamespace;
PREPARE v12_get AS SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('v12/1');
PREPARE v12_list AS SELECT key, thread_id FROM sandbox_store.sandbox_list('thread-v12') ORDER BY key;
PREPARE v12_upsert AS SELECT key, provider_sandbox_id
  FROM sandbox_store.sandbox_upsert('v12/2', 'p', 'sbx-2', 'thread-v12', fence => NULL);
PREPARE v12_ensure AS SELECT action, key, fence IS NOT NULL AS claimed
  FROM sandbox_store.sandbox_ensure('v12/1', 'run-2', lease => '1 minute');
PREPARE v12_delete AS SELECT sandbox_store.sandbox_delete('v12/2', NULL);
EXECUTE v12_get;
ALTER EXTENSION sandbox_store UPDATE TO '1.3';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
EXECUTE v12_get;
EXECUTE v12_upsert;
EXECUTE v12_list;
EXECUTE v12_ensure;
EXECUTE v12_delete;
SELECT count(*) AS records FROM sandbox_store.instances;
-- The same functions (OIDs), the same grants, now bound to the symbols of
-- their signatures.
SELECT count(*) AS same_functions FROM v12_functions f JOIN pg_proc p
    ON p.oid = f.oid AND p.oid::regprocedure::text = f.name AND p.proacl IS NOT DISTINCT FROM f.proacl;
SELECT proname, prosrc FROM pg_proc
 WHERE pronamespace = 'sandbox_store'::regnamespace AND prosrc LIKE '%\_1\_1' ORDER BY 1;
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store;
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';

--
-- 1.3 -> 1.4 (the guard).  A 1.3 database whose admin added a column to
-- instances cannot be guarded: the update is refused (55000), naming the
-- column, and the database stays at 1.3 with its records and the column.
-- Once the column is dropped, the update goes through; statements prepared
-- at 1.3 work on, and the guard refuses the next such column.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.3';
SELECT key FROM sandbox_store.sandbox_upsert('v13/1', 'p', 'sbx-1', 'thread-v13');
ALTER TABLE sandbox_store.instances ADD COLUMN region text DEFAULT 'eu';
PREPARE v13_get AS SELECT key, provider_sandbox_id, region FROM sandbox_store.sandbox_get('v13/1');
ALTER EXTENSION sandbox_store UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT count(*) AS event_triggers FROM pg_event_trigger WHERE evtname = 'sandbox_store_guard';
EXECUTE v13_get;
ALTER TABLE sandbox_store.instances DROP COLUMN region;
PREPARE v13_get2 AS SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('v13/1');
PREPARE v13_claim AS SELECT fence > 0 AS claimed FROM sandbox_store.sandbox_claim('v13/1', '1 hour');
ALTER EXTENSION sandbox_store UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
EXECUTE v13_get2;
EXECUTE v13_claim;
\set VERBOSITY sqlstate
ALTER TABLE sandbox_store.instances ADD COLUMN region text;
\set VERBOSITY default
SELECT evtname, evtenabled FROM pg_event_trigger WHERE evtname = 'sandbox_store_guard';

--
-- 1.4.1 -> 1.5 (each checkpoint's blob keys in its row; checkpoint_blobs
-- gone).  Checkpoints stored at 1.4.1 (two files on one key, a directory,
-- an artifact; a second checkpoint sharing a key) get their keys, and
-- checkpoint_blob_references() answers as before the update; a delete and
-- an append after it count right.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.4.1';
CREATE TEMP TABLE up_w AS SELECT * FROM sandbox_store.checkpoint_acquire_writer('t-up', 600000);
CREATE FUNCTION pg_temp.up_cp(id text, parent text, k1 text, k2 text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'threadId', 't-up', 'parentCheckpointId', parent, 'createdAt', 1,
    'reason', 'automatic', 'conversation', '[]'::jsonb,
    'files', jsonb_build_array(
      jsonb_build_object('path', 'a', 'kind', 'file', 'size', 1, 'blobKey', 'sandbox-files/sha256/' || repeat(k1, 64)),
      jsonb_build_object('path', 'd', 'kind', 'dir'),
      jsonb_build_object('path', 'd/b', 'kind', 'file', 'size', 2, 'blobKey', 'sandbox-files/sha256/' || repeat(k2, 64))),
    'artifacts', jsonb_build_array(jsonb_build_object('artifactId', 'x', 'name', 'x', 'mimeType', 'text/plain',
      'size', 1, 'createdAt', 1, 'blobKey', 'sandbox-artifacts/' || id)))
$$;
SELECT sandbox_store.checkpoint_append(pg_temp.up_cp('u1', NULL, '1', '1'), NULL, 't-up', owner_token, fence) FROM up_w;
SELECT sandbox_store.checkpoint_append(pg_temp.up_cp('u2', 'u1', '1', '2'), 'u1', 't-up', owner_token, fence) FROM up_w;
CREATE TEMP TABLE up_refs AS SELECT * FROM sandbox_store.checkpoint_blob_references();
ALTER EXTENSION sandbox_store UPDATE TO '1.5';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT left(key, 24) AS key, refs FROM sandbox_store.checkpoint_blob_references();
SELECT (SELECT array_agg(r.key || '=' || r.refs ORDER BY r.key COLLATE "C") FROM up_refs r)
     = (SELECT array_agg(r.key || '=' || r.refs ORDER BY r.key COLLATE "C")
          FROM sandbox_store.checkpoint_blob_references() r) AS refs_kept;
SELECT id, array_length(blob_keys, 1) AS keys FROM sandbox_store.checkpoints ORDER BY id;
SELECT sandbox_store.checkpoint_delete_head('t-up', 'u2', 't-up', owner_token, fence) FROM up_w;
SELECT sandbox_store.checkpoint_append(pg_temp.up_cp('u3', 'u1', '3', '1'), 'u1', 't-up', owner_token, fence) FROM up_w;
SELECT left(key, 24) AS key, refs FROM sandbox_store.checkpoint_blob_references();

--
-- 1.5 -> 1.5.1 (run_log_append in C).  A log written at 1.5 by a claimed
-- run's driver, and the app role's grant: after the update the function is
-- C, the grant and comment are kept, the next append continues the seqs
-- under the same epoch, and a stale epoch is still refused.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.5';
CREATE ROLE regress_sb_up_runs;
SELECT sandbox_store.run_create_or_resume('up-run', 'up-thread', 1767225600000) IS NOT NULL AS created,
       sandbox_store.run_claim('up-run') AS epoch;
SELECT sandbox_store.run_log_append('up-run', '[{"n": 1}, {"n": 2}]', 1) AS at_1_5;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_up_runs;
GRANT EXECUTE ON FUNCTION sandbox_store.run_log_append(text, jsonb, int8) TO regress_sb_up_runs;
SELECT l.lanname, p.prosecdef FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.oid = 'sandbox_store.run_log_append(text, jsonb, int8)'::regprocedure;
ALTER EXTENSION sandbox_store UPDATE TO '1.5.1';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT l.lanname, p.prosecdef, p.proconfig,
       has_function_privilege('regress_sb_up_runs', p.oid, 'EXECUTE') AS app_may,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS has_comment
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.oid = 'sandbox_store.run_log_append(text, jsonb, int8)'::regprocedure;
SELECT sandbox_store.run_log_append('up-run', '[{"n": 3}]', 1) AS at_1_5_1;
SET ROLE regress_sb_up_runs;
SELECT sandbox_store.run_log_append('up-run', '[{"n": 4}]', 1) AS as_app;
RESET ROLE;
\set VERBOSITY sqlstate
SELECT sandbox_store.run_log_append('up-run', '[{"n": 5}]', 2);
\set VERBOSITY default
SELECT seq, chunk FROM sandbox_store.run_log_read('up-run', 0, 10);
DROP OWNED BY regress_sb_up_runs;
DROP ROLE regress_sb_up_runs;

--
-- 1.5.1 -> 1.5.2 (run epochs drawn from fence_seq).  A run claimed at
-- 1.5.1 keeps its epoch across the update: its driver appends on under it;
-- the next claim gives an epoch above it, and the old one is refused; the
-- run functions pin their planner settings.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.5.1';
SELECT sandbox_store.run_create_or_resume('up-run', 'up-thread', 1767225600000) IS NOT NULL AS created,
       sandbox_store.run_claim('up-run') AS epoch_at_1_5_1,
       sandbox_store.run_claim('up-run') AS next_at_1_5_1;
SELECT sandbox_store.run_log_append('up-run', '[{"n": 1}]', 2) AS at_1_5_1;
ALTER EXTENSION sandbox_store UPDATE TO '1.5.2';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT sandbox_store.run_log_append('up-run', '[{"n": 2}]', 2) AS same_epoch_at_1_5_2;
SELECT sandbox_store.run_claim('up-run') > 2 AS next_claim_above;
\set VERBOSITY sqlstate
SELECT sandbox_store.run_log_append('up-run', '[{"n": 3}]', 2);
\set VERBOSITY default
SELECT seq, chunk FROM sandbox_store.run_log_read('up-run', 0, 10);
SELECT count(*) AS unpinned_run_functions FROM pg_proc p
 WHERE p.pronamespace = 'sandbox_store'::regnamespace AND p.proname LIKE 'run\_%'
   AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')
   AND NOT p.proconfig @> ARRAY['enable_seqscan=off', 'enable_indexscan=on'];

--
-- 1.5.2 -> 1.6.0 (a run keeps the highest epoch it had).  At 1.5.2 the
-- 1.6.0 library serves run_log_append by 1.5.2's rule (the symbol of 1.5.1:
-- there is no max_driver_epoch to read), and run_update refuses a clear.  A
-- run claimed at 1.5.2 (by a driverEpoch patch, far above what fence_seq
-- has drawn) keeps its epoch across the update, which fills
-- max_driver_epoch with it: its driver appends on, a write without an
-- epoch is still refused, and after a clear its epoch is refused and the
-- next claim goes above it.  A run never claimed stays so.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.5.2';
SELECT sandbox_store.run_create_or_resume('up-run', 'up-thread', 1767225600000) IS NOT NULL AS created,
       sandbox_store.run_create_or_resume('up-free', 'up-thread', 1767225600000) IS NOT NULL AS never_claimed;
\set up_epoch 1000000
SELECT sandbox_store.run_update('up-run', jsonb_build_object('driverEpoch', :up_epoch)) AS claimed_at_1_5_2;
SELECT sandbox_store.run_log_append('up-run', '[{"n": 1}]', :up_epoch) AS at_1_5_2,
       sandbox_store.run_log_append('up-free', '[{"n": 1}]') AS unfenced_at_1_5_2;
\set VERBOSITY sqlstate
SELECT sandbox_store.run_log_append('up-run', '[{"n": 0}]');
SELECT sandbox_store.run_update('up-run', '{"driverEpoch": null}');
\set VERBOSITY default
ALTER EXTENSION sandbox_store UPDATE TO '1.6.0';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT r.run_id, r.driver_epoch = :up_epoch AS epoch_kept, r.max_driver_epoch = r.driver_epoch AS highest_filled,
       r.driver_epoch IS NULL AND r.max_driver_epoch IS NULL AS never_claimed
  FROM sandbox_store.runs r ORDER BY r.run_id;
SELECT p.prosrc FROM pg_proc p WHERE p.oid = 'sandbox_store.run_log_append(text, jsonb, int8)'::regprocedure;
SELECT sandbox_store.run_log_append('up-run', '[{"n": 2}]', :up_epoch) AS same_epoch_at_1_6_0,
       sandbox_store.run_log_append('up-free', '[{"n": 2}]') AS unfenced_never_claimed;
\set VERBOSITY sqlstate
SELECT sandbox_store.run_log_append('up-run', '[{"n": 0}]');
\set VERBOSITY default
SELECT sandbox_store.run_update('up-run', '{"driverEpoch": null}') AS cleared;
\set VERBOSITY sqlstate
SELECT sandbox_store.run_log_append('up-run', '[{"n": 0}]', :up_epoch);
SELECT sandbox_store.run_log_append('up-run', '[{"n": 0}]');
\set VERBOSITY default
SELECT sandbox_store.run_claim('up-run') > :up_epoch AS next_claim_above;
SELECT run_id, seq, chunk FROM sandbox_store.run_log_entries ORDER BY run_id, seq;

--
-- 1.6.0 -> 1.7.0 (run_log_append with notify, run_log_wake).  An app role
-- granted every function at 1.6.0 keeps run_log_append without notify, its
-- comment, and its notification at the commit (the function is made again,
-- bound to the same symbol); the two new functions start without grants,
-- as after a fresh install, until the role is granted them.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.6.0';
CREATE ROLE regress_sb_up_wake;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_up_wake;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_up_wake;
SELECT * FROM sandbox_store.run_log_watch('up-wake');
ALTER EXTENSION sandbox_store UPDATE TO '1.7.0';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT p.oid::regprocedure AS function, CASE l.lanname WHEN 'c' THEN p.prosrc ELSE l.lanname END AS body,
       has_function_privilege('regress_sb_up_wake', p.oid, 'EXECUTE') AS app_may,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS has_comment
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.pronamespace = 'sandbox_store'::regnamespace AND p.proname IN ('run_log_append', 'run_log_wake')
 ORDER BY p.oid::regprocedure::text;
LISTEN sandbox_store_run_log;
\o | sed -e 's/PID [0-9]*/PID N/'
SET ROLE regress_sb_up_wake;
SELECT sandbox_store.run_log_append('up-wake', '[{"n": 1}]') AS notifies_at_commit;
\set VERBOSITY sqlstate
SELECT sandbox_store.run_log_wake('up-wake');
\set VERBOSITY default
RESET ROLE;
GRANT EXECUTE ON FUNCTION sandbox_store.run_log_append(text, jsonb, int8, bool),
    sandbox_store.run_log_wake(text[]) TO regress_sb_up_wake;
SET ROLE regress_sb_up_wake;
SELECT sandbox_store.run_log_append('up-wake', '[{"n": 2}]', NULL, false) AS quiet;
SELECT sandbox_store.run_log_wake('up-wake') AS woken;
RESET ROLE;
\o
UNLISTEN sandbox_store_run_log;
DROP OWNED BY regress_sb_up_wake;
DROP ROLE regress_sb_up_wake;

--
-- 1.7.0 -> 1.7.1 (each rule written once; no change of behaviour).  An app
-- role granted every function at 1.7.0 keeps every grant and comment (the
-- functions are made again); the helpers of 1.7.0 that 1.7.1 merged are
-- gone, the new ones granted to nobody; a run and a checkpoint made at
-- 1.7.0 are served as before, with the same SQLSTATEs and messages.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.7.0';
CREATE ROLE regress_sb_up_171;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_up_171;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_up_171;
SELECT sandbox_store.run_create_or_resume('up-171', 'up-thread', 1767225600000) IS NOT NULL AS created,
       sandbox_store.run_log_append('up-171', '[{"n": 1}]') AS at_1_7_0;
CREATE TEMP TABLE up_171_before AS
SELECT p.oid, p.oid::regprocedure::text AS function,
       has_function_privilege('regress_sb_up_171', p.oid, 'EXECUTE') AS app_may,
       obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_proc p WHERE p.pronamespace = 'sandbox_store'::regnamespace;
ALTER EXTENSION sandbox_store UPDATE TO '1.7.1';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
-- every interface function kept (same OID), with its grant and comment
SELECT count(*) AS interface_functions,
       count(*) FILTER (WHERE b.oid = p.oid AND b.app_may = has_function_privilege('regress_sb_up_171', p.oid, 'EXECUTE')
                          AND b.comment IS NOT DISTINCT FROM obj_description(p.oid, 'pg_proc')) AS kept
  FROM up_171_before b LEFT JOIN pg_proc p ON p.oid::regprocedure::text = b.function;
SELECT p.oid::regprocedure AS helper, has_function_privilege('regress_sb_up_171', p.oid, 'EXECUTE') AS app_may
  FROM pg_proc p
 WHERE p.pronamespace = 'sandbox_store_internal'::regnamespace
   AND p.proname IN ('_raise', '_check_id', '_run_finished', '_run_raise', '_checkpoint_error', '_run_id', '_checkpoint_id')
 ORDER BY p.oid::regprocedure::text;
SET ROLE regress_sb_up_171;
SELECT sandbox_store.run_log_append('up-171', '[{"n": 2}]') AS at_1_7_1;
SELECT sandbox_store.run_update('up-171', '{"status": "completed"}') IS NOT NULL AS finished;
SELECT pg_temp.err($$SELECT sandbox_store.run_log_append('up-171', '[{"n": 3}]')$$) AS finished_refused;
SELECT pg_temp.err($$SELECT sandbox_store.run_get('')$$) AS bad_run_id;
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_get('')$$) AS bad_checkpoint_id;
SELECT pg_temp.err($$SELECT sandbox_store.run_create_or_resume('up-171b', 'up-thread', 1767225600000, 'done')$$) AS bad_status;
RESET ROLE;
DROP TABLE up_171_before;
DROP OWNED BY regress_sb_up_171;
DROP ROLE regress_sb_up_171;

--
-- 1.7.1 -> 1.7.2 (the same SQL; the library's append).  An app role granted
-- every function at 1.7.1 keeps every grant and comment (the C functions
-- are made again, same OIDs); a run claimed and appended to at 1.7.1 goes
-- on at 1.7.2 with the next seqs, and its old epoch is refused.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.7.1';
CREATE ROLE regress_sb_up_172;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_up_172;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_up_172;
SELECT sandbox_store.run_create_or_resume('up-172', 'up-thread', 1767225600000) IS NOT NULL AS created;
SELECT sandbox_store.run_claim('up-172') AS up_172_old \gset
SELECT sandbox_store.run_claim('up-172') AS up_172_epoch \gset
SELECT sandbox_store.run_log_append('up-172', '[{"n": 1}, {"n": 2}]', :up_172_epoch) AS at_1_7_1;
CREATE TEMP TABLE up_172_before AS
SELECT p.oid, p.oid::regprocedure::text AS function,
       has_function_privilege('regress_sb_up_172', p.oid, 'EXECUTE') AS app_may,
       obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_proc p WHERE p.pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace);
ALTER EXTENSION sandbox_store UPDATE TO '1.7.2';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT count(*) AS functions,
       count(*) FILTER (WHERE b.oid = p.oid AND b.app_may = has_function_privilege('regress_sb_up_172', p.oid, 'EXECUTE')
                          AND b.comment IS NOT DISTINCT FROM obj_description(p.oid, 'pg_proc')) AS kept,
       (SELECT count(*) FROM pg_proc q
         WHERE q.pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace)) AS now
  FROM up_172_before b LEFT JOIN pg_proc p ON p.oid::regprocedure::text = b.function;
SET ROLE regress_sb_up_172;
SELECT sandbox_store.run_log_append('up-172', '[{"n": 3}]', :up_172_epoch) AS at_1_7_2;
SELECT pg_temp.err(format($$SELECT sandbox_store.run_log_append('up-172', '[{"n": 4}]', %s)$$, :up_172_old)) AS old_epoch;
SELECT seq, chunk FROM sandbox_store.run_log_read('up-172', 0);
RESET ROLE;
DROP TABLE up_172_before;
DROP OWNED BY regress_sb_up_172;
DROP ROLE regress_sb_up_172;

--
-- 1.7.2 -> 1.8.0 (the run functions as Citus can run them).  An app role
-- granted every function at 1.7.2 keeps every grant and comment, with the
-- same OIDs, but for distribute()'s comment (it distributes the run tables
-- too) and the internal _run_record, which now takes a run's columns (made
-- anew, granted to nobody); the runs written at 1.7.2 read, list, close and
-- prune at 1.8.0 as before.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.7.2';
CREATE ROLE regress_sb_up_180;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_up_180;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_up_180;
SELECT sandbox_store.run_create_or_resume('up-180', 'up-thread-180', 1767225600000) IS NOT NULL AS created;
SELECT sandbox_store.run_create_or_resume('up-180b', 'up-thread-180', 1767225600001) IS NOT NULL AS created;
SELECT sandbox_store.run_claim('up-180') AS up_180_epoch \gset
SELECT sandbox_store.run_log_append('up-180', '[{"n": 1}]', :up_180_epoch) AS at_1_7_2;
SELECT sandbox_store.run_log_append('up-180b', '[{"n": 1}]') AS at_1_7_2;
SELECT sandbox_store.run_update('up-180b', '{"status": "completed", "finishedAt": 1767225601000}') AS finished;
CREATE TEMP TABLE up_180_before AS
SELECT p.oid, p.oid::regprocedure::text AS function,
       has_function_privilege('regress_sb_up_180', p.oid, 'EXECUTE') AS app_may,
       obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_proc p WHERE p.pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace);
ALTER EXTENSION sandbox_store UPDATE TO '1.8.0';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT count(*) AS functions,
       count(*) FILTER (WHERE b.oid = p.oid AND b.app_may = has_function_privilege('regress_sb_up_180', p.oid, 'EXECUTE')
                          AND b.comment IS NOT DISTINCT FROM obj_description(p.oid, 'pg_proc')) AS kept,
       string_agg(b.function, ', ') FILTER (WHERE p.oid IS NULL) AS gone,
       string_agg(b.function, ', ') FILTER (WHERE b.comment IS DISTINCT FROM obj_description(p.oid, 'pg_proc')
                                              AND p.oid IS NOT NULL) AS new_comment,
       (SELECT count(*) FROM pg_proc q
         WHERE q.pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace)) AS now
  FROM up_180_before b LEFT JOIN pg_proc p ON p.oid::regprocedure::text = b.function;
SELECT p.oid::regprocedure AS made, has_function_privilege('regress_sb_up_180', p.oid, 'EXECUTE') AS app_may
  FROM pg_proc p
 WHERE p.pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace)
   AND p.oid NOT IN (SELECT oid FROM up_180_before);
SET ROLE regress_sb_up_180;
SELECT sandbox_store.run_get('up-180') - 'driverEpoch' AS run;
SELECT r->>'runId' AS run_id FROM sandbox_store.run_list_by_thread('up-thread-180') r;
SELECT sandbox_store.run_find_active('up-thread-180')->>'runId' AS active;
SELECT sandbox_store.run_log_append('up-180', '[{"n": 2}]', :up_180_epoch) AS at_1_8_0;
SELECT sandbox_store.run_log_close('up-180', :up_180_epoch) AS closed;
SELECT sandbox_store.run_log_prune('0 s') AS pruned;
SELECT count(*) AS logs_left FROM sandbox_store.run_log_status('up-180') s WHERE s.last_seq > 0;
RESET ROLE;
DROP TABLE up_180_before;
DROP OWNED BY regress_sb_up_180;
DROP ROLE regress_sb_up_180;

--
-- 1.8.0 -> 1.9.0 (the checkpoint store as Citus can distribute it).  An app
-- role granted every function at 1.8.0 keeps every grant and comment, with
-- the same OIDs, but for the new comments of checkpoint_acquire_writer and
-- distribute().  The writers, claims in leases at 1.8.0, move to
-- checkpoint_writers with their fences: a writer live across the update
-- appends on with its token and fence, a released thread's next writer gets
-- a higher fence; every stored id is in checkpoint_ids, and an id stays
-- unique over all threads.
--
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store VERSION '1.8.0';
CREATE ROLE regress_sb_up_190;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_up_190;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_up_190;
CREATE FUNCTION pg_temp.up_cp190(id text, thread text, parent text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'threadId', thread, 'parentCheckpointId', parent, 'createdAt', 1,
    'reason', 'automatic', 'conversation', '[]'::jsonb, 'files', '[]'::jsonb, 'artifacts', '[]'::jsonb)
$$;
CREATE TEMP TABLE up_190_w AS
SELECT 'up-t1'::text AS thread, * FROM sandbox_store.checkpoint_acquire_writer('up-t1', 60000, at => '2026-01-01 00:00:00+00')
UNION ALL
SELECT 'up-t2', * FROM sandbox_store.checkpoint_acquire_writer('up-t2', 60000, at => '2026-01-01 00:00:00+00');
SELECT sandbox_store.checkpoint_append(pg_temp.up_cp190('up-c1', 'up-t1', NULL), NULL, thread, owner_token, fence, at => '2026-01-01 00:00:01+00')
  FROM up_190_w WHERE thread = 'up-t1';
SELECT sandbox_store.checkpoint_append(pg_temp.up_cp190('up-c2', 'up-t1', 'up-c1'), 'up-c1', thread, owner_token, fence, at => '2026-01-01 00:00:01+00')
  FROM up_190_w WHERE thread = 'up-t1';
SELECT sandbox_store.checkpoint_append(pg_temp.up_cp190('up-c3', 'up-t2', NULL), NULL, thread, owner_token, fence, at => '2026-01-01 00:00:01+00')
  FROM up_190_w WHERE thread = 'up-t2';
SELECT sandbox_store.checkpoint_release_writer(thread, owner_token, fence) AS released FROM up_190_w WHERE thread = 'up-t2';
SELECT count(*) AS writer_claims FROM sandbox_store.leases WHERE starts_with(key, E'\x01checkpoint-writer\x01');
CREATE TEMP TABLE up_190_before AS
SELECT p.oid, p.oid::regprocedure::text AS function,
       has_function_privilege('regress_sb_up_190', p.oid, 'EXECUTE') AS app_may,
       obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_proc p WHERE p.pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace);
ALTER EXTENSION sandbox_store UPDATE TO '1.9.0';
SELECT extversion FROM pg_extension WHERE extname = 'sandbox_store';
SELECT count(*) AS functions,
       count(*) FILTER (WHERE b.oid = p.oid AND b.app_may = has_function_privilege('regress_sb_up_190', p.oid, 'EXECUTE')
                          AND b.comment IS NOT DISTINCT FROM obj_description(p.oid, 'pg_proc')) AS kept,
       string_agg(b.function, ', ') FILTER (WHERE p.oid IS NULL) AS gone,
       string_agg(b.function, ', ' ORDER BY b.function) FILTER (WHERE b.comment IS DISTINCT FROM obj_description(p.oid, 'pg_proc')
                                              AND p.oid IS NOT NULL) AS new_comment,
       (SELECT count(*) FROM pg_proc q
         WHERE q.pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace)) AS now
  FROM up_190_before b LEFT JOIN pg_proc p ON p.oid::regprocedure::text = b.function;
-- the writers, moved with their fences; no claim of a writer left in leases
SELECT w.thread, c.fence = w.fence AS same_fence, c.owner_token IS NOT DISTINCT FROM (CASE WHEN w.thread = 'up-t1' THEN w.owner_token END) AS token,
       c.lease_expires_at
  FROM up_190_w w JOIN sandbox_store.checkpoint_writers c ON c.thread_id = w.thread ORDER BY 1;
SELECT count(*) AS writer_claims FROM sandbox_store.leases WHERE starts_with(key, E'\x01checkpoint-writer\x01');
SELECT (SELECT array_agg(ROW(i.id, i.thread_id) ORDER BY i.id) FROM sandbox_store.checkpoint_ids i)::text AS ids,
       (SELECT array_agg(ROW(i.id, i.thread_id) ORDER BY i.id) FROM sandbox_store.checkpoint_ids i)
     = (SELECT array_agg(ROW(c.id, c.thread_id) ORDER BY c.id) FROM sandbox_store.checkpoints c) AS ids_match;
SELECT pg_get_constraintdef(oid) AS checkpoints_pkey FROM pg_constraint
 WHERE conrelid = 'sandbox_store.checkpoints'::regclass AND conname = 'checkpoints_pkey';
GRANT SELECT ON up_190_w TO regress_sb_up_190;
SET ROLE regress_sb_up_190;
SELECT sandbox_store.checkpoint_append(pg_temp.up_cp190('up-c4', 'up-t1', 'up-c2'), 'up-c2', thread, owner_token, fence, at => '2026-01-01 00:00:02+00') AS at_1_9_0
  FROM up_190_w WHERE thread = 'up-t1';
SELECT string_agg(c ->> 'id', ' ') AS listed FROM sandbox_store.checkpoint_list('up-t1') c;
SELECT sandbox_store.checkpoint_get('up-c3') ->> 'threadId' AS got;
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_acquire_writer('up-t1', 60000, at => '2026-01-01 00:00:03+00')$$) AS live_writer;
SELECT n.fence > w.fence AS higher_fence, n.owner_token, n.fence
  FROM up_190_w w, sandbox_store.checkpoint_acquire_writer('up-t2', 60000, at => '2026-01-01 00:00:03+00') n WHERE w.thread = 'up-t2' \gset up190_
SELECT :'up190_higher_fence' AS higher_fence;
SELECT pg_temp.err(format($$SELECT sandbox_store.checkpoint_append(pg_temp.up_cp190('up-c1', 'up-t2', 'up-c3'), 'up-c3', 'up-t2', %L, %s, at => '2026-01-01 00:00:04+00')$$,
                          :'up190_owner_token', :'up190_fence')) AS id_of_another_thread;
RESET ROLE;
DROP TABLE up_190_before, up_190_w;
DROP OWNED BY regress_sb_up_190;
DROP ROLE regress_sb_up_190;
DROP EXTENSION sandbox_store;
CREATE EXTENSION sandbox_store;

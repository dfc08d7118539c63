/* sandbox_store--1.1--1.2.sql: cheaper writes, HOT resume stamps */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sandbox_store UPDATE TO '1.2'" to load this file. \quit

-- The 1..1024-byte rule of the text columns, as a domain instead of one
-- CHECK constraint per column.  PostgreSQL 15 rebuilds a table's CHECK
-- expressions for every INSERT and UPDATE statement (about 40% of the
-- instructions of a resume or an upsert); a domain's constraint is compiled
-- once per backend and checked only for the columns a statement assigns.
-- The rule still binds every writer, superusers included.  Clients see the
-- columns as text (the protocol sends a domain's base type).
CREATE DOMAIN sandbox_store.bounded_text AS pg_catalog.text
    CONSTRAINT bounded_text_length
        CHECK (pg_catalog.octet_length(VALUE) BETWEEN 1 AND 1024);
COMMENT ON DOMAIN sandbox_store.bounded_text IS
'Text of 1..1024 bytes: the type of the text columns of sandbox_store.instances.';

-- One rewrite of each table (under an ACCESS EXCLUSIVE lock, like any
-- ALTER COLUMN ... TYPE that must check the rows).
--
-- HOT: a resume stamp writes latest_run_id and updated_at.  With no index on
-- either, and free space left in each page (fillfactor 90), the stamp is a
-- heap-only tuple update: no new index entries, no index bloat, and pages
-- pruned in place.  The index on updated_at made every stamp a full update
-- of all three indexes; sweeps on updated_at (and sandbox_reap) now read the
-- table sequentially, which the README quantifies.
ALTER TABLE sandbox_store.instances
    DROP CONSTRAINT instances_key_length,
    DROP CONSTRAINT instances_provider_length,
    DROP CONSTRAINT instances_provider_sandbox_id_length,
    DROP CONSTRAINT instances_latest_snapshot_id_length,
    DROP CONSTRAINT instances_thread_id_length,
    DROP CONSTRAINT instances_latest_run_id_length,
    ALTER COLUMN key TYPE sandbox_store.bounded_text,
    ALTER COLUMN provider TYPE sandbox_store.bounded_text,
    ALTER COLUMN provider_sandbox_id TYPE sandbox_store.bounded_text,
    ALTER COLUMN latest_snapshot_id TYPE sandbox_store.bounded_text,
    ALTER COLUMN thread_id TYPE sandbox_store.bounded_text,
    ALTER COLUMN latest_run_id TYPE sandbox_store.bounded_text,
    SET (fillfactor = 90);
DROP INDEX sandbox_store.instances_updated_at_idx;

-- Claims are taken, renewed and released by updates of one row per key
-- (leases has no index but its primary key): the same free space keeps them
-- HOT.  leases keeps its CHECK constraints: the claims view depends on its
-- key column, and lease mode is not the hot path.
ALTER TABLE sandbox_store.leases SET (fillfactor = 90);

-- sandbox_ensure returns the same columns as before, now as SETOF a named
-- row type instead of RETURNS TABLE: the executor then finds the row type in
-- its type cache, where for RETURNS TABLE it rebuilds it from pg_proc and
-- registers it again at every statement (about 5% of a resume).  Callers see
-- the same column names and types.  A function's result type cannot be
-- altered, so the function is replaced; its EXECUTE grants carry over.
CREATE TYPE sandbox_store.ensure_result AS (
    action pg_catalog.text,
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_run_id pg_catalog.text,
    updated_at pg_catalog.timestamptz,
    fence pg_catalog.int8,
    owner_token pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz);
COMMENT ON TYPE sandbox_store.ensure_result IS
'The row sandbox_ensure returns: action, the record''s columns, and the claim (lease mode).';

ALTER FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval)
    RENAME TO sandbox_ensure_1_1;

CREATE FUNCTION sandbox_store.sandbox_ensure(
    key pg_catalog.text,
    run_id pg_catalog.text,
    max_age pg_catalog.interval DEFAULT NULL,
    provider pg_catalog.text DEFAULT NULL,
    wait pg_catalog.interval DEFAULT NULL,
    lease pg_catalog.interval DEFAULT NULL)
RETURNS SETOF sandbox_store.ensure_result
AS 'MODULE_PATHNAME', 'sandbox_ensure'
LANGUAGE C VOLATILE ROWS 1;

COMMENT ON FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take the key (wait: NULL = as lock_timeout allows, 0 = no wait, else at most that long; 55P03 if not obtained), then return one row: create (no record), resume (fresh record, stamped with run_id and now()) or recreate (the old record: older than max_age or of another provider). Lock mode (lease NULL): the key''s lock is held until the transaction ends. Lease mode: the row also carries a claim (fence, owner_token, lease_expires_at) that holds the key until released or expired.';

REVOKE ALL ON FUNCTION
    sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval)
FROM PUBLIC;

-- Carry the grants over (as in 1.0--1.1): whoever could execute the old
-- function can execute the new one, and the initial privileges stay those of
-- a fresh install, so pg_dump keeps the admin's grants.
DO $$
DECLARE
    grantee pg_catalog.text;
    initial pg_catalog.pg_init_privs[];
BEGIN
    initial := ARRAY(
        SELECT ip FROM pg_catalog.pg_init_privs ip
         WHERE ip.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
           AND ip.objoid IN (SELECT p.oid FROM pg_catalog.pg_proc p
                              WHERE p.pronamespace OPERATOR(pg_catalog.=) 'sandbox_store'::pg_catalog.regnamespace));
    FOR grantee IN
        SELECT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                    ELSE pg_catalog.quote_ident(r.rolname) END
          FROM pg_catalog.pg_proc p
         CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
          LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee
         WHERE p.oid OPERATOR(pg_catalog.=) 'sandbox_store.sandbox_ensure_1_1(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval)'::pg_catalog.regprocedure
           AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
           AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) TO %s', grantee);
    END LOOP;
    UPDATE pg_catalog.pg_init_privs ip SET initprivs = s.initprivs
      FROM pg_catalog.unnest(initial) s
     WHERE ip.objoid OPERATOR(pg_catalog.=) s.objoid
       AND ip.classoid OPERATOR(pg_catalog.=) s.classoid
       AND ip.objsubid OPERATOR(pg_catalog.=) s.objsubid;
END
$$;

DROP FUNCTION sandbox_store.sandbox_ensure_1_1(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval);

-- The row type of instances changed above (text -> bounded_text), and plans
-- that sessions cached over the functions returning it depend on those
-- functions, not on the table.  Touch them (same cost as before), so that
-- every such plan is made again at its next use: a prepared statement whose
-- output is unchanged (e.g. key::text) keeps working, and one whose output
-- columns changed type gets PostgreSQL's usual 0A000 "cached plan must not
-- change result type" (as over a view whose column changed), which drivers
-- such as pgjdbc answer by preparing again.
ALTER FUNCTION sandbox_store.sandbox_get(pg_catalog.text) COST 1;
ALTER FUNCTION sandbox_store.sandbox_list(pg_catalog.text) COST 1;
ALTER FUNCTION sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8) COST 1;
ALTER FUNCTION sandbox_store.sandbox_reap(pg_catalog.interval, pg_catalog.int4) COST 1;

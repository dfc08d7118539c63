/* sandbox_store--1.0--1.1.sql: lease mode with fences, the reaper, observability */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sandbox_store UPDATE TO '1.1'" to load this file. \quit

-- Fences: one sequence, so they strictly increase per key forever (across
-- release, expiry, delete, crash restart, and dump/restore: it is dumped).
CREATE SEQUENCE sandbox_store.fence_seq AS pg_catalog.int8 MINVALUE 1 NO CYCLE;
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.fence_seq', '');
COMMENT ON SEQUENCE sandbox_store.fence_seq IS
'Source of claim fences: strictly increasing, never reused.';

-- One row per key ever claimed, kept after release so it remembers the
-- key's newest fence; owner_token and lease_expires_at are set while a claim
-- holds the key.
CREATE TABLE sandbox_store.leases (
    key              pg_catalog.text NOT NULL,
    fence            pg_catalog.int8 NOT NULL,
    owner_token      pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz,
    CONSTRAINT leases_pkey PRIMARY KEY (key),
    CONSTRAINT leases_key_length
        CHECK (pg_catalog.octet_length(key) BETWEEN 1 AND 1024),
    CONSTRAINT leases_claim_complete
        CHECK ((owner_token IS NULL) = (lease_expires_at IS NULL))
);
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.leases', '');
COMMENT ON TABLE sandbox_store.leases IS
'Claims on keys (lease mode) and each key''s newest fence. Written only through the sandbox_store functions.';

CREATE VIEW sandbox_store.claims AS
SELECT key, fence, owner_token, lease_expires_at
  FROM sandbox_store.leases
 WHERE owner_token IS NOT NULL
   AND lease_expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp();
COMMENT ON VIEW sandbox_store.claims IS
'Live claims: keys held in lease mode, with their fence, owner token and expiry.';

-- New signatures.  The 1.0 functions they replace are dropped below, after
-- their grants are carried over.

CREATE FUNCTION sandbox_store.sandbox_ensure(
    key pg_catalog.text,
    run_id pg_catalog.text,
    max_age pg_catalog.interval DEFAULT NULL,
    provider pg_catalog.text DEFAULT NULL,
    wait pg_catalog.interval DEFAULT NULL,
    lease pg_catalog.interval DEFAULT NULL)
RETURNS TABLE (
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
    lease_expires_at pg_catalog.timestamptz)
AS 'MODULE_PATHNAME', 'sandbox_ensure'
LANGUAGE C VOLATILE ROWS 1;

COMMENT ON FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take the key (wait: NULL = as lock_timeout allows, 0 = no wait, else at most that long; 55P03 if not obtained), then return one row: create (no record), resume (fresh record, stamped with run_id and now()) or recreate (the old record: older than max_age or of another provider). Lock mode (lease NULL): the key''s lock is held until the transaction ends. Lease mode: the row also carries a claim (fence, owner_token, lease_expires_at) that holds the key until released or expired.';

CREATE FUNCTION sandbox_store.sandbox_upsert(
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now(),
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_upsert'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8) IS
'Insert or fully replace the record of key; optional fields passed as NULL (or omitted) clear what was stored. With fence: refused (SB001, nothing changed) if the key has been claimed with a newer fence. Returns the stored record.';

CREATE FUNCTION sandbox_store.sandbox_delete(
    key pg_catalog.text,
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_delete'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8) IS
'Delete the record of key under the key''s lock (waits for an ensure or a claim in flight). With fence: the claim holder''s delete, refused (SB001) if the key has been claimed with a newer fence. True if a record was removed, false if there was none.';

CREATE FUNCTION sandbox_store.sandbox_claim(
    key pg_catalog.text,
    lease pg_catalog.interval,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS TABLE (
    fence pg_catalog.int8,
    owner_token pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz)
AS 'MODULE_PATHNAME', 'sandbox_claim'
LANGUAGE C VOLATILE ROWS 1;

COMMENT ON FUNCTION sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take a claim on key for lease, and nothing else (lease mode''s lock for any critical section): waits for the key like sandbox_ensure (wait; 55P03 if not obtained) and returns fence, owner_token and lease_expires_at.';

CREATE FUNCTION sandbox_store.sandbox_renew(
    key pg_catalog.text,
    owner_token pg_catalog.uuid,
    lease pg_catalog.interval)
RETURNS pg_catalog.timestamptz
AS 'MODULE_PATHNAME', 'sandbox_renew'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval) IS
'Extend the claim of owner_token on key to now + lease (server clock) and return the new expiry; SB001 if the claim was released or taken over.';

CREATE FUNCTION sandbox_store.sandbox_release(
    key pg_catalog.text,
    owner_token pg_catalog.uuid)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_release'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid) IS
'End the claim of owner_token on key: true if it held the key''s claim, false for a stale token (which never ends its successor''s claim).';

CREATE FUNCTION sandbox_store.sandbox_reap(
    idle_for pg_catalog.interval,
    max_rows pg_catalog.int4 DEFAULT 100)
RETURNS SETOF sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_reap'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_reap(pg_catalog.interval, pg_catalog.int4) IS
'Delete and return, oldest first, at most max_rows records idle longer than idle_for whose key is neither locked nor claimed (busy keys are skipped, never waited for; concurrent reapers never return the same record). The app destroys the returned sandboxes.';

CREATE FUNCTION sandbox_store.sandbox_lock_holder(key pg_catalog.text)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'sandbox_lock_holder'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION sandbox_store.sandbox_lock_holder(pg_catalog.text) IS
'The pid of the backend whose transaction holds the key''s lock, or NULL. Claims have no backend: see the view sandbox_store.claims.';

REVOKE ALL ON FUNCTION
    sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval),
    sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8),
    sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8),
    sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval),
    sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval),
    sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid),
    sandbox_store.sandbox_reap(pg_catalog.interval, pg_catalog.int4),
    sandbox_store.sandbox_lock_holder(pg_catalog.text)
FROM PUBLIC;
REVOKE ALL ON TABLE sandbox_store.leases, sandbox_store.claims FROM PUBLIC;
REVOKE ALL ON SEQUENCE sandbox_store.fence_seq FROM PUBLIC;

-- Carry 1.0's grants over: whoever could execute a replaced function can
-- execute its replacement, and whoever could execute sandbox_ensure can
-- execute the new functions.  (Reading the claims view, which shows owner
-- tokens, stays a separate grant.)  GRANTs run by an extension script are
-- recorded as the extension's initial privileges, which pg_dump leaves out;
-- these are the admin's grants, so the initial privileges are put back as
-- they were, for pg_dump to keep them.
DO $$
DECLARE
    carry pg_catalog.text[] := ARRAY[
        'sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval)',
        'FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval), '
        'sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval), '
        'sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval), '
        'sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid), '
        'sandbox_store.sandbox_reap(pg_catalog.interval, pg_catalog.int4), '
        'sandbox_store.sandbox_lock_holder(pg_catalog.text)',
        'sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz)',
        'FUNCTION sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8)',
        'sandbox_store.sandbox_delete(pg_catalog.text)',
        'FUNCTION sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8)'];
    grantee pg_catalog.text;
    initial pg_catalog.pg_init_privs[];
BEGIN
    initial := ARRAY(
        SELECT ip FROM pg_catalog.pg_init_privs ip
         WHERE ip.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
           AND ip.objoid IN (SELECT p.oid FROM pg_catalog.pg_proc p
                              WHERE p.pronamespace OPERATOR(pg_catalog.=) 'sandbox_store'::pg_catalog.regnamespace));
    FOR i IN 1 .. pg_catalog.array_length(carry, 1) BY 2 LOOP
        FOR grantee IN
            SELECT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                        ELSE pg_catalog.quote_ident(r.rolname) END
              FROM pg_catalog.pg_proc p
             CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
              LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee
             WHERE p.oid OPERATOR(pg_catalog.=) carry[i]::pg_catalog.regprocedure
               AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
               AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
        LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON %s TO %s', carry[i + 1], grantee);
        END LOOP;
    END LOOP;
    UPDATE pg_catalog.pg_init_privs ip SET initprivs = s.initprivs
      FROM pg_catalog.unnest(initial) s
     WHERE ip.objoid OPERATOR(pg_catalog.=) s.objoid
       AND ip.classoid OPERATOR(pg_catalog.=) s.classoid
       AND ip.objsubid OPERATOR(pg_catalog.=) s.objsubid;
END
$$;

DROP FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval);
DROP FUNCTION sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz);
DROP FUNCTION sandbox_store.sandbox_delete(pg_catalog.text);

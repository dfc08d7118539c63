-- Privileges in the catalog (docs/reference.md, security): an app role given
-- the README's two GRANT lines has USAGE on the schema and EXECUTE on the
-- functions, and no privilege on the tables, the fence sequence or the
-- claims view; nothing is granted to PUBLIC.  What roles can and cannot do
-- through the functions (calls, denials and their SQLSTATEs) is regression
-- test security.
--
-- Roles are created inside the test transaction and vanish with its
-- ROLLBACK:
--   sbtap_app         the two GRANT lines of the README
--   sbtap_nobody      nothing at all
BEGIN;
DO $i$ BEGIN IF to_regnamespace('sandbox_store_harness') IS NULL THEN CREATE EXTENSION IF NOT EXISTS sandbox_store; ELSE PERFORM sandbox_store_harness.install(); END IF; END $i$;

SELECT plan(105);

CREATE ROLE sbtap_app NOLOGIN;
CREATE ROLE sbtap_nobody NOLOGIN;
GRANT USAGE ON SCHEMA sandbox_store TO sbtap_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO sbtap_app;

-- The fourteen functions of the store, and the thirteen of the runs and
-- run logs (1.5), with their argument types.
CREATE TEMP TABLE fns (n int, name name, args name[]) ON COMMIT DROP;
INSERT INTO fns VALUES
    (1, 'sandbox_upsert',
        ARRAY['text', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone', 'bigint']),
    (2, 'sandbox_get',         ARRAY['text']),
    (3, 'sandbox_delete',      ARRAY['text', 'bigint']),
    (4, 'sandbox_list',        ARRAY['text']),
    (5, 'sandbox_ensure',      ARRAY['text', 'text', 'interval', 'text', 'interval', 'interval']),
    (6, 'sandbox_lock',        ARRAY['text', 'interval']),
    (7, 'sandbox_try_lock',    ARRAY['text']),
    (8, 'sandbox_lock_id',     ARRAY['text']),
    (9, 'sandbox_renew',       ARRAY['text', 'uuid', 'interval']),
    (10, 'sandbox_release',    ARRAY['text', 'uuid']),
    (11, 'sandbox_reap',       ARRAY['interval', 'integer']),
    (12, 'sandbox_lock_holder', ARRAY['text']),
    (13, 'sandbox_claim',      ARRAY['text', 'interval', 'interval']),
    (14, 'sandbox_upsert_release',
        ARRAY['text', 'bigint', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone']),
    (15, 'run_create_or_resume', ARRAY['text', 'text', 'double precision', 'text']),
    (16, 'run_get',              ARRAY['text']),
    (17, 'run_update',           ARRAY['text', 'jsonb', 'bigint']),
    (18, 'run_list_by_thread',   ARRAY['text']),
    (19, 'run_list_reclaimable', ARRAY['double precision', 'double precision']),
    (20, 'run_find_active',      ARRAY['text']),
    (21, 'run_claim',            ARRAY['text']),
    (22, 'run_log_append',       ARRAY['text', 'jsonb', 'bigint']),
    (23, 'run_log_upsert',       ARRAY['text', 'bigint[]', 'jsonb', 'bigint']),
    (24, 'run_log_close',        ARRAY['text', 'bigint']),
    (25, 'run_log_read',         ARRAY['text', 'bigint', 'integer']),
    (26, 'run_log_status',       ARRAY['text']),
    (27, 'run_log_prune',        ARRAY['interval', 'integer']);

-- Catalog privileges (81 + 3 + 3 + 3 + 3 + 3 tests, then 9 for the run tables) ------------------------

SELECT function_privs_are('sandbox_store', f.name, f.args, r.role, r.privs)
  FROM fns AS f
 CROSS JOIN (VALUES (1, 'sbtap_app'::name, ARRAY['EXECUTE']::name[]),
                    (2, 'sbtap_nobody',     ARRAY[]::name[]),
                    (3, 'public',           ARRAY[]::name[])) AS r(n, role, privs)
 ORDER BY f.n, r.n;

SELECT table_privs_are('sandbox_store', 'instances', 'sbtap_app', ARRAY[]::name[],
    'the app role has no privilege on table sandbox_store.instances (functions only)');
SELECT table_privs_are('sandbox_store', 'instances', 'sbtap_nobody', ARRAY[]::name[],
    'a role without grants has no privilege on table sandbox_store.instances');
SELECT table_privs_are('sandbox_store', 'instances', 'public', ARRAY[]::name[],
    'PUBLIC has no privilege on table sandbox_store.instances');

-- The tables of the runs and run logs (1.5): nothing for anyone but the
-- owner; the functions reach them.
SELECT table_privs_are('sandbox_store', t, r, ARRAY[]::name[],
           format('%s has no privilege on table sandbox_store.%s', r, t))
  FROM unnest(ARRAY['runs', 'run_logs', 'run_log_entries']::name[]) WITH ORDINALITY t(t, i)
 CROSS JOIN unnest(ARRAY['sbtap_app', 'sbtap_nobody', 'public']::name[]) WITH ORDINALITY r(r, j)
 ORDER BY i, j;

SELECT table_privs_are('sandbox_store', 'leases', 'sbtap_app', ARRAY[]::name[],
    'the app role has no privilege on table sandbox_store.leases (functions only)');
SELECT table_privs_are('sandbox_store', 'leases', 'sbtap_nobody', ARRAY[]::name[],
    'a role without grants has no privilege on table sandbox_store.leases');
SELECT table_privs_are('sandbox_store', 'leases', 'public', ARRAY[]::name[],
    'PUBLIC has no privilege on table sandbox_store.leases');

SELECT sequence_privs_are('sandbox_store', 'fence_seq', 'sbtap_app', ARRAY[]::name[],
    'the app role has no privilege on sequence sandbox_store.fence_seq');
SELECT sequence_privs_are('sandbox_store', 'fence_seq', 'sbtap_nobody', ARRAY[]::name[],
    'a role without grants has no privilege on sequence sandbox_store.fence_seq');
SELECT sequence_privs_are('sandbox_store', 'fence_seq', 'public', ARRAY[]::name[],
    'PUBLIC has no privilege on sequence sandbox_store.fence_seq');

SELECT table_privs_are('sandbox_store', 'claims', 'sbtap_app', ARRAY[]::name[],
    'the README''s two grant lines give the app role nothing on view sandbox_store.claims');
SELECT table_privs_are('sandbox_store', 'claims', 'sbtap_nobody', ARRAY[]::name[],
    'a role without grants has no privilege on view sandbox_store.claims');
SELECT table_privs_are('sandbox_store', 'claims', 'public', ARRAY[]::name[],
    'PUBLIC has no privilege on view sandbox_store.claims');

SELECT schema_privs_are('sandbox_store', 'sbtap_app', ARRAY['USAGE'],
    'the app role has USAGE (only) on schema sandbox_store');
SELECT schema_privs_are('sandbox_store', 'sbtap_nobody', ARRAY[]::name[],
    'a role without grants has no privilege on schema sandbox_store');
SELECT schema_privs_are('sandbox_store', 'public', ARRAY[]::name[],
    'PUBLIC has no privilege on schema sandbox_store');

SELECT * FROM finish();
ROLLBACK;

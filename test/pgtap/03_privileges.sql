-- Security (docs/reference.md): app roles need only USAGE on the schema and EXECUTE on
-- the functions, no privilege on the tables; nothing is granted to PUBLIC.
-- Version 1.1: the same for the new functions; no privilege on the leases
-- table or the fence sequence; the claims view is readable only with a grant
-- of its own (GRANT SELECT ON sandbox_store.claims).
--
-- Roles are created inside the test transaction and vanish with its
-- ROLLBACK:
--   sbtap_app         the two GRANT lines of the README
--   sbtap_usage_only  USAGE on the schema only (shows EXECUTE is not PUBLIC's)
--   sbtap_nobody      nothing at all
BEGIN;
CREATE EXTENSION IF NOT EXISTS sandbox_store;

SELECT plan(127);

CREATE ROLE sbtap_app NOLOGIN;
CREATE ROLE sbtap_usage_only NOLOGIN;
CREATE ROLE sbtap_nobody NOLOGIN;
GRANT USAGE ON SCHEMA sandbox_store TO sbtap_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO sbtap_app;
GRANT USAGE ON SCHEMA sandbox_store TO sbtap_usage_only;

-- The fourteen functions, with their argument types, and one call of each.
CREATE TEMP TABLE fns (n int, name name, args name[], call text) ON COMMIT DROP;
INSERT INTO fns VALUES
    (1, 'sandbox_upsert',
        ARRAY['text', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone', 'bigint'],
        $$SELECT sandbox_store.sandbox_upsert('priv/x', 'p', 'sb', 't')$$),
    (2, 'sandbox_get',      ARRAY['text'],
        $$SELECT * FROM sandbox_store.sandbox_get('priv/x')$$),
    (3, 'sandbox_delete',   ARRAY['text', 'bigint'],
        $$SELECT sandbox_store.sandbox_delete('priv/x')$$),
    (4, 'sandbox_list',     ARRAY['text'],
        $$SELECT * FROM sandbox_store.sandbox_list('t')$$),
    (5, 'sandbox_ensure',   ARRAY['text', 'text', 'interval', 'text', 'interval', 'interval'],
        $$SELECT * FROM sandbox_store.sandbox_ensure('priv/x', 'run')$$),
    (6, 'sandbox_lock',     ARRAY['text', 'interval'],
        $$SELECT sandbox_store.sandbox_lock('priv/x')$$),
    (7, 'sandbox_try_lock', ARRAY['text'],
        $$SELECT sandbox_store.sandbox_try_lock('priv/x')$$),
    (8, 'sandbox_lock_id',  ARRAY['text'],
        $$SELECT sandbox_store.sandbox_lock_id('priv/x')$$),
    (9, 'sandbox_renew',    ARRAY['text', 'uuid', 'interval'],
        $$SELECT sandbox_store.sandbox_renew('priv/x', '00000000-0000-0000-0000-000000000000', '1 minute')$$),
    (10, 'sandbox_release', ARRAY['text', 'uuid'],
        $$SELECT sandbox_store.sandbox_release('priv/x', '00000000-0000-0000-0000-000000000000')$$),
    (11, 'sandbox_reap',    ARRAY['interval', 'integer'],
        $$SELECT * FROM sandbox_store.sandbox_reap('1 day')$$),
    (12, 'sandbox_lock_holder', ARRAY['text'],
        $$SELECT sandbox_store.sandbox_lock_holder('priv/x')$$),
    (13, 'sandbox_claim', ARRAY['text', 'interval', 'interval'],
        $$SELECT * FROM sandbox_store.sandbox_claim('priv/claim', '1 second', wait => '0')$$),
    (14, 'sandbox_upsert_release',
        ARRAY['text', 'bigint', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone'],
        $$SELECT sandbox_store.sandbox_upsert_release('priv/x', 1, 'p', 'sb', 't')$$);
GRANT SELECT ON fns TO PUBLIC;

-- Catalog privileges (42 + 3 + 3 + 3 + 3 + 3 + 3 tests) --------------------

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

-- The app role works through the functions (12 + 9 tests) ------------------

SET LOCAL ROLE sbtap_app;

SELECT is(current_user, 'sbtap_app', 'now running as sbtap_app');

SELECT results_eq(
    $$ SELECT action, key, provider_sandbox_id
         FROM sandbox_store.sandbox_ensure('priv/k1', 'run-1') $$,
    $$ VALUES ('create'::text, NULL::text, NULL::text) $$,
    'app role: sandbox_ensure of a new key returns create'
);

SELECT lives_ok(
    $$ SELECT sandbox_store.sandbox_upsert(key => 'priv/k1', provider => 'e2b',
                                           provider_sandbox_id => 'sbx-1',
                                           thread_id => 'priv/thread',
                                           latest_run_id => 'run-1',
                                           updated_at => '2024-05-06 07:08:09.123+00') $$,
    'app role: sandbox_upsert lives'
);

SELECT results_eq(
    $$ SELECT key::text, provider::text, provider_sandbox_id::text, latest_snapshot_id::text,
              thread_id::text, latest_run_id::text, updated_at
         FROM sandbox_store.sandbox_get('priv/k1') $$,
    $$ VALUES ('priv/k1'::text, 'e2b'::text, 'sbx-1'::text, NULL::text, 'priv/thread'::text,
               'run-1'::text, '2024-05-06 07:08:09.123+00'::timestamptz) $$,
    'app role: sandbox_get returns the record it wrote'
);

SELECT results_eq(
    $$ SELECT key::text, provider_sandbox_id::text FROM sandbox_store.sandbox_list('priv/thread') $$,
    $$ VALUES ('priv/k1'::text, 'sbx-1'::text) $$,
    'app role: sandbox_list returns the thread''s record'
);

SELECT results_eq(
    $$ SELECT action, key, provider_sandbox_id, latest_run_id, updated_at
         FROM sandbox_store.sandbox_ensure('priv/k1', 'run-2') $$,
    $$ VALUES ('resume'::text, 'priv/k1'::text, 'sbx-1'::text, 'run-2'::text, now()) $$,
    'app role: sandbox_ensure of a recorded key returns resume, stamped with run_id and now()'
);

SELECT lives_ok(
    $$ SELECT sandbox_store.sandbox_lock('priv/k2', '1 second') $$,
    'app role: sandbox_lock lives'
);

SELECT is(sandbox_store.sandbox_try_lock('priv/k3'), true,
    'app role: sandbox_try_lock of a free key returns true');

SELECT isnt(sandbox_store.sandbox_lock_id('priv/k1'), NULL::bigint,
    'app role: sandbox_lock_id returns the key''s lock id');

SELECT is(sandbox_store.sandbox_delete('priv/k1'), true,
    'app role: sandbox_delete of its record returns true');

SELECT is_empty(
    $$ SELECT * FROM sandbox_store.sandbox_get('priv/k1') $$,
    'app role: after sandbox_delete, sandbox_get is empty'
);

SELECT is(current_user, 'sbtap_app'::name,
    'app role: the calls left the current user as it was (no identity leaks out of the functions)');

-- Lease mode (1.1).
CREATE TEMP TABLE lease_claim ON COMMIT DROP AS
    SELECT action, fence, owner_token, lease_expires_at
      FROM sandbox_store.sandbox_ensure('priv/lease', 'run-1', lease => '1 minute');

SELECT results_eq(
    $$ SELECT action, fence > 0, owner_token IS NOT NULL, lease_expires_at > now()
         FROM lease_claim $$,
    $$ VALUES ('create'::text, true, true, true) $$,
    'app role: sandbox_ensure with a lease returns a claim (fence, owner_token, lease_expires_at)'
);

SELECT lives_ok(
    $$ SELECT sandbox_store.sandbox_upsert('priv/lease', 'e2b', 'sbx-l', 'priv/thread',
                                           fence => (SELECT fence FROM lease_claim)) $$,
    'app role: a fenced sandbox_upsert with its claim''s fence lives'
);

SELECT ok(
    sandbox_store.sandbox_renew('priv/lease', (SELECT owner_token FROM lease_claim), '2 minutes')
      > (SELECT lease_expires_at FROM lease_claim),
    'app role: sandbox_renew extends its claim'
);

SELECT is(sandbox_store.sandbox_lock_holder('priv/lease'), pg_catalog.pg_backend_pid(),
    'app role: sandbox_lock_holder shows this backend holding the key it claimed in this transaction');

SELECT is_empty(
    $$ SELECT * FROM sandbox_store.sandbox_reap('100 years') $$,
    'app role: sandbox_reap lives (nothing is a hundred years idle)'
);

SELECT throws_ok(
    $$ SELECT * FROM sandbox_store.claims $$,
    '42501', NULL, 'app role: the claims view is denied (42501) without a grant of its own');

RESET ROLE;
GRANT SELECT ON sandbox_store.claims TO sbtap_app;
SET LOCAL ROLE sbtap_app;

SELECT results_eq(
    $$ SELECT key, fence, owner_token FROM sandbox_store.claims $$,
    $$ SELECT 'priv/lease'::text, fence, owner_token FROM lease_claim $$,
    'app role: with GRANT SELECT ON sandbox_store.claims, the view shows its live claim'
);

SELECT is(sandbox_store.sandbox_delete('priv/lease', fence => (SELECT fence FROM lease_claim)), true,
    'app role: a fenced sandbox_delete with its claim''s fence returns true');

SELECT is(sandbox_store.sandbox_release('priv/lease', (SELECT owner_token FROM lease_claim)), true,
    'app role: sandbox_release of its claim returns true');

CREATE TEMP TABLE lease_claim2 ON COMMIT DROP AS
    SELECT fence FROM sandbox_store.sandbox_claim('priv/lease2', '1 minute');
SELECT results_eq(
    $$ SELECT provider_sandbox_id::text
         FROM sandbox_store.sandbox_upsert_release('priv/lease2', (SELECT fence FROM lease_claim2),
                                                   'e2b', 'sbx-l2', 'priv/thread') $$,
    $$ VALUES ('sbx-l2'::text) $$,
    'app role: sandbox_upsert_release with its claim''s fence writes the record'
);
SELECT is_empty(
    $$ SELECT * FROM sandbox_store.claims WHERE key = 'priv/lease2' $$,
    'app role: ... and ends the claim'
);

-- ... but cannot touch the tables or the sequence directly (5 + 5 + 3 + 2) --

SELECT throws_ok(
    $$ SELECT * FROM sandbox_store.instances $$,
    '42501', NULL, 'app role: direct SELECT on sandbox_store.instances is denied (42501)');
SELECT throws_ok(
    $$ INSERT INTO sandbox_store.instances (key, provider, provider_sandbox_id, thread_id, updated_at)
       VALUES ('priv/direct', 'p', 'sb', 't', now()) $$,
    '42501', NULL, 'app role: direct INSERT into sandbox_store.instances is denied (42501)');
SELECT throws_ok(
    $$ UPDATE sandbox_store.instances SET provider = 'hijacked' $$,
    '42501', NULL, 'app role: direct UPDATE of sandbox_store.instances is denied (42501)');
SELECT throws_ok(
    $$ DELETE FROM sandbox_store.instances $$,
    '42501', NULL, 'app role: direct DELETE from sandbox_store.instances is denied (42501)');
SELECT throws_ok(
    $$ TRUNCATE sandbox_store.instances $$,
    '42501', NULL, 'app role: TRUNCATE of sandbox_store.instances is denied (42501)');

SELECT throws_ok(
    $$ SELECT * FROM sandbox_store.leases $$,
    '42501', NULL, 'app role: direct SELECT on sandbox_store.leases is denied (42501)');
SELECT throws_ok(
    $$ INSERT INTO sandbox_store.leases (key, fence) VALUES ('priv/direct', 1) $$,
    '42501', NULL, 'app role: direct INSERT into sandbox_store.leases is denied (42501)');
SELECT throws_ok(
    $$ UPDATE sandbox_store.leases SET fence = 1 $$,
    '42501', NULL, 'app role: direct UPDATE of sandbox_store.leases is denied (42501)');
SELECT throws_ok(
    $$ DELETE FROM sandbox_store.leases $$,
    '42501', NULL, 'app role: direct DELETE from sandbox_store.leases is denied (42501)');
SELECT throws_ok(
    $$ TRUNCATE sandbox_store.leases $$,
    '42501', NULL, 'app role: TRUNCATE of sandbox_store.leases is denied (42501)');

SELECT throws_ok(
    $$ SELECT pg_catalog.nextval('sandbox_store.fence_seq') $$,
    '42501', NULL, 'app role: nextval of sandbox_store.fence_seq is denied (42501)');
SELECT throws_ok(
    $$ SELECT pg_catalog.setval('sandbox_store.fence_seq', 1) $$,
    '42501', NULL, 'app role: setval of sandbox_store.fence_seq is denied (42501)');
SELECT throws_ok(
    $$ SELECT last_value FROM sandbox_store.fence_seq $$,
    '42501', NULL, 'app role: reading sandbox_store.fence_seq is denied (42501)');

SELECT throws_ok(
    $$ UPDATE sandbox_store.claims SET lease_expires_at = now() $$,
    '42501', NULL, 'app role: UPDATE through the claims view is denied (42501)');
SELECT throws_ok(
    $$ DELETE FROM sandbox_store.claims $$,
    '42501', NULL, 'app role: DELETE through the claims view is denied (42501)');

RESET ROLE;

SELECT table_privs_are('sandbox_store', 'claims', 'sbtap_app', ARRAY['SELECT'],
    'after GRANT SELECT ON sandbox_store.claims, the app role has SELECT (only) on the view');

-- A role with nothing: every function call is denied (one test per function) ------------

SET LOCAL ROLE sbtap_nobody;

SELECT throws_ok(f.call, '42501', NULL,
                 'role without grants: ' || f.name || ' is denied (42501)')
  FROM fns AS f ORDER BY f.n;

RESET ROLE;

-- USAGE on the schema is not enough: EXECUTE was never granted to PUBLIC
-- (one test per function; the message shows it is the function that is denied), nor
-- anything on the view, the tables or the sequence (3 tests).

SET LOCAL ROLE sbtap_usage_only;

SELECT throws_ok(f.call, '42501', 'permission denied for function ' || f.name,
                 'role with USAGE only: EXECUTE on ' || f.name || ' is denied (42501)')
  FROM fns AS f ORDER BY f.n;

SELECT throws_ok(
    $$ SELECT * FROM sandbox_store.claims $$,
    '42501', 'permission denied for view claims',
    'role with USAGE only: the claims view is denied (42501)');
SELECT throws_ok(
    $$ SELECT * FROM sandbox_store.leases $$,
    '42501', 'permission denied for table leases',
    'role with USAGE only: table leases is denied (42501)');
SELECT throws_ok(
    $$ SELECT pg_catalog.nextval('sandbox_store.fence_seq') $$,
    '42501', 'permission denied for sequence fence_seq',
    'role with USAGE only: nextval of fence_seq is denied (42501)');

RESET ROLE;

SELECT * FROM finish();
ROLLBACK;

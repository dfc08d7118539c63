-- The SQL interface of SPEC.md: the managed table sandbox_store.instances and
-- the eight functions, with their exact argument types, argument names
-- (callers use named arguments, so names are contract) and return types.
BEGIN;
CREATE EXTENSION IF NOT EXISTS sandbox_store;

SELECT plan(46);

-- The table ---------------------------------------------------------------

SELECT has_schema('sandbox_store', 'schema sandbox_store exists');
SELECT has_table('sandbox_store', 'instances', 'table sandbox_store.instances exists');
SELECT has_pk('sandbox_store', 'instances', 'sandbox_store.instances has a primary key');
SELECT col_is_pk('sandbox_store', 'instances', 'key', 'the primary key of sandbox_store.instances is (key)');

SELECT col_type_is('sandbox_store', 'instances', 'key',                 'text',                     'instances.key is text');
SELECT col_type_is('sandbox_store', 'instances', 'provider',            'text',                     'instances.provider is text');
SELECT col_type_is('sandbox_store', 'instances', 'provider_sandbox_id', 'text',                     'instances.provider_sandbox_id is text');
SELECT col_type_is('sandbox_store', 'instances', 'latest_snapshot_id',  'text',                     'instances.latest_snapshot_id is text');
SELECT col_type_is('sandbox_store', 'instances', 'thread_id',           'text',                     'instances.thread_id is text');
SELECT col_type_is('sandbox_store', 'instances', 'latest_run_id',       'text',                     'instances.latest_run_id is text');
SELECT col_type_is('sandbox_store', 'instances', 'updated_at',          'timestamp with time zone', 'instances.updated_at is timestamptz');

SELECT col_not_null('sandbox_store', 'instances', 'key',                 'instances.key is NOT NULL');
SELECT col_not_null('sandbox_store', 'instances', 'provider',            'instances.provider is NOT NULL');
SELECT col_not_null('sandbox_store', 'instances', 'provider_sandbox_id', 'instances.provider_sandbox_id is NOT NULL');
SELECT col_is_null ('sandbox_store', 'instances', 'latest_snapshot_id',  'instances.latest_snapshot_id is nullable');
SELECT col_not_null('sandbox_store', 'instances', 'thread_id',           'instances.thread_id is NOT NULL');
SELECT col_is_null ('sandbox_store', 'instances', 'latest_run_id',       'instances.latest_run_id is nullable');
SELECT col_not_null('sandbox_store', 'instances', 'updated_at',          'instances.updated_at is NOT NULL');

SELECT is_indexed('sandbox_store', 'instances', ARRAY['thread_id'],  'instances has an index on (thread_id) for sandbox_list');
SELECT is_indexed('sandbox_store', 'instances', ARRAY['updated_at'], 'instances has an index on (updated_at) for sweeps');

SELECT ok(
    (SELECT 'sandbox_store.instances'::regclass = ANY (extconfig)
       FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store'),
    'instances is registered with pg_extension_config_dump (rows survive pg_dump)'
);

-- The functions: existence with exact argument types ----------------------

SELECT has_function('sandbox_store', 'sandbox_upsert',
    ARRAY['text', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone'],
    'sandbox_upsert(text, text, text, text, text, text, timestamptz) exists');
SELECT has_function('sandbox_store', 'sandbox_get',      ARRAY['text'], 'sandbox_get(text) exists');
SELECT has_function('sandbox_store', 'sandbox_delete',   ARRAY['text'], 'sandbox_delete(text) exists');
SELECT has_function('sandbox_store', 'sandbox_list',     ARRAY['text'], 'sandbox_list(text) exists');
SELECT has_function('sandbox_store', 'sandbox_ensure',
    ARRAY['text', 'text', 'interval', 'text', 'interval'],
    'sandbox_ensure(text, text, interval, text, interval) exists');
SELECT has_function('sandbox_store', 'sandbox_lock',     ARRAY['text', 'interval'], 'sandbox_lock(text, interval) exists');
SELECT has_function('sandbox_store', 'sandbox_try_lock', ARRAY['text'], 'sandbox_try_lock(text) exists');
SELECT has_function('sandbox_store', 'sandbox_lock_id',  ARRAY['text'], 'sandbox_lock_id(text) exists');

-- Return types -------------------------------------------------------------

SELECT function_returns('sandbox_store', 'sandbox_upsert',
    ARRAY['text', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone'],
    'sandbox_store.instances', 'sandbox_upsert returns sandbox_store.instances');
SELECT function_returns('sandbox_store', 'sandbox_get', ARRAY['text'],
    'setof sandbox_store.instances', 'sandbox_get returns SETOF sandbox_store.instances');
SELECT function_returns('sandbox_store', 'sandbox_delete', ARRAY['text'],
    'boolean', 'sandbox_delete returns boolean');
SELECT function_returns('sandbox_store', 'sandbox_list', ARRAY['text'],
    'setof sandbox_store.instances', 'sandbox_list returns SETOF sandbox_store.instances');
SELECT function_returns('sandbox_store', 'sandbox_ensure',
    ARRAY['text', 'text', 'interval', 'text', 'interval'],
    'setof record', 'sandbox_ensure returns a table (SETOF record)');
SELECT function_returns('sandbox_store', 'sandbox_lock', ARRAY['text', 'interval'],
    'void', 'sandbox_lock returns void');
SELECT function_returns('sandbox_store', 'sandbox_try_lock', ARRAY['text'],
    'boolean', 'sandbox_try_lock returns boolean');
SELECT function_returns('sandbox_store', 'sandbox_lock_id', ARRAY['text'],
    'bigint', 'sandbox_lock_id returns bigint');

SELECT is(
    pg_catalog.pg_get_function_result(
        'sandbox_store.sandbox_ensure(text, text, interval, text, interval)'::regprocedure),
    'TABLE(action text, key text, provider text, provider_sandbox_id text, '
    'latest_snapshot_id text, thread_id text, latest_run_id text, '
    'updated_at timestamp with time zone)',
    'sandbox_ensure returns TABLE(action, then every instances column in table order)'
);

-- Argument names and defaults (the named-argument contract) ----------------

SELECT is(
    pg_catalog.pg_get_function_arguments(
        'sandbox_store.sandbox_upsert(text, text, text, text, text, text, timestamptz)'::regprocedure),
    'key text, provider text, provider_sandbox_id text, thread_id text, '
    'latest_snapshot_id text DEFAULT NULL::text, latest_run_id text DEFAULT NULL::text, '
    'updated_at timestamp with time zone DEFAULT now()',
    'sandbox_upsert arguments: key, provider, provider_sandbox_id, thread_id, '
    'latest_snapshot_id DEFAULT NULL, latest_run_id DEFAULT NULL, updated_at DEFAULT now()'
);
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_get(text)'::regprocedure),
    'key text', 'sandbox_get argument: key');
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_delete(text)'::regprocedure),
    'key text', 'sandbox_delete argument: key');
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_list(text)'::regprocedure),
    'thread_id text', 'sandbox_list argument: thread_id');
SELECT is(
    pg_catalog.pg_get_function_arguments(
        'sandbox_store.sandbox_ensure(text, text, interval, text, interval)'::regprocedure),
    'key text, run_id text, max_age interval DEFAULT NULL::interval, '
    'provider text DEFAULT NULL::text, wait interval DEFAULT NULL::interval',
    'sandbox_ensure arguments: key, run_id, max_age DEFAULT NULL, provider DEFAULT NULL, wait DEFAULT NULL'
);
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_lock(text, interval)'::regprocedure),
    'key text, wait interval DEFAULT NULL::interval', 'sandbox_lock arguments: key, wait DEFAULT NULL');
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_try_lock(text)'::regprocedure),
    'key text', 'sandbox_try_lock argument: key');
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_lock_id(text)'::regprocedure),
    'key text', 'sandbox_lock_id argument: key');

SELECT * FROM finish();
ROLLBACK;

-- The SQL interface (docs/reference.md) at version 1.1: the managed table
-- sandbox_store.instances, the lease-mode objects (table leases, sequence
-- fence_seq, view claims) and the fifteen functions, with their exact argument
-- types, argument names (callers use named arguments, so names are contract)
-- and return types.
BEGIN;
DO $i$ BEGIN IF to_regnamespace('sandbox_store_harness') IS NULL THEN CREATE EXTENSION IF NOT EXISTS sandbox_store; ELSE PERFORM sandbox_store_harness.install(); END IF; END $i$;

SELECT plan(123);

-- Which edition is installed: c, pg_tle or plain (the SQL edition's plain
-- script makes no extension, so what concerns pg_extension is skipped for
-- it, and the guard exists in the C edition only: docs/reference.md,
-- "Editions").
CREATE TEMP TABLE edition AS SELECT * FROM sandbox_store.edition();

-- The table ---------------------------------------------------------------

SELECT has_schema('sandbox_store', 'schema sandbox_store exists');
SELECT has_table('sandbox_store', 'instances', 'table sandbox_store.instances exists');
SELECT has_pk('sandbox_store', 'instances', 'sandbox_store.instances has a primary key');
SELECT col_is_pk('sandbox_store', 'instances', 'key', 'the primary key of sandbox_store.instances is (key)');

SELECT col_type_is('sandbox_store', 'instances', 'key', 'sandbox_store.bounded_text', 'instances.key is bounded_text');
SELECT col_type_is('sandbox_store', 'instances', 'provider', 'sandbox_store.bounded_text', 'instances.provider is bounded_text');
SELECT col_type_is('sandbox_store', 'instances', 'provider_sandbox_id', 'sandbox_store.bounded_text', 'instances.provider_sandbox_id is bounded_text');
SELECT col_type_is('sandbox_store', 'instances', 'latest_snapshot_id', 'sandbox_store.bounded_text', 'instances.latest_snapshot_id is bounded_text');
SELECT col_type_is('sandbox_store', 'instances', 'thread_id', 'sandbox_store.bounded_text', 'instances.thread_id is bounded_text');
SELECT col_type_is('sandbox_store', 'instances', 'latest_run_id', 'sandbox_store.bounded_text', 'instances.latest_run_id is bounded_text');
SELECT col_type_is('sandbox_store', 'instances', 'updated_at',          'timestamp with time zone', 'instances.updated_at is timestamptz');

SELECT col_not_null('sandbox_store', 'instances', 'key',                 'instances.key is NOT NULL');
SELECT col_not_null('sandbox_store', 'instances', 'provider',            'instances.provider is NOT NULL');
SELECT col_not_null('sandbox_store', 'instances', 'provider_sandbox_id', 'instances.provider_sandbox_id is NOT NULL');
SELECT col_is_null ('sandbox_store', 'instances', 'latest_snapshot_id',  'instances.latest_snapshot_id is nullable');
SELECT col_not_null('sandbox_store', 'instances', 'thread_id',           'instances.thread_id is NOT NULL');
SELECT col_is_null ('sandbox_store', 'instances', 'latest_run_id',       'instances.latest_run_id is nullable');
SELECT col_not_null('sandbox_store', 'instances', 'updated_at',          'instances.updated_at is NOT NULL');

SELECT is_indexed('sandbox_store', 'instances', ARRAY['thread_id'],  'instances has an index on (thread_id) for sandbox_list');
-- 1.2: the length rule is the domain bounded_text (text, 1..1024 bytes) ...
SELECT domain_type_is('sandbox_store', 'bounded_text', 'text', 'bounded_text is a domain over text');
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_constraint
            WHERE contypid = 'sandbox_store.bounded_text'::regtype
              AND pg_catalog.pg_get_constraintdef(oid) LIKE '%octet_length(VALUE) >= 1%<= 1024%'),
    1, 'bounded_text checks 1..1024 bytes');
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_constraint
            WHERE conrelid = 'sandbox_store.instances'::regclass AND contype = 'c'),
    0, 'instances has no table CHECK constraints (the domain replaces them)');
-- ... and resume stamps are HOT updates: no index reads a column a stamp
-- writes (latest_run_id, updated_at), and pages keep free space.
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_index i
            WHERE i.indrelid = 'sandbox_store.instances'::regclass
              AND (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL
                   OR (SELECT attnum FROM pg_catalog.pg_attribute WHERE attrelid = i.indrelid AND attname = 'latest_run_id') = ANY (i.indkey::int2[])
                   OR (SELECT attnum FROM pg_catalog.pg_attribute WHERE attrelid = i.indrelid AND attname = 'updated_at') = ANY (i.indkey::int2[]))),
    0, 'no index of instances covers latest_run_id or updated_at (resume stamps can be HOT)');
SELECT is((SELECT reloptions FROM pg_catalog.pg_class WHERE oid = 'sandbox_store.instances'::regclass),
    ARRAY['fillfactor=90'], 'instances has fillfactor 90');

SELECT CASE WHEN (SELECT edition FROM edition) = 'plain'
            THEN skip('the plain script makes no extension', 1)
            ELSE ok(
    (SELECT 'sandbox_store.instances'::regclass = ANY (extconfig)
       FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store'),
    'instances is registered with pg_extension_config_dump (rows survive pg_dump)') END;

-- Lease mode (1.1): the leases table, the fence sequence, the claims view ---

SELECT is((SELECT version FROM edition), '1.9.0', 'the installed version is 1.9.0');

SELECT has_table('sandbox_store', 'leases', 'table sandbox_store.leases exists');
SELECT col_is_pk('sandbox_store', 'leases', 'key', 'the primary key of sandbox_store.leases is (key)');
SELECT columns_are('sandbox_store', 'leases',
    ARRAY['key', 'fence', 'owner_token', 'lease_expires_at'],
    'leases has the columns key, fence, owner_token, lease_expires_at');
SELECT col_type_is('sandbox_store', 'leases', 'key',              'text',                     'leases.key is text');
SELECT col_type_is('sandbox_store', 'leases', 'fence',            'bigint',                   'leases.fence is bigint');
SELECT col_type_is('sandbox_store', 'leases', 'owner_token',      'uuid',                     'leases.owner_token is uuid');
SELECT col_type_is('sandbox_store', 'leases', 'lease_expires_at', 'timestamp with time zone', 'leases.lease_expires_at is timestamptz');
SELECT col_not_null('sandbox_store', 'leases', 'key',              'leases.key is NOT NULL');
SELECT col_not_null('sandbox_store', 'leases', 'fence',            'leases.fence is NOT NULL');
SELECT col_is_null ('sandbox_store', 'leases', 'owner_token',      'leases.owner_token is nullable (NULL: no claim, the row keeps the fence)');
SELECT col_is_null ('sandbox_store', 'leases', 'lease_expires_at', 'leases.lease_expires_at is nullable');
SELECT CASE WHEN (SELECT edition FROM edition) = 'plain'
            THEN skip('the plain script makes no extension', 1)
            ELSE ok(
    (SELECT 'sandbox_store.leases'::regclass = ANY (extconfig)
       FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store'),
    'leases is registered with pg_extension_config_dump (fences survive pg_dump)') END;

SELECT has_sequence('sandbox_store', 'fence_seq', 'sequence sandbox_store.fence_seq exists');
SELECT results_eq(
    $$ SELECT seqtypid::regtype::text, seqstart, seqincrement, seqmin, seqcycle
         FROM pg_catalog.pg_sequence WHERE seqrelid = 'sandbox_store.fence_seq'::regclass $$,
    $$ VALUES ('bigint'::text, 1::bigint, 1::bigint, 1::bigint, false) $$,
    'fence_seq is a bigint sequence from 1 by 1 that never cycles (fences are never reused)'
);
SELECT CASE WHEN (SELECT edition FROM edition) = 'plain'
            THEN skip('the plain script makes no extension', 1)
            ELSE ok(
    (SELECT 'sandbox_store.fence_seq'::regclass = ANY (extconfig)
       FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store'),
    'fence_seq is registered with pg_extension_config_dump (its position survives pg_dump)') END;

SELECT has_view('sandbox_store', 'claims', 'view sandbox_store.claims exists');
SELECT columns_are('sandbox_store', 'claims',
    ARRAY['key', 'fence', 'owner_token', 'lease_expires_at'],
    'claims has the columns key, fence, owner_token, lease_expires_at');
SELECT col_type_is('sandbox_store', 'claims', 'fence',            'bigint',                   'claims.fence is bigint');
SELECT col_type_is('sandbox_store', 'claims', 'owner_token',      'uuid',                     'claims.owner_token is uuid');
SELECT col_type_is('sandbox_store', 'claims', 'lease_expires_at', 'timestamp with time zone', 'claims.lease_expires_at is timestamptz');

-- The functions: existence with exact argument types ----------------------

-- The interface, and nothing else: the helpers (names starting with an
-- underscore) are in schema sandbox_store_internal (1.4.1).
SELECT set_eq(
    $$ SELECT p.proname::text FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = 'sandbox_store'::regnamespace $$,
    ARRAY['sandbox_upsert', 'sandbox_get', 'sandbox_delete', 'sandbox_list', 'sandbox_ensure',
          'sandbox_lock', 'sandbox_try_lock', 'sandbox_lock_id', 'sandbox_renew',
          'sandbox_release', 'sandbox_reap', 'sandbox_lock_holder', 'sandbox_claim', 'distribute',
          'sandbox_upsert_release', 'unsupported_changes', 'edition',
          'checkpoint_acquire_writer', 'checkpoint_renew_writer', 'checkpoint_release_writer',
          'checkpoint_append', 'checkpoint_delete_head', 'checkpoint_fork', 'checkpoint_get',
          'checkpoint_list', 'checkpoint_head', 'checkpoint_blob_references',
          'run_create_or_resume', 'run_get', 'run_update', 'run_list_by_thread', 'run_list_reclaimable',
          'run_find_active', 'run_claim', 'run_log_append', 'run_log_upsert', 'run_log_close',
          'run_log_read', 'run_log_status', 'run_log_watch', 'run_log_prune', 'run_log_wake']
      || CASE WHEN (SELECT edition FROM edition) = 'c' THEN ARRAY['guard'] ELSE ARRAY[]::text[] END,
    'schema sandbox_store has exactly the thirteen functions of 1.1, distribute and sandbox_upsert_release (1.3), unsupported_changes, edition and the ten checkpoint functions (1.4), the fourteen run functions (1.5), run_log_wake (1.7.0), and in the C edition guard; no helper (1.4.1)');
SELECT has_function('sandbox_store', 'distribute', ARRAY[]::text[], 'distribute() exists');
SELECT function_returns('sandbox_store', 'distribute', ARRAY[]::text[], 'void', 'distribute returns void');
SELECT function_returns('sandbox_store', 'unsupported_changes', ARRAY[]::text[], 'setof text',
    'unsupported_changes returns setof text');
SELECT CASE WHEN (SELECT edition FROM edition) <> 'c'
            THEN skip('the SQL edition has no guard: an event trigger needs a superuser', 2)
            ELSE function_returns('sandbox_store', 'guard', ARRAY[]::text[], 'event_trigger',
                                  'guard is an event trigger function') END;
SELECT is(
    (SELECT pg_catalog.format('%s %s %s', e.evtevent, e.evtfoid::regprocedure, e.evtenabled)
       FROM pg_catalog.pg_event_trigger e
       JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_event_trigger'::regclass
        AND d.objid = e.oid AND d.deptype = 'e'
        AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store')
      WHERE e.evtname = 'sandbox_store_guard'),
    'ddl_command_end sandbox_store.guard() O',
    'the event trigger sandbox_store_guard belongs to the extension and is enabled (1.4)')
 WHERE (SELECT edition FROM edition) = 'c';
SELECT is_empty($$ SELECT * FROM sandbox_store.unsupported_changes() $$,
    'the relations are as the extension made them');

SELECT has_function('sandbox_store', 'sandbox_upsert',
    ARRAY['text', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone', 'bigint'],
    'sandbox_upsert(text, text, text, text, text, text, timestamptz, bigint) exists');
SELECT has_function('sandbox_store', 'sandbox_upsert_release',
    ARRAY['text', 'bigint', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone'],
    'sandbox_upsert_release(text, bigint, text, text, text, text, text, timestamptz) exists');
SELECT has_function('sandbox_store', 'sandbox_get',      ARRAY['text'], 'sandbox_get(text) exists');
SELECT has_function('sandbox_store', 'sandbox_delete',   ARRAY['text', 'bigint'], 'sandbox_delete(text, bigint) exists');
SELECT has_function('sandbox_store', 'sandbox_list',     ARRAY['text'], 'sandbox_list(text) exists');
SELECT has_function('sandbox_store', 'sandbox_ensure',
    ARRAY['text', 'text', 'interval', 'text', 'interval', 'interval'],
    'sandbox_ensure(text, text, interval, text, interval, interval) exists');
SELECT has_function('sandbox_store', 'sandbox_lock',     ARRAY['text', 'interval'], 'sandbox_lock(text, interval) exists');
SELECT has_function('sandbox_store', 'sandbox_try_lock', ARRAY['text'], 'sandbox_try_lock(text) exists');
SELECT has_function('sandbox_store', 'sandbox_lock_id',  ARRAY['text'], 'sandbox_lock_id(text) exists');
SELECT has_function('sandbox_store', 'sandbox_renew',    ARRAY['text', 'uuid', 'interval'], 'sandbox_renew(text, uuid, interval) exists');
SELECT has_function('sandbox_store', 'sandbox_release',  ARRAY['text', 'uuid'], 'sandbox_release(text, uuid) exists');
SELECT has_function('sandbox_store', 'sandbox_reap',     ARRAY['interval', 'integer'], 'sandbox_reap(interval, integer) exists');
SELECT has_function('sandbox_store', 'sandbox_lock_holder', ARRAY['text'], 'sandbox_lock_holder(text) exists');
SELECT has_function('sandbox_store', 'sandbox_claim', ARRAY['text', 'interval', 'interval'], 'sandbox_claim(text, interval, interval) exists');

-- The 1.0 signatures are replaced, not overloaded (a call by name has one target).
SELECT hasnt_function('sandbox_store', 'sandbox_upsert',
    ARRAY['text', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone'],
    'the 1.0 sandbox_upsert(text, text, text, text, text, text, timestamptz) is gone');
SELECT hasnt_function('sandbox_store', 'sandbox_delete', ARRAY['text'],
    'the 1.0 sandbox_delete(text) is gone');
SELECT hasnt_function('sandbox_store', 'sandbox_ensure',
    ARRAY['text', 'text', 'interval', 'text', 'interval'],
    'the 1.0 sandbox_ensure(text, text, interval, text, interval) is gone');

-- Return types -------------------------------------------------------------

SELECT function_returns('sandbox_store', 'sandbox_upsert',
    ARRAY['text', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone', 'bigint'],
    'sandbox_store.instances', 'sandbox_upsert returns sandbox_store.instances');
SELECT function_returns('sandbox_store', 'sandbox_get', ARRAY['text'],
    'setof sandbox_store.instances', 'sandbox_get returns SETOF sandbox_store.instances');
SELECT function_returns('sandbox_store', 'sandbox_delete', ARRAY['text', 'bigint'],
    'boolean', 'sandbox_delete returns boolean');
SELECT function_returns('sandbox_store', 'sandbox_list', ARRAY['text'],
    'setof sandbox_store.instances', 'sandbox_list returns SETOF sandbox_store.instances');
SELECT function_returns('sandbox_store', 'sandbox_ensure',
    ARRAY['text', 'text', 'interval', 'text', 'interval', 'interval'],
    'setof sandbox_store.ensure_result', 'sandbox_ensure returns SETOF sandbox_store.ensure_result');
SELECT function_returns('sandbox_store', 'sandbox_lock', ARRAY['text', 'interval'],
    'void', 'sandbox_lock returns void');
SELECT function_returns('sandbox_store', 'sandbox_try_lock', ARRAY['text'],
    'boolean', 'sandbox_try_lock returns boolean');
SELECT function_returns('sandbox_store', 'sandbox_lock_id', ARRAY['text'],
    'bigint', 'sandbox_lock_id returns bigint');
SELECT function_returns('sandbox_store', 'sandbox_renew', ARRAY['text', 'uuid', 'interval'],
    'timestamp with time zone', 'sandbox_renew returns timestamptz (the new expiry)');
SELECT function_returns('sandbox_store', 'sandbox_release', ARRAY['text', 'uuid'],
    'boolean', 'sandbox_release returns boolean');
SELECT function_returns('sandbox_store', 'sandbox_upsert_release',
    ARRAY['text', 'bigint', 'text', 'text', 'text', 'text', 'text', 'timestamp with time zone'],
    'sandbox_store.instances', 'sandbox_upsert_release returns sandbox_store.instances');
SELECT function_returns('sandbox_store', 'sandbox_reap', ARRAY['interval', 'integer'],
    'setof sandbox_store.instances', 'sandbox_reap returns SETOF sandbox_store.instances');
SELECT function_returns('sandbox_store', 'sandbox_lock_holder', ARRAY['text'],
    'integer', 'sandbox_lock_holder returns integer (a pid)');
SELECT function_returns('sandbox_store', 'sandbox_claim', ARRAY['text', 'interval', 'interval'],
    'setof record', 'sandbox_claim returns a table (SETOF record)');

SELECT is(
    (SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod), ', '
                                  ORDER BY a.attnum)
       FROM pg_catalog.pg_attribute a
      WHERE a.attrelid = 'sandbox_store.ensure_result'::regclass AND a.attnum > 0),
    'action text, key text, provider text, provider_sandbox_id text, '
    'latest_snapshot_id text, thread_id text, latest_run_id text, '
    'updated_at timestamp with time zone, fence bigint, owner_token uuid, '
    'lease_expires_at timestamp with time zone',
    'sandbox_ensure returns (action, every instances column in table order, then fence, owner_token, lease_expires_at)'
);

-- Argument names and defaults (the named-argument contract) ----------------

SELECT is(
    pg_catalog.pg_get_function_arguments(
        'sandbox_store.sandbox_upsert(text, text, text, text, text, text, timestamptz, bigint)'::regprocedure),
    'key text, provider text, provider_sandbox_id text, thread_id text, '
    'latest_snapshot_id text DEFAULT NULL::text, latest_run_id text DEFAULT NULL::text, '
    'updated_at timestamp with time zone DEFAULT now(), fence bigint DEFAULT NULL::bigint',
    'sandbox_upsert arguments: key, provider, provider_sandbox_id, thread_id, '
    'latest_snapshot_id DEFAULT NULL, latest_run_id DEFAULT NULL, updated_at DEFAULT now(), '
    'fence DEFAULT NULL'
);
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_get(text)'::regprocedure),
    'key text', 'sandbox_get argument: key');
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_delete(text, bigint)'::regprocedure),
    'key text, fence bigint DEFAULT NULL::bigint', 'sandbox_delete arguments: key, fence DEFAULT NULL');
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_list(text)'::regprocedure),
    'thread_id text', 'sandbox_list argument: thread_id');
SELECT is(
    pg_catalog.pg_get_function_arguments(
        'sandbox_store.sandbox_ensure(text, text, interval, text, interval, interval)'::regprocedure),
    'key text, run_id text, max_age interval DEFAULT NULL::interval, '
    'provider text DEFAULT NULL::text, wait interval DEFAULT NULL::interval, '
    'lease interval DEFAULT NULL::interval',
    'sandbox_ensure arguments: key, run_id, max_age DEFAULT NULL, provider DEFAULT NULL, '
    'wait DEFAULT NULL, lease DEFAULT NULL'
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
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_renew(text, uuid, interval)'::regprocedure),
    'key text, owner_token uuid, lease interval', 'sandbox_renew arguments: key, owner_token, lease');
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_release(text, uuid)'::regprocedure),
    'key text, owner_token uuid', 'sandbox_release arguments: key, owner_token');
SELECT is(
    pg_catalog.pg_get_function_arguments(
        'sandbox_store.sandbox_upsert_release(text, bigint, text, text, text, text, text, timestamptz)'::regprocedure),
    'key text, fence bigint, provider text, provider_sandbox_id text, thread_id text, latest_snapshot_id text DEFAULT NULL::text, latest_run_id text DEFAULT NULL::text, updated_at timestamp with time zone DEFAULT now()',
    'sandbox_upsert_release arguments: key, fence, then sandbox_upsert''s record arguments');
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_reap(interval, integer)'::regprocedure),
    'idle_for interval, max_rows integer DEFAULT 100', 'sandbox_reap arguments: idle_for, max_rows DEFAULT 100');
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_lock_holder(text)'::regprocedure),
    'key text', 'sandbox_lock_holder argument: key');
SELECT is(
    pg_catalog.pg_get_function_arguments('sandbox_store.sandbox_claim(text, interval, interval)'::regprocedure),
    'key text, lease interval, wait interval DEFAULT NULL::interval', 'sandbox_claim arguments: key, lease, wait DEFAULT NULL');

-- Volatility: everything that writes or reads the newest state is VOLATILE.
SELECT is_empty(
    $$ SELECT p.proname FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = 'sandbox_store'::regnamespace
          AND p.proname IN ('sandbox_ensure', 'sandbox_upsert', 'sandbox_delete', 'sandbox_renew',
                            'sandbox_release', 'sandbox_reap', 'sandbox_lock_holder', 'sandbox_claim',
                            'sandbox_upsert_release')
          AND p.provolatile <> 'v' $$,
    'the functions that write, claim or look at locks are VOLATILE'
);

-- The checkpoint store (1.4; ids and writers 1.9.0) -----------------------

SELECT col_is_pk('sandbox_store', 'checkpoints', ARRAY['thread_id', 'id'],
    'the primary key of sandbox_store.checkpoints is (thread_id, id): on Citus it is distributed by thread');
SELECT columns_are('sandbox_store', 'checkpoint_ids', ARRAY['id', 'thread_id'],
    'checkpoint_ids has the columns id, thread_id');
SELECT col_is_pk('sandbox_store', 'checkpoint_ids', 'id',
    'the primary key of sandbox_store.checkpoint_ids is (id): an id is unique over all threads');
SELECT columns_are('sandbox_store', 'checkpoint_writers', ARRAY['thread_id', 'fence', 'owner_token', 'lease_expires_at'],
    'checkpoint_writers has the columns thread_id, fence, owner_token, lease_expires_at');
SELECT col_is_pk('sandbox_store', 'checkpoint_writers', 'thread_id',
    'the primary key of sandbox_store.checkpoint_writers is (thread_id)');
SELECT CASE WHEN (SELECT edition FROM edition) = 'plain'
            THEN skip('the plain script makes no extension', 1)
            ELSE ok(
    (SELECT ARRAY['sandbox_store.checkpoints', 'sandbox_store.checkpoint_heads', 'sandbox_store.checkpoint_ids',
                  'sandbox_store.checkpoint_writers']::regclass[]::oid[]
            <@ extconfig FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store'),
    'checkpoints, checkpoint_heads, checkpoint_ids and checkpoint_writers are registered with pg_extension_config_dump') END;

-- Runs and run logs (1.5) --------------------------------------------------

SELECT columns_are('sandbox_store', 'runs',
    ARRAY['run_id', 'thread_id', 'status', 'started_at', 'finished_at', 'error', 'usage',
          'sandbox_key', 'detached_since', 'cancel_requested', 'driver_epoch', 'max_driver_epoch'],
    'runs has the columns of a RunRecord, driver_epoch and max_driver_epoch (the highest epoch the run had)');
SELECT col_is_pk('sandbox_store', 'runs', 'run_id', 'the primary key of sandbox_store.runs is (run_id)');
SELECT is((SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod)
                                        || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY a.attnum)
             FROM pg_catalog.pg_attribute a
            WHERE a.attrelid = 'sandbox_store.runs'::regclass AND a.attnum > 0 AND NOT a.attisdropped),
    'run_id text not null, thread_id text not null, status text not null, started_at double precision not null, '
    'finished_at double precision, error jsonb, usage jsonb, sandbox_key text, detached_since double precision, '
    'cancel_requested boolean, driver_epoch bigint, max_driver_epoch bigint',
    'runs: the types (times are float8, exactly the JavaScript numbers) and NOT NULL of its columns');
SELECT col_has_check('sandbox_store', 'runs', ARRAY['driver_epoch', 'max_driver_epoch'],
    'runs: a CHECK keeps max_driver_epoch set and at or above driver_epoch whenever the run has a driver epoch');
SELECT is_indexed('sandbox_store', 'runs', ARRAY['thread_id', 'started_at', 'run_id'],
    'runs has an index on (thread_id, started_at, run_id) for run_list_by_thread and run_find_active');
SELECT is((SELECT pg_catalog.pg_get_expr(i.indpred, i.indrelid) FROM pg_catalog.pg_index i
            WHERE i.indexrelid = 'sandbox_store.runs_detached_idx'::regclass),
    '((status = ''running''::text) AND (detached_since IS NOT NULL))',
    'runs has a partial index on detached_since of the detached running runs, for run_list_reclaimable');
SELECT columns_are('sandbox_store', 'run_logs', ARRAY['run_id', 'last_seq', 'closed_at', 'updated_at', 'watched'],
    'run_logs has the columns run_id, last_seq, closed_at, updated_at, watched');
SELECT col_is_pk('sandbox_store', 'run_logs', 'run_id', 'the primary key of sandbox_store.run_logs is (run_id)');
SELECT col_default_is('sandbox_store', 'run_logs', 'last_seq', '0', 'run_logs.last_seq starts at 0');
SELECT columns_are('sandbox_store', 'run_log_entries', ARRAY['run_id', 'seq', 'chunk'],
    'run_log_entries has the columns run_id, seq, chunk');
SELECT col_is_pk('sandbox_store', 'run_log_entries', ARRAY['run_id', 'seq'],
    'the primary key of sandbox_store.run_log_entries is (run_id, seq)');
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_constraint
            WHERE conrelid = 'sandbox_store.run_log_entries'::regclass AND contype = 'f'),
    0, 'run_log_entries has no foreign key (the append path does without its cost)');
SELECT CASE WHEN (SELECT edition FROM edition) = 'plain'
            THEN skip('the plain script makes no extension', 1)
            ELSE ok(
    (SELECT ARRAY['sandbox_store.runs', 'sandbox_store.run_logs', 'sandbox_store.run_log_entries']::regclass[]::oid[]
            <@ extconfig FROM pg_catalog.pg_extension WHERE extname = 'sandbox_store'),
    'runs, run_logs and run_log_entries are registered with pg_extension_config_dump') END;
SELECT results_eq(
    $$ SELECT p.proname::text COLLATE "default", pg_catalog.pg_get_function_arguments(p.oid), pg_catalog.pg_get_function_result(p.oid),
              p.provolatile::text, p.prosecdef OR l.lanname = 'c'
         FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
        WHERE p.pronamespace = 'sandbox_store'::regnamespace AND p.proname LIKE 'run\_%'
        ORDER BY p.proname, p.pronargs $$,
    $$ VALUES
       ('run_claim', 'run_id text', 'bigint', 'v', true),
       ('run_create_or_resume', 'run_id text, thread_id text, started_at double precision, status text DEFAULT ''running''::text', 'jsonb', 'v', true),
       ('run_find_active', 'thread_id text', 'jsonb', 's', true),
       ('run_get', 'run_id text', 'jsonb', 's', true),
       ('run_list_by_thread', 'thread_id text', 'SETOF jsonb', 's', true),
       ('run_list_reclaimable', 'now double precision, ttl_ms double precision', 'SETOF jsonb', 's', true),
       ('run_log_append', 'run_id text, chunks jsonb, epoch bigint DEFAULT NULL::bigint', 'bigint[]', 'v', true),
       ('run_log_append', 'run_id text, chunks jsonb, epoch bigint, notify boolean', 'bigint[]', 'v', true),
       ('run_log_close', 'run_id text, epoch bigint DEFAULT NULL::bigint', 'boolean', 'v', true),
       ('run_log_prune', 'older_than interval, max_logs integer DEFAULT NULL::integer', 'bigint', 'v', true),
       ('run_log_read', 'run_id text, after bigint DEFAULT 0, max_rows integer DEFAULT NULL::integer', 'TABLE(seq bigint, chunk jsonb)', 's', true),
       ('run_log_status', 'run_id text', 'TABLE(last_seq bigint, closed boolean)', 's', true),
       ('run_log_upsert', 'run_id text, seqs bigint[], chunks jsonb, epoch bigint DEFAULT NULL::bigint', 'bigint[]', 'v', true),
       ('run_log_wake', 'VARIADIC run_ids text[]', 'integer', 'v', true),
       ('run_log_watch', 'run_id text', 'TABLE(last_seq bigint, closed boolean)', 'v', true),
       ('run_update', 'run_id text, patch jsonb, epoch bigint DEFAULT NULL::bigint', 'boolean', 'v', true) $$,
    'the run functions: argument names and defaults, results, volatility, SECURITY DEFINER (or C: run_log_append in the C edition runs its statements as the tables'' owner)');
SELECT is_empty(
    $$ SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
        WHERE p.pronamespace IN ('sandbox_store'::regnamespace, 'sandbox_store_internal'::regnamespace)
          AND (p.proname LIKE 'run\_%' OR p.proname LIKE '\_run\_%')
          AND NOT 'search_path=pg_catalog, pg_temp' = ANY (p.proconfig)
          AND p.prolang <> (SELECT oid FROM pg_catalog.pg_language WHERE lanname = 'c') $$,
    'every run function and helper but a C one runs with search_path pg_catalog, pg_temp');
SELECT is_empty(
    $$ SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = 'sandbox_store'::regnamespace AND p.proname LIKE 'run\_%'
          AND NOT 'row_security=off' = ANY (p.proconfig) $$,
    'every run function runs with row_security off');
SELECT is_empty(
    $$ SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = 'sandbox_store'::regnamespace AND p.proname LIKE 'run\_%'
          AND p.prolang <> (SELECT oid FROM pg_catalog.pg_language WHERE lanname = 'c')
          AND NOT (p.proconfig @> ARRAY['enable_seqscan=off', 'enable_indexscan=on']) $$,
    'every PL/pgSQL run function makes its plans with enable_seqscan off and enable_indexscan on (a C one prepares its plans so)');

SELECT * FROM finish();
ROLLBACK;

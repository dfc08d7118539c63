-- The store contract (docs/reference.md, invariants): one test per case.
--
-- get of a missing key, round trip, absent optionals, full replace, isolation
-- by key, delete, delete of a missing key.  Everything runs in one
-- transaction that is rolled back.
BEGIN;
DO $i$ BEGIN IF to_regnamespace('sandbox_store_harness') IS NULL THEN CREATE EXTENSION IF NOT EXISTS sandbox_store; ELSE PERFORM sandbox_store_harness.install(); END IF; END $i$;

SELECT plan(7);

-- A neighbour record, so that "missing" means missing among others.
DO $$ BEGIN
    PERFORM sandbox_store.sandbox_upsert(
        key => 'contract/neighbour', provider => 'p', provider_sandbox_id => 'sb-n',
        thread_id => 'thread-n');
END $$;

-- 1. get of a missing key returns no row (and raises nothing).
SELECT is_empty(
    $$ SELECT * FROM sandbox_store.sandbox_get('contract/missing') $$,
    'get of a missing key returns no row'
);

-- 2. A full round trip: every one of the 7 columns comes back exactly as
--    written, including a millisecond updated_at.
DO $$ BEGIN
    PERFORM sandbox_store.sandbox_upsert(
        key => 'contract/full',
        provider => 'e2b',
        provider_sandbox_id => 'sbx-0001',
        thread_id => 'thread-1',
        latest_snapshot_id => 'snap-7',
        latest_run_id => 'run-42',
        updated_at => '2024-05-06 07:08:09.123+00');
END $$;

SELECT results_eq(
    $$ SELECT key::text, provider::text, provider_sandbox_id::text, latest_snapshot_id::text,
              thread_id::text, latest_run_id::text, updated_at
         FROM sandbox_store.sandbox_get('contract/full') $$,
    $$ VALUES ('contract/full'::text, 'e2b'::text, 'sbx-0001'::text, 'snap-7'::text,
               'thread-1'::text, 'run-42'::text,
               '2024-05-06 07:08:09.123+00'::timestamptz) $$,
    'round trip: get returns exactly what upsert wrote (all 7 columns, millisecond updated_at)'
);

-- 3. Optional fields that are omitted stay NULL (updated_at defaults to now()).
DO $$ BEGIN
    PERFORM sandbox_store.sandbox_upsert(
        key => 'contract/minimal', provider => 'daytona',
        provider_sandbox_id => 'sbx-min', thread_id => 'thread-2');
END $$;

SELECT results_eq(
    $$ SELECT key::text, provider::text, provider_sandbox_id::text, latest_snapshot_id::text,
              thread_id::text, latest_run_id::text, updated_at
         FROM sandbox_store.sandbox_get('contract/minimal') $$,
    $$ VALUES ('contract/minimal'::text, 'daytona'::text, 'sbx-min'::text, NULL::text,
               'thread-2'::text, NULL::text, now()) $$,
    'absent optionals stay NULL (latest_snapshot_id, latest_run_id), updated_at defaults to now()'
);

-- 4. A re-upsert fully replaces the row: omitted optionals clear what was
--    stored, nothing is merged from the old row.
DO $$ BEGIN
    PERFORM sandbox_store.sandbox_upsert(
        key => 'contract/replace', provider => 'old-provider',
        provider_sandbox_id => 'sbx-old', thread_id => 'thread-old',
        latest_snapshot_id => 'snap-old', latest_run_id => 'run-old',
        updated_at => '2024-01-01 00:00:00.001+00');
END $$;
DO $$ BEGIN
    PERFORM sandbox_store.sandbox_upsert(
        key => 'contract/replace', provider => 'new-provider',
        provider_sandbox_id => 'sbx-new', thread_id => 'thread-new',
        updated_at => '2024-02-02 02:02:02.202+00');
END $$;

SELECT results_eq(
    $$ SELECT key::text, provider::text, provider_sandbox_id::text, latest_snapshot_id::text,
              thread_id::text, latest_run_id::text, updated_at
         FROM sandbox_store.sandbox_get('contract/replace') $$,
    $$ VALUES ('contract/replace'::text, 'new-provider'::text, 'sbx-new'::text, NULL::text,
               'thread-new'::text, NULL::text,
               '2024-02-02 02:02:02.202+00'::timestamptz) $$,
    're-upsert fully replaces the record: omitted latest_snapshot_id and latest_run_id become NULL'
);

-- 5. Records are isolated by key: keys that differ only by case, a prefix or
--    a trailing space are four records, and each get returns its own.
DO $$ BEGIN
    PERFORM sandbox_store.sandbox_upsert(key => k, provider => 'p', provider_sandbox_id => 'sb:' || k,
                                        thread_id => 't:' || k, latest_run_id => 'run:' || k,
                                        updated_at => ts)
      FROM (VALUES ('iso/a',  '2024-03-01 00:00:00.001+00'::timestamptz),
                   ('iso/A',  '2024-03-01 00:00:00.002+00'),
                   ('iso/ab', '2024-03-01 00:00:00.003+00'),
                   ('iso/a ', '2024-03-01 00:00:00.004+00')) AS v(k, ts);
END $$;

SELECT results_eq(
    $$ SELECT q.k, g.key::text, g.provider_sandbox_id::text, g.thread_id::text, g.latest_run_id::text,
              g.updated_at
         FROM (VALUES (1, 'iso/a'), (2, 'iso/A'), (3, 'iso/ab'), (4, 'iso/a '), (5, 'iso/b')) AS q(n, k)
         LEFT JOIN LATERAL sandbox_store.sandbox_get(q.k) AS g ON true
        ORDER BY q.n $$,
    $$ VALUES ('iso/a'::text,  'iso/a'::text,  'sb:iso/a'::text,  't:iso/a'::text,  'run:iso/a'::text,  '2024-03-01 00:00:00.001+00'::timestamptz),
              ('iso/A',        'iso/A',        'sb:iso/A',        't:iso/A',        'run:iso/A',        '2024-03-01 00:00:00.002+00'),
              ('iso/ab',       'iso/ab',       'sb:iso/ab',       't:iso/ab',       'run:iso/ab',       '2024-03-01 00:00:00.003+00'),
              ('iso/a ',       'iso/a ',       'sb:iso/a ',       't:iso/a ',       'run:iso/a ',       '2024-03-01 00:00:00.004+00'),
              ('iso/b',        NULL,           NULL,              NULL,             NULL,               NULL) $$,
    'records are isolated by key: get(k) returns only the record of k (case, prefix, trailing space)'
);

-- 6. delete removes the record: returns true, and get is then empty (the
--    neighbours stay).
DO $$ BEGIN
    PERFORM sandbox_store.sandbox_upsert(
        key => 'contract/delete', provider => 'p', provider_sandbox_id => 'sb-d',
        thread_id => 'thread-d');
END $$;
CREATE TEMP TABLE delete_result ON COMMIT DROP AS
    SELECT sandbox_store.sandbox_delete('contract/delete') AS deleted;

SELECT results_eq(
    $$ SELECT (SELECT deleted FROM delete_result),
              (SELECT count(*) FROM sandbox_store.sandbox_get('contract/delete')),
              (SELECT count(*) FROM sandbox_store.sandbox_get('contract/neighbour')) $$,
    $$ VALUES (true, 0::bigint, 1::bigint) $$,
    'delete removes the record: returns true, then get of the key is empty'
);

-- 7. delete of a missing key is a no-op returning false: no error, and the
--    table is unchanged.
CREATE TEMP TABLE rows_before ON COMMIT DROP AS
    SELECT * FROM sandbox_store.instances;
CREATE TEMP TABLE delete_missing_result ON COMMIT DROP AS
    SELECT sandbox_store.sandbox_delete('contract/never-written') AS deleted;

SELECT results_eq(
    $$ SELECT (SELECT deleted FROM delete_missing_result),
              (SELECT count(*) FROM (SELECT * FROM rows_before
                                     EXCEPT SELECT * FROM sandbox_store.instances) AS gone),
              (SELECT count(*) FROM sandbox_store.instances) - (SELECT count(*) FROM rows_before) $$,
    $$ VALUES (false, 0::bigint, 0::bigint) $$,
    'delete of a missing key is a no-op: returns false, no error, no row changed'
);

SELECT * FROM finish();
ROLLBACK;

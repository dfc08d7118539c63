--
-- store: sandbox_upsert, sandbox_get, sandbox_list, sandbox_delete.
--
\i sql/include/fresh.sql
\pset null '<null>'
SET timezone = 'UTC';

-- get of a missing key returns no row, never an error.
SELECT * FROM sandbox_store.sandbox_get('missing');
SELECT count(*) FROM sandbox_store.sandbox_get('missing');

-- upsert returns the stored record; get returns exactly what was written.
SELECT * FROM sandbox_store.sandbox_upsert(
  key => 'tenant-1/thread-1/def/prov-x',
  provider => 'prov-x',
  provider_sandbox_id => 'sbx-001',
  thread_id => 'thread-1',
  latest_snapshot_id => 'snap-001',
  latest_run_id => 'run-001',
  updated_at => '2026-01-02 03:04:05.678+00');
SELECT * FROM sandbox_store.sandbox_get('tenant-1/thread-1/def/prov-x');

-- updated_at round-trips exactly, to the millisecond and the microsecond.
SELECT updated_at = '2026-01-02 03:04:05.678+00' AS same,
       extract(epoch FROM updated_at) * 1000 AS epoch_ms
  FROM sandbox_store.sandbox_get('tenant-1/thread-1/def/prov-x');
SELECT (sandbox_store.sandbox_upsert('us', 'p', 's', 't',
          updated_at => '1999-12-31 23:59:59.999999+00')).updated_at;
SELECT updated_at = '1999-12-31 23:59:59.999999+00' AS same FROM sandbox_store.sandbox_get('us');
-- to_timestamp(ms / 1000.0), as a client holding epoch milliseconds sends it.
SELECT (sandbox_store.sandbox_upsert('ms', 'p', 's', 't',
          updated_at => to_timestamp(1767323045678 / 1000.0))).updated_at;
SELECT (extract(epoch FROM updated_at) * 1000)::int8 AS epoch_ms FROM sandbox_store.sandbox_get('ms');

-- Omitted optionals stay NULL; updated_at defaults to now().
BEGIN;
SELECT key, latest_snapshot_id, latest_run_id, updated_at = now() AS stamped_now
  FROM sandbox_store.sandbox_upsert('minimal', 'prov-x', 'sbx-min', 'thread-2');
COMMIT;
SELECT key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id
  FROM sandbox_store.sandbox_get('minimal');

-- Re-upsert fully replaces: omitted optionals clear what was stored.
SELECT key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at
  FROM sandbox_store.sandbox_upsert('tenant-1/thread-1/def/prov-x', 'prov-y', 'sbx-002', 'thread-1b',
                                    updated_at => '2026-02-03 04:05:06.789+00');
SELECT * FROM sandbox_store.sandbox_get('tenant-1/thread-1/def/prov-x');
SELECT count(*) FROM sandbox_store.instances WHERE key = 'tenant-1/thread-1/def/prov-x';

-- Records are isolated by key: no prefix, case or padding matches.
SELECT key FROM sandbox_store.sandbox_upsert('a', 'p', 'sbx-a', 'iso');
SELECT key FROM sandbox_store.sandbox_upsert('A', 'p', 'sbx-A', 'iso');
SELECT key FROM sandbox_store.sandbox_upsert('a ', 'p', 'sbx-a-space', 'iso');
SELECT key FROM sandbox_store.sandbox_upsert('ab', 'p', 'sbx-ab', 'iso');
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('a');
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('A');
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('a ');
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('ab');

-- Odd keys: quotes, semicolons, backslashes, control characters, non-ASCII.
CREATE TEMP TABLE odd(key text);
INSERT INTO odd VALUES
  ('it''s'), ('"double"'), ('; DROP TABLE sandbox_store.instances; --'),
  (E'back\\slash'), (E'new\nline'), (E'tab\there'), ('ключ-🔑-鍵'),
  ('%s %d $1'), ('null'), (' ');
SELECT count(*) FROM odd, sandbox_store.sandbox_upsert(odd.key, 'p', 'sbx:' || odd.key, 'odd');
SELECT o.key = g.key AS same_key, g.provider_sandbox_id = 'sbx:' || o.key AS same_id
  FROM odd o CROSS JOIN LATERAL sandbox_store.sandbox_get(o.key) g ORDER BY o.key;
SELECT count(*) FROM sandbox_store.sandbox_list('odd');

-- 1024 bytes is the limit, counted in bytes: 512 two-byte characters fit.
SELECT octet_length(key), length(key)
  FROM sandbox_store.sandbox_upsert(repeat('é', 512), repeat('p', 1024), repeat('s', 1024),
                                    repeat('t', 1024), repeat('n', 1024), repeat('r', 1024));
SELECT octet_length(key), octet_length(provider), octet_length(provider_sandbox_id),
       octet_length(latest_snapshot_id), octet_length(thread_id), octet_length(latest_run_id)
  FROM sandbox_store.sandbox_get(repeat('é', 512));

-- list: a thread's records, most recently updated first; no rows for an unknown thread.
SELECT key FROM sandbox_store.sandbox_upsert('L1', 'p', 'sbx-l1', 'thread-L', updated_at => '2026-03-01 00:00:00+00');
SELECT key FROM sandbox_store.sandbox_upsert('L2', 'p', 'sbx-l2', 'thread-L', updated_at => '2026-03-03 00:00:00+00');
SELECT key FROM sandbox_store.sandbox_upsert('L3', 'p', 'sbx-l3', 'thread-L', updated_at => '2026-03-02 00:00:00+00');
SELECT key, provider_sandbox_id, updated_at FROM sandbox_store.sandbox_list('thread-L');
SELECT * FROM sandbox_store.sandbox_list('no-such-thread');
-- Moving a record to another thread moves it out of the old list.
SELECT key FROM sandbox_store.sandbox_upsert('L2', 'p', 'sbx-l2', 'thread-M');
SELECT key FROM sandbox_store.sandbox_list('thread-L');

-- delete: true when a record was removed, then a no-op returning false.
SELECT sandbox_store.sandbox_delete('L1');
SELECT sandbox_store.sandbox_delete('L1');
SELECT sandbox_store.sandbox_delete('never-existed');
SELECT * FROM sandbox_store.sandbox_get('L1');
SELECT key FROM sandbox_store.sandbox_list('thread-L');

-- A rolled-back upsert or delete leaves nothing behind.
BEGIN;
SELECT key FROM sandbox_store.sandbox_upsert('rolled-back', 'p', 's', 't');
SELECT sandbox_store.sandbox_delete('L3');
ROLLBACK;
SELECT count(*) FROM sandbox_store.sandbox_get('rolled-back');
SELECT key FROM sandbox_store.sandbox_get('L3');

-- The functions work in the select list too.
SELECT (sandbox_store.sandbox_get('L3')).provider_sandbox_id;
SELECT (sandbox_store.sandbox_upsert('L3', 'p', 'sbx-l3b', 'thread-L')).provider_sandbox_id;

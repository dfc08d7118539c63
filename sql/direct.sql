--
-- direct (1.2): sandbox_get and the lock-mode resume's claim check read the
-- primary key directly (direct.c) unless sandbox_store.direct_reads is off
-- (or citus is installed), when they run SQL statements instead.  Both paths
-- give the same answers; only a superuser can choose.
--
\i sql/include/fresh.sql
\pset null '<null>'
SET timezone = 'UTC';

SELECT count(*) AS written FROM (VALUES
  ('d/full', 'e2b', 'sbx-1', 'snap-1', 'thread-d', 'run-1'),
  ('d/min', 'e2b', 'sbx-2', NULL, 'thread-d', NULL),
  ('d/Case', 'e2b', 'sbx-3', NULL, 'thread-d', NULL),
  (E'd/odd \'"\\;\n ключ', 'e2b', 'sbx-4', NULL, 'thread-d', NULL)) v(k, p, s, n, t, r),
  sandbox_store.sandbox_upsert(k, p, s, t, n, r, '2026-01-02 03:04:05.678+00');
-- The setting exists once the library is loaded (by the first call).
SHOW sandbox_store.direct_reads;
-- A record of five incompressible 1024-byte values: stored out of line.
SELECT string_agg(md5(i::text), '') AS hex FROM generate_series(1, 32) i \gset
SELECT key FROM sandbox_store.sandbox_upsert(repeat('k', 1024), 'p', :'hex', 'x' || left(:'hex', 1023),
  'y' || left(:'hex', 1023), 'z' || left(:'hex', 1023), '2026-01-02 03:04:05.678+00') \gset long_
SELECT octet_length(:'long_key') AS long_key_bytes,
       pg_relation_size(reltoastrelid) > 0 AS toasted
  FROM pg_class WHERE oid = 'sandbox_store.instances'::regclass;

-- The same keys through both paths: found, missing, case, prefix, trailing
-- space, long (toasted) and odd bytes.
CREATE TEMP TABLE probes(k text);
INSERT INTO probes VALUES ('d/full'), ('d/min'), ('d/Case'), ('d/case'), ('d/'), ('d/full '),
  (E'd/odd \'"\\;\n ключ'), (repeat('k', 1024)), ('d/missing');
CREATE TEMP TABLE via_direct AS
  SELECT p.k AS probe, g.* FROM probes p LEFT JOIN LATERAL sandbox_store.sandbox_get(p.k) g ON true;
SET sandbox_store.direct_reads = off;
CREATE TEMP TABLE via_sql AS
  SELECT p.k AS probe, g.* FROM probes p LEFT JOIN LATERAL sandbox_store.sandbox_get(p.k) g ON true;
RESET sandbox_store.direct_reads;
SELECT left(probe, 12) AS probe, left(key, 12) AS key, provider_sandbox_id = :'hex' AS long_sbx,
       left(provider_sandbox_id, 8) AS sbx, left(latest_snapshot_id, 8) AS snap,
       left(latest_run_id, 8) AS run, updated_at
  FROM via_direct ORDER BY probe;
SELECT count(*) AS rows_direct, (SELECT count(*) FROM via_sql) AS rows_sql,
       (SELECT count(*) FROM ((TABLE via_direct EXCEPT ALL TABLE via_sql)
                              UNION ALL (TABLE via_sql EXCEPT ALL TABLE via_direct)) d) AS differing
  FROM via_direct;

-- Both paths read the caller's snapshot: inside a transaction they see its
-- own uncommitted writes and deletes.
BEGIN;
SELECT key FROM sandbox_store.sandbox_upsert('d/new', 'e2b', 'sbx-n', 'thread-d');
SELECT sandbox_store.sandbox_delete('d/min') AS deleted;
SELECT key FROM sandbox_store.sandbox_get('d/new') UNION ALL SELECT key FROM sandbox_store.sandbox_get('d/min');
SET LOCAL sandbox_store.direct_reads = off;
SELECT key FROM sandbox_store.sandbox_get('d/new') UNION ALL SELECT key FROM sandbox_store.sandbox_get('d/min');
ROLLBACK;
SELECT key FROM sandbox_store.sandbox_get('d/min');

-- The claim check of the lock-mode resume, both ways: a claimed key is not
-- resumed (55P03 with wait 0); released, it is.
SELECT fence > 0 AS claimed, owner_token AS d_token
  FROM sandbox_store.sandbox_claim('d/full', lease => '1 hour') \gset
SELECT :'claimed' AS claimed;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('d/full', 'run-2', wait => '0')$$) AS direct;
SET sandbox_store.direct_reads = off;
SELECT pg_temp.err($$SELECT sandbox_store.sandbox_ensure('d/full', 'run-2', wait => '0')$$) AS via_sql;
SELECT sandbox_store.sandbox_release('d/full', :'d_token') AS released;
SELECT action, latest_run_id FROM sandbox_store.sandbox_ensure('d/full', 'run-3');
RESET sandbox_store.direct_reads;
SELECT action, latest_run_id FROM sandbox_store.sandbox_ensure('d/full', 'run-4');

-- Only a superuser may turn it off (or on).
CREATE ROLE regress_sb_direct;
SET ROLE regress_sb_direct;
SELECT pg_temp.err($$SET sandbox_store.direct_reads = off$$) AS set_by_app;
RESET ROLE;
DROP ROLE regress_sb_direct;
SELECT pg_temp.err($$SET sandbox_store.direct_reads_typo = off$$) AS reserved_prefix;

SELECT count(*) AS deleted FROM probes p, sandbox_store.sandbox_delete(p.k) WHERE sandbox_delete;

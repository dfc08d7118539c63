--
-- direct (1.2): sandbox_get and the lock-mode resume's claim check read the
-- primary key directly (direct.c) unless sandbox_store.direct_reads is off
-- (or citus is installed), when they run SQL statements instead.  So does
-- run_log_append's fence, and it inserts the entries directly unless
-- sandbox_store.direct_inserts is off or the table is not as the extension
-- made it.  Both paths give the same answers; only a superuser can choose.
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
SELECT pg_temp.err($$SET sandbox_store.direct_inserts = off$$) AS set_by_app;
RESET ROLE;
DROP ROLE regress_sb_direct;
SELECT pg_temp.err($$SET sandbox_store.direct_reads_typo = off$$) AS reserved_prefix;

SELECT count(*) AS deleted FROM probes p, sandbox_store.sandbox_delete(p.k) WHERE sandbox_delete;

-- run_log_append: the same appends to two runs, one through the direct read
-- and insert, one through the statements; a toasted chunk among them.
SHOW sandbox_store.direct_inserts;
CREATE TEMP TABLE batches(b int, chunks jsonb);
INSERT INTO batches VALUES (1, '[{"n": 1}, {"n": 2, "s": "ключ \\u0000 \"q\""}]'), (2, '[]'),
  (3, jsonb_build_array(jsonb_build_object('big', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 200) i)))),
  (4, '[{"n": 4}, {}, {"n": [1, {"deep": true}]}]');
SELECT sandbox_store.run_create_or_resume(r, 'thread-d', 1767225600000) IS NOT NULL AS created
  FROM (VALUES ('d/run-direct'), ('d/run-sql')) v(r);
SELECT sandbox_store.run_claim('d/run-direct') AS e_direct, sandbox_store.run_claim('d/run-sql') AS e_sql \gset
SELECT b, sandbox_store.run_log_append('d/run-direct', chunks, :e_direct) AS direct FROM batches ORDER BY b;
SET sandbox_store.direct_reads = off;
SET sandbox_store.direct_inserts = off;
SELECT b, sandbox_store.run_log_append('d/run-sql', chunks, :e_sql) AS via_sql FROM batches ORDER BY b;
RESET sandbox_store.direct_reads;
RESET sandbox_store.direct_inserts;
SELECT count(*) AS entries,
       (SELECT count(*) FROM ((SELECT seq, chunk FROM sandbox_store.run_log_entries WHERE run_id = 'd/run-direct'
                               EXCEPT ALL SELECT seq, chunk FROM sandbox_store.run_log_entries WHERE run_id = 'd/run-sql')
                              UNION ALL
                              (SELECT seq, chunk FROM sandbox_store.run_log_entries WHERE run_id = 'd/run-sql'
                               EXCEPT ALL SELECT seq, chunk FROM sandbox_store.run_log_entries WHERE run_id = 'd/run-direct')) d) AS differing,
       (SELECT pg_relation_size(reltoastrelid) > 0 FROM pg_class WHERE oid = 'sandbox_store.run_log_entries'::regclass) AS toasted
  FROM sandbox_store.run_log_entries WHERE run_id = 'd/run-direct';
SELECT seq, left(chunk::text, 40) AS chunk FROM sandbox_store.run_log_read('d/run-direct', 0) ORDER BY seq;
-- A stale epoch is refused by both fence reads.
SELECT pg_temp.err(format($$SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 9}]', %s)$$, :e_direct - 1)) AS direct;
SET sandbox_store.direct_reads = off;
SELECT pg_temp.err(format($$SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 9}]', %s)$$, :e_direct - 1)) AS via_sql;
RESET sandbox_store.direct_reads;
-- The fence reads the run as the transaction's own earlier commands left
-- it: a claim in the same transaction, at READ COMMITTED and REPEATABLE READ.
BEGIN;
SELECT sandbox_store.run_claim('d/run-direct') AS e_rc \gset
SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 10}]', :e_rc) AS read_committed;
COMMIT;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT sandbox_store.run_claim('d/run-direct') AS e_rr \gset
SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 11}]', :e_rr) AS repeatable_read;
SELECT pg_temp.err(format($$SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 12}]', %s)$$, :e_rc)) AS older;
COMMIT;

-- An entry already at the next seq (an admin's insert): both inserts fail
-- with PostgreSQL's 23505 and write nothing.
INSERT INTO sandbox_store.run_log_entries
  SELECT run_id, last_seq + 1, '{"admin": true}' FROM sandbox_store.run_logs WHERE run_id = 'd/run-direct';
SELECT pg_temp.err(format($$SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 13}]', %s)$$, :e_rr)) AS direct;
SET sandbox_store.direct_inserts = off;
SELECT pg_temp.err(format($$SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 13}]', %s)$$, :e_rr)) AS via_sql;
RESET sandbox_store.direct_inserts;
DELETE FROM sandbox_store.run_log_entries WHERE chunk = '{"admin": true}';
SELECT last_seq FROM sandbox_store.run_logs WHERE run_id = 'd/run-direct';

-- A table changed by an admin gets the statement, which does what the
-- table asks for: a trigger fires, a CHECK constraint refuses (nothing
-- written).  (Columns changed: test admin_columns.)
CREATE FUNCTION pg_temp.entry_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'trigger saw seq %', NEW.seq;
  RETURN NEW;
END $$;
CREATE TRIGGER entry_seen BEFORE INSERT ON sandbox_store.run_log_entries
  FOR EACH ROW EXECUTE FUNCTION pg_temp.entry_seen();
SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 14}, {"n": 15}]', :e_rr) AS with_trigger;
DROP TRIGGER entry_seen ON sandbox_store.run_log_entries;
ALTER TABLE sandbox_store.run_log_entries ADD CONSTRAINT entry_has_n CHECK (chunk ? 'n') NOT VALID;
SELECT pg_temp.err(format($$SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 16}, {"m": 17}]', %s)$$, :e_rr)) AS with_check;
ALTER TABLE sandbox_store.run_log_entries DROP CONSTRAINT entry_has_n;
SELECT last_seq FROM sandbox_store.run_logs WHERE run_id = 'd/run-direct';
-- As made again: direct.
SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 19}]', :e_rr) AS as_made;
SELECT seq, chunk FROM sandbox_store.run_log_entries WHERE run_id = 'd/run-direct' AND seq > 8 ORDER BY seq;

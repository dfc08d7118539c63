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
-- written), an identity column refuses a seq, a rule runs; after each is
-- gone the append is direct again (a dropped trigger leaves pg_class's
-- relhastriggers set until a VACUUM: the relation cache says).  (Columns
-- changed: test admin_columns.)
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
ALTER TABLE sandbox_store.run_log_entries ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
SELECT pg_temp.err(format($$SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 16}]', %s)$$, :e_rr)) AS with_identity;
ALTER TABLE sandbox_store.run_log_entries ALTER COLUMN seq DROP IDENTITY;
SELECT last_seq FROM sandbox_store.run_logs WHERE run_id = 'd/run-direct';
CREATE TABLE rule_saw (seq bigint);
CREATE RULE entry_seen AS ON INSERT TO sandbox_store.run_log_entries DO ALSO INSERT INTO rule_saw VALUES (NEW.seq);
SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 18}]', :e_rr) AS with_rule;
DROP RULE entry_seen ON sandbox_store.run_log_entries;
SELECT seq AS rule_saw FROM rule_saw;
-- As made again: direct.
SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 19}]', :e_rr) AS as_made;
SELECT seq, chunk FROM sandbox_store.run_log_entries WHERE run_id = 'd/run-direct' AND seq > 8 ORDER BY seq;

-- The app role's append is the tables' owner's work in both paths: an
-- admin's index whose expression only the owner may run is kept, and a
-- duplicate key's detail shows the key.
CREATE FUNCTION public.entry_kind(c jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT c ->> 'n' $$;
REVOKE EXECUTE ON FUNCTION public.entry_kind(jsonb) FROM PUBLIC;
CREATE INDEX entry_kind ON sandbox_store.run_log_entries (public.entry_kind(chunk));
CREATE ROLE regress_sb_direct_app;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_direct_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_direct_app;
INSERT INTO sandbox_store.run_log_entries
  SELECT run_id, last_seq + 2, '{"admin": true}' FROM sandbox_store.run_logs WHERE run_id = 'd/run-direct';
CREATE FUNCTION pg_temp.err_detail(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  d text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || SQLERRM || ' / ' || d;
END $$;
SET ROLE regress_sb_direct_app;
SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 20}]', :e_rr) AS app_with_index;
SELECT pg_temp.err_detail(format($$SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 21}]', %s)$$, :e_rr)) AS app_duplicate;
RESET ROLE;
SET sandbox_store.direct_inserts = off;
SET ROLE regress_sb_direct_app;
SELECT pg_temp.err_detail(format($$SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 21}]', %s)$$, :e_rr)) AS app_duplicate_via_sql;
RESET ROLE;
RESET sandbox_store.direct_inserts;
DELETE FROM sandbox_store.run_log_entries WHERE chunk = '{"admin": true}';
DROP INDEX sandbox_store.entry_kind;
DROP FUNCTION public.entry_kind(jsonb);

-- A primary key an admin replaced with one on other columns: the reads
-- run their statements, which need no particular index.
ALTER TABLE sandbox_store.runs DROP CONSTRAINT runs_pkey;
ALTER TABLE sandbox_store.runs ADD CONSTRAINT runs_pkey PRIMARY KEY (thread_id, run_id);
SELECT pg_temp.err($$SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 22}]')$$) AS unfenced_refused;
SELECT sandbox_store.run_log_append('d/run-direct', '[{"n": 22}]', :e_rr) AS fenced;
ALTER TABLE sandbox_store.runs DROP CONSTRAINT runs_pkey;
ALTER TABLE sandbox_store.runs ADD CONSTRAINT runs_pkey PRIMARY KEY (run_id);
SELECT key FROM sandbox_store.sandbox_upsert('d/pk', 'e2b', 'sbx-pk', 'thread-d');
ALTER TABLE sandbox_store.instances DROP CONSTRAINT instances_pkey;
ALTER TABLE sandbox_store.instances ADD CONSTRAINT instances_pkey PRIMARY KEY (provider, key);
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('d/pk');
ALTER TABLE sandbox_store.instances DROP CONSTRAINT instances_pkey;
ALTER TABLE sandbox_store.instances ADD CONSTRAINT instances_pkey PRIMARY KEY (key);
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('d/pk');
DROP OWNED BY regress_sb_direct_app;
DROP ROLE regress_sb_direct_app;

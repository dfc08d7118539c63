-- bench/memory.sql: backend memory over many calls in ONE backend, and the
-- bloat / HOT share of the resume stamps those calls make.
--
-- Run by bench/run.sh with psql (one session = one backend) against a freshly
-- loaded database (bench/setup.sql).  psql variables:
--   rows   records loaded (keys 1..rows)
--   calls  sandbox_ensure calls (resume path: one stamp each)
--   other  calls of each of sandbox_get, sandbox_upsert, sandbox_list,
--          sandbox_lock (leak check of the other entry points)
--
-- Every call runs in a transaction of its own (a procedure that COMMITs after
-- each call), as autocommit calls from an app would.  Memory is read from
-- pg_backend_memory_contexts in this same session, between the CALLs:
--   start   after connecting (extension library not loaded yet)
--   warm    after 1,000 calls of every function (plans prepared, caches full)
--   ensure  after :calls ensure calls
--   all     after :other calls of each of the other functions
-- Results go to the tables bench_mem and bench_bloat, which run.sh reports.

\set ON_ERROR_STOP 1
SET client_min_messages = warning;

DROP TABLE IF EXISTS bench_mem, bench_bloat;
CREATE TABLE bench_mem (label text, name text, ident text, level int,
                        total_bytes bigint, used_bytes bigint);
CREATE TABLE bench_bloat (label text, n_tup_upd bigint, n_tup_hot_upd bigint,
                          n_dead_tup bigint, autovacuum_count bigint,
                          heap_bytes bigint, index_bytes bigint);

-- k = 1 + random key; the same key shape as bench/setup.sql.
CREATE OR REPLACE PROCEDURE public.bench_call_loop(fn text, n int, nrows int)
LANGUAGE plpgsql AS $$
DECLARE
    k int;
    key text;
BEGIN
    FOR i IN 1..n LOOP
        k := 1 + floor(random() * nrows)::int;
        key := 'tenant-' || (k % 1000) || '/thread-' || k || '/sbx/e2b';
        CASE fn
        WHEN 'ensure' THEN
            PERFORM * FROM sandbox_store.sandbox_ensure(key => key, run_id => 'run-' || i);
        WHEN 'get' THEN
            PERFORM * FROM sandbox_store.sandbox_get(key => key);
        WHEN 'upsert' THEN
            PERFORM * FROM sandbox_store.sandbox_upsert(
                key => key, provider => 'e2b', provider_sandbox_id => 'sbx-' || i,
                thread_id => 'tenant-' || (k % 1000) || '/thread-' || k,
                latest_run_id => 'run-' || i);
        WHEN 'list' THEN
            PERFORM * FROM sandbox_store.sandbox_list(thread_id => 'tenant-' || (k % 1000) || '/thread-' || k);
        WHEN 'lock' THEN
            PERFORM sandbox_store.sandbox_lock(key => key);
        END CASE;
        COMMIT;
    END LOOP;
END
$$;

CREATE OR REPLACE PROCEDURE public.bench_mem_snapshot(label text)
LANGUAGE sql AS $$
    INSERT INTO public.bench_mem
    SELECT label, name, ident, level, total_bytes, used_bytes
      FROM pg_catalog.pg_backend_memory_contexts;
$$;

CREATE OR REPLACE PROCEDURE public.bench_bloat_snapshot(label text)
LANGUAGE sql AS $$
    INSERT INTO public.bench_bloat
    SELECT label, n_tup_upd, n_tup_hot_upd, n_dead_tup, autovacuum_count,
           pg_catalog.pg_relation_size('sandbox_store.instances'),
           pg_catalog.pg_indexes_size('sandbox_store.instances')
      FROM pg_catalog.pg_stat_user_tables
     WHERE relid = 'sandbox_store.instances'::regclass;
$$;

-- one warm snapshot so the snapshot procedure itself is cached
CALL public.bench_mem_snapshot('start');

CALL public.bench_call_loop('ensure', 1000, :rows);
CALL public.bench_call_loop('get', 1000, :rows);
CALL public.bench_call_loop('upsert', 1000, :rows);
CALL public.bench_call_loop('list', 1000, :rows);
CALL public.bench_call_loop('lock', 1000, :rows);
CALL public.bench_mem_snapshot('warm');

-- stats of this backend reach pg_stat_user_tables when it goes idle
SELECT pg_catalog.pg_stat_force_next_flush();
CALL public.bench_bloat_snapshot('before');

\timing on
CALL public.bench_call_loop('ensure', :calls, :rows);
\timing off
CALL public.bench_mem_snapshot('ensure');
SELECT pg_catalog.pg_stat_force_next_flush();
CALL public.bench_bloat_snapshot('after');

CALL public.bench_call_loop('get', :other, :rows);
CALL public.bench_call_loop('upsert', :other, :rows);
CALL public.bench_call_loop('list', :other, :rows);
CALL public.bench_call_loop('lock', :other, :rows);
CALL public.bench_mem_snapshot('all');

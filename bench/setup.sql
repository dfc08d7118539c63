-- bench/setup.sql: load the benchmark data set into a fresh database.
--
-- psql variables:  rows  number of records to load (e.g. 100000)
--
-- Creates the extension (unless schema sandbox_store is there already: the
-- SQL edition's plain script, which bench/run.sh installs first), loads :rows
-- records into sandbox_store.instances directly (as the superuser; this is
-- the fastest way to get many rows), and the helper tables the contention
-- workloads log to.  Keys look like real compound instance keys, ~35 bytes:
--
--     tenant-<k % 1000>/thread-<k>/sbx/e2b      k = 1 .. :rows
--
-- The pgbench scripts build the same key from a random k, so every call hits
-- an existing record (the resume / update path).  updated_at is spread over
-- the last day, so no call ever sees a record older than a max_age.

\set ON_ERROR_STOP 1
SET client_min_messages = warning;

SELECT NOT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = 'sandbox_store') AS need_extension \gset
\if :need_extension
CREATE EXTENSION sandbox_store;
\endif
TRUNCATE sandbox_store.instances;

INSERT INTO sandbox_store.instances
       (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id,
        latest_run_id, updated_at)
SELECT 'tenant-' || (k % 1000) || '/thread-' || k || '/sbx/e2b',
       'e2b',
       'sbx-' || substr(md5(k::text), 1, 20),
       CASE WHEN k % 2 = 0 THEN 'snap-' || substr(md5(k::text), 1, 12) END,
       'tenant-' || (k % 1000) || '/thread-' || k,
       'run-' || k,
       pg_catalog.now() - (k % 86400) * interval '1 second'
  FROM pg_catalog.generate_series(1, :rows) AS k;

-- Contention runs log every 'create' answer here (one per key is the contract).
CREATE TABLE IF NOT EXISTS public.bench_creates (
    run    text NOT NULL,
    key    text NOT NULL,
    client int  NOT NULL,
    at     timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp());
TRUNCATE public.bench_creates;

VACUUM (ANALYZE) sandbox_store.instances;

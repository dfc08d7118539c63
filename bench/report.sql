-- bench/report.sql: turn the runs bench/run.sh recorded (table bench_runs and
-- friends, in the benchmark database) into the markdown report it prints.
-- psql variables: rows, scale_rows, lease_note, mem_calls, mem_other, and
-- main, scale, contention, memory (true/false: which phases ran).
--
-- Every throughput figure is the MEDIAN over the alternating repeats of a
-- workload at one client count; a ratio is median(A) / median(B) measured in
-- the same run.  Latencies are per transaction, from pgbench's per-transaction
-- log (-l): p50 / p99 of one run, median over the repeats.

\set ON_ERROR_STOP 1
\pset footer off
\pset tuples_only on
\pset format unaligned

CREATE TEMP TABLE pairs (ord int, grp text, label text, a text, b text, target text, op text, goal float8);
INSERT INTO pairs VALUES
 (1, 'ensure_auto', '`sandbox_ensure` resume, autocommit / one bare `UPDATE ... RETURNING`', 'ensure_auto', 'update_auto', '≥ 0.90', '>=', 0.90),
 (2, 'ensure_txn',  '`BEGIN; sandbox_ensure; COMMIT` / app-side `BEGIN; pg_advisory_xact_lock; SELECT; UPDATE; COMMIT`', 'ensure_txn', 'app_txn', '≥ 1.5', '>=', 1.5),
 (3, 'get',         '`sandbox_get` / bare `SELECT * ... WHERE key = $1`', 'get', 'select', '≥ 0.90', '>=', 0.90),
 (4, 'upsert',      '`sandbox_upsert` / bare `INSERT ... ON CONFLICT (key) DO UPDATE` (full replace)', 'upsert', 'insert_on_conflict', '≥ 0.90', '>=', 0.90),
 (5, 'ensure_auto', '`sandbox_ensure`, autocommit / PL/pgSQL ensure', 'ensure_auto', 'plpgsql_ensure_auto', '> 1', '>', 1),
 (6, 'ensure_txn',  '`sandbox_ensure` in a transaction / PL/pgSQL ensure in a transaction', 'ensure_txn', 'plpgsql_ensure_txn', '> 1', '>', 1),
 (7, 'get',         '`sandbox_get` / PL/pgSQL get', 'get', 'plpgsql_get', '> 1', '>', 1),
 (8, 'upsert',      '`sandbox_upsert` / PL/pgSQL upsert', 'upsert', 'plpgsql_upsert', '> 1', '>', 1),
 (9, 'lease',       'lease-mode ensure + fenced upsert + release / lock-mode transaction doing the same work', 'lease', 'lock_work', 'report', NULL, NULL);
-- The C edition beside the SQL edition (PL/pgSQL, the plain script in
-- database bench_sql, workloads sql_<name>): ratio = C / SQL.  Then the SQL
-- edition beside the bench's own PL/pgSQL functions (bench/plpgsql_baseline.sql),
-- which do less (no lease check, no private lock space): what the rest costs.
INSERT INTO pairs VALUES
 (21, 'ensure_auto', 'C edition / SQL edition: `sandbox_ensure` resume, autocommit', 'ensure_auto', 'sql_ensure_auto', 'report', NULL, NULL),
 (22, 'ensure_txn',  'C edition / SQL edition: `BEGIN; sandbox_ensure; COMMIT`', 'ensure_txn', 'sql_ensure_txn', 'report', NULL, NULL),
 (23, 'get',         'C edition / SQL edition: `sandbox_get`', 'get', 'sql_get', 'report', NULL, NULL),
 (24, 'upsert',      'C edition / SQL edition: `sandbox_upsert` (full replace)', 'upsert', 'sql_upsert', 'report', NULL, NULL),
 (25, 'create',      'C edition / SQL edition: lease-mode create (`sandbox_ensure` with a lease; `sandbox_upsert_release`)', 'create_lease2', 'sql_create_lease2', 'report', NULL, NULL),
 (26, 'ensure_auto', 'SQL edition / PL/pgSQL baseline: `sandbox_ensure` resume, autocommit', 'sql_ensure_auto', 'plpgsql_ensure_auto', 'report', NULL, NULL),
 (27, 'ensure_txn',  'SQL edition / PL/pgSQL baseline: `sandbox_ensure` in a transaction', 'sql_ensure_txn', 'plpgsql_ensure_txn', 'report', NULL, NULL),
 (28, 'get',         'SQL edition / PL/pgSQL baseline: `sandbox_get`', 'sql_get', 'plpgsql_get', 'report', NULL, NULL),
 (29, 'upsert',      'SQL edition / PL/pgSQL baseline: `sandbox_upsert`', 'sql_upsert', 'plpgsql_upsert', 'report', NULL, NULL);

CREATE TEMP VIEW med AS
SELECT phase, rows, workload, clients, count(*) AS runs,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY tps) AS tps,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY lat_mean) AS lat_mean,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY p50) AS p50,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY p99) AS p99,
       min(tps) AS tps_min, max(tps) AS tps_max
  FROM bench_runs GROUP BY phase, rows, workload, clients;

CREATE TEMP VIEW cmp AS
SELECT p.ord, p.label, p.target, p.op, p.goal, a.phase, a.rows, a.clients,
       a.tps AS a_tps, b.tps AS b_tps, a.tps / nullif(b.tps, 0) AS ratio,
       a.runs, a.p99 AS a_p99, b.p99 AS b_p99
  FROM pairs p
  JOIN med a ON a.workload = p.a
  JOIN med b ON b.workload = p.b AND b.phase = a.phase AND b.rows = a.rows AND b.clients = a.clients;

CREATE TEMP VIEW verdict AS
SELECT *, CASE WHEN op IS NULL THEN 'report'
               WHEN (op = '>=' AND ratio >= goal) OR (op = '>' AND ratio > goal) THEN 'met'
               ELSE '**missed**' END AS v
  FROM cmp;

\if :main
\echo
\echo '### Ratios at' :rows 'records (median of alternating runs; ratio = extension / baseline, higher is better for the extension)'
\echo
\echo '| comparison | clients | extension tps | baseline tps | ratio | target | |'
\echo '|---|---:|---:|---:|---:|---|---|'
SELECT format('| %s | %s | %s | %s | **%s** | %s | %s |', label, clients,
              round(a_tps::numeric), round(b_tps::numeric), to_char(ratio, 'FM990.00'), target, v)
  FROM verdict WHERE phase = 'main' ORDER BY ord, clients;
SELECT format('| %s | — | — | — | — | report | %s |', label, :'lease_note')
  FROM pairs WHERE grp = 'lease'
   AND NOT EXISTS (SELECT FROM bench_runs WHERE workload = 'lease');

\echo
\echo '### Latency per workload at' :rows 'records (ms per transaction; medians over runs)'
\echo
\echo '| workload | clients | runs | tps (median) | tps min..max | mean | p50 | p99 |'
\echo '|---|---:|---:|---:|---|---:|---:|---:|'
SELECT format('| %s | %s | %s | %s | %s..%s | %s | %s | %s |', workload, clients, runs, round(tps::numeric),
              round(tps_min::numeric), round(tps_max::numeric),
              to_char(lat_mean, 'FM990.000'), to_char(p50, 'FM990.000'), to_char(p99, 'FM990.000'))
  FROM med WHERE phase = 'main'
 ORDER BY array_position(ARRAY['ensure_auto','update_auto','plpgsql_ensure_auto','sql_ensure_auto',
                               'ensure_txn','app_txn','plpgsql_ensure_txn','sql_ensure_txn',
                               'get','select','plpgsql_get','sql_get','upsert',
                               'insert_on_conflict','plpgsql_upsert','sql_upsert','lease','lock_work',
                               'create_lease2','sql_create_lease2'], workload),
          clients;

\endif
\if :scale
\echo
\echo '### Scale:' :scale_rows 'vs' :rows 'records, run alternately: ratios, and latency growth from the smaller to the larger'
\echo
\echo '| comparison | clients | ratio at' :rows '| ratio at' :scale_rows '| extension mean latency × | extension p99 × | baseline mean latency × | target |'
\echo '|---|---:|---:|---:|---:|---:|---:|---|'
SELECT format('| %s | %s | %s | **%s** | **%s** | %s | %s | ratio %s; latency × ≤ 1.5: %s |', s.label, s.clients,
              to_char(r.ratio, 'FM990.00'), to_char(s.ratio, 'FM990.00'),
              to_char(sa.lat_mean / ra.lat_mean, 'FM990.00'), to_char(sa.p99 / ra.p99, 'FM990.00'),
              to_char(sb.lat_mean / rb.lat_mean, 'FM990.00'), s.v,
              CASE WHEN sa.lat_mean / ra.lat_mean <= 1.5 THEN 'met' ELSE '**missed**' END)
  FROM verdict s
  JOIN pairs p ON p.ord = s.ord
  JOIN verdict r ON r.ord = s.ord AND r.phase = 'scale-ref' AND r.clients = s.clients
  JOIN med sa ON sa.phase = 'scale' AND sa.workload = p.a AND sa.clients = s.clients
  JOIN med ra ON ra.phase = 'scale-ref' AND ra.workload = p.a AND ra.clients = s.clients
  JOIN med sb ON sb.phase = 'scale' AND sb.workload = p.b AND sb.clients = s.clients
  JOIN med rb ON rb.phase = 'scale-ref' AND rb.workload = p.b AND rb.clients = s.clients
 WHERE s.phase = 'scale' ORDER BY s.ord, s.clients;
\endif

\if :contention
\echo
\echo '### Contention: agent runs (ensure; on create: upsert) on new keys, all clients at once'
\echo
\echo '| keys | workload | clients | tps (median) | p50 ms | p99 ms | keys created | creates logged | exactly one create per key |'
\echo '|---:|---|---:|---:|---:|---:|---:|---:|---|'
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s | %s |', c.keys, m.workload, m.clients, round(m.tps::numeric),
              to_char(m.p50, 'FM990.000'), to_char(m.p99, 'FM990.000'),
              c.records, c.creates, CASE WHEN c.bad = 0 THEN 'yes (' || c.runs || ' runs checked)' ELSE '**NO**' END)
  FROM med m
  JOIN (SELECT keys, workload, count(*) AS runs, sum(records) AS records, sum(creates) AS creates,
               sum(CASE WHEN ok THEN 0 ELSE 1 END) AS bad
          FROM bench_contention GROUP BY keys, workload) c
    ON m.phase = 'contention-' || c.keys AND m.workload = c.workload
 ORDER BY c.keys, m.workload;

\endif
\if :memory
\echo
\echo '### Bloat: resume stamps by sandbox_ensure over' :rows 'records (one backend, one transaction per call)'
\echo
\echo '| stamps (n_tup_upd) | HOT updates | HOT share | target | heap before | heap after | heap growth | indexes before | indexes after | autovacuums during |'
\echo '|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|'
SELECT format('| %s | %s | **%s%%** | ≥ 90%%: %s | %s | %s | %s%% | %s | %s | %s |',
              a.n_tup_upd - b.n_tup_upd, a.n_tup_hot_upd - b.n_tup_hot_upd,
              round(100.0 * (a.n_tup_hot_upd - b.n_tup_hot_upd) / nullif(a.n_tup_upd - b.n_tup_upd, 0), 1),
              CASE WHEN (a.n_tup_hot_upd - b.n_tup_hot_upd) >= 0.9 * (a.n_tup_upd - b.n_tup_upd) THEN 'met' ELSE '**missed**' END,
              pg_size_pretty(b.heap_bytes), pg_size_pretty(a.heap_bytes),
              round(100.0 * (a.heap_bytes - b.heap_bytes) / nullif(b.heap_bytes, 0)),
              pg_size_pretty(b.index_bytes), pg_size_pretty(a.index_bytes),
              a.autovacuum_count - b.autovacuum_count)
  FROM bench_bloat_copy b, bench_bloat_copy a WHERE b.label = 'before' AND a.label = 'after';

\echo
\echo '### Memory of one backend (pg_backend_memory_contexts, summed over all contexts)'
\echo
\echo '| point | calls so far | total bytes | used bytes | total change since warm |'
\echo '|---|---|---:|---:|---:|'
WITH t AS (SELECT label, sum(total_bytes) AS total, sum(used_bytes) AS used FROM bench_mem_copy GROUP BY label)
SELECT format('| %s | %s | %s | %s | %s |', t.label,
              CASE t.label WHEN 'start' THEN 'none (fresh connection)'
                           WHEN 'warm' THEN '1,000 of each function'
                           WHEN 'ensure' THEN '+ ' || :'mem_calls' || ' sandbox_ensure'
                           ELSE '+ ' || :'mem_other' || ' each of get, upsert, list, lock' END,
              t.total, t.used, t.total - w.total)
  FROM t, t w WHERE w.label = 'warm'
 ORDER BY array_position(ARRAY['start','warm','ensure','all'], t.label);
\echo
\echo 'Contexts whose total grew by more than 8 kB between warm and the end:'
\echo
WITH g AS (SELECT label, name, coalesce(ident, '') AS ident, sum(total_bytes) AS total
             FROM bench_mem_copy GROUP BY 1, 2, 3)
SELECT format('- %s%s: %s -> %s bytes', e.name, CASE WHEN e.ident <> '' THEN ' (' || left(e.ident, 60) || ')' ELSE '' END,
              coalesce(w.total, 0), e.total)
  FROM g e LEFT JOIN g w ON w.label = 'warm' AND w.name = e.name AND w.ident = e.ident
 WHERE e.label = 'all' AND e.total - coalesce(w.total, 0) > 8192
 ORDER BY e.total - coalesce(w.total, 0) DESC LIMIT 10;
SELECT '- (none)' WHERE NOT EXISTS (
  WITH g AS (SELECT label, name, coalesce(ident, '') AS ident, sum(total_bytes) AS total
               FROM bench_mem_copy GROUP BY 1, 2, 3)
  SELECT FROM g e LEFT JOIN g w ON w.label = 'warm' AND w.name = e.name AND w.ident = e.ident
   WHERE e.label = 'all' AND e.total - coalesce(w.total, 0) > 8192);
\endif

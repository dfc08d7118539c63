--
-- hot (1.2): resume stamps are HOT updates.  A stamp writes latest_run_id
-- and updated_at, which no index covers, into a table that leaves free space
-- in each page (fillfactor 90): PostgreSQL updates the row in place, with no
-- new index entry.  With an index on updated_at (1.1) no stamp was HOT.
--
-- 10 records, then 30 resumes, each in a transaction of its own.  The
-- records and every version the stamps leave behind fit in the table's first
-- page, so each stamp can be HOT whether or not page pruning gets to run
-- (another session's snapshot, autovacuum's ANALYZE, can keep it from
-- reclaiming old versions): every one of the 30 must be.
--
\i sql/include/fresh.sql
SELECT count(*) AS written
  FROM generate_series(1, 10) i,
       sandbox_store.sandbox_upsert('hot/' || i, 'e2b', 'sbx-' || i, 'thread-hot');

CREATE PROCEDURE pg_temp.stamp(n int) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. n LOOP
        PERFORM * FROM sandbox_store.sandbox_ensure('hot/' || (1 + i % 10), 'run-' || i);
        COMMIT;
    END LOOP;
END
$$;

SELECT pg_stat_force_next_flush();
CREATE TEMP TABLE before AS
SELECT n_tup_upd, n_tup_hot_upd, pg_relation_size('sandbox_store.instances') AS heap,
       pg_indexes_size('sandbox_store.instances') AS idx
  FROM pg_stat_user_tables WHERE relid = 'sandbox_store.instances'::regclass;

CALL pg_temp.stamp(30);

SELECT pg_stat_force_next_flush();
SELECT s.n_tup_upd - b.n_tup_upd AS stamps,
       s.n_tup_hot_upd - b.n_tup_hot_upd AS hot_stamps,
       pg_relation_size('sandbox_store.instances') = b.heap AS heap_did_not_grow,
       pg_indexes_size('sandbox_store.instances') = b.idx AS indexes_did_not_grow
  FROM pg_stat_user_tables s, before b
 WHERE s.relid = 'sandbox_store.instances'::regclass;

SELECT count(*) AS deleted FROM generate_series(1, 10) i, sandbox_store.sandbox_delete('hot/' || i) d WHERE d;

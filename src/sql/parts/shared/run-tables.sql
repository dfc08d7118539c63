-- Runs and run logs (1.5): the record of each agent run (RunStore) and the
-- durable log of the chunks a run streams, which readers replay and tail.
-- The same SQL in both editions (PL/pgSQL, src/sql/parts/shared/runs/, one
-- function per file).
--
-- A run's driver claims it (run_claim), which gives the run a driver_epoch
-- above every epoch it had (max_driver_epoch, kept when a RunStore update
-- clears driver_epoch); every write that carries an epoch is refused (SB001)
-- unless it is the run's current one, and a log write without one is
-- refused once a driver has ever claimed the run (docs/reference.md, "The
-- driver epoch fence").  The check and the write are one call, under
-- the lock of the run's log row: a log write takes it, then reads the runs
-- row; a claim takes it, then raises the epoch in the runs row.  So either
-- the write commits before the claim (which waited for it) or it reads the
-- new epoch and is refused.  Reading the runs row takes no lock of it: an
-- append writes no more than its log row and its entries.
--
-- A log is a run_logs row (created by the first append, upsert or close,
-- or by a claim or a reader) and its entries, numbered from 1 by seq.  Appenders of one run take the
-- log row's lock, so they commit in seq order: a reader that has seen seq k
-- never later finds a new entry below k.  A reader LISTENs on channel
-- sandbox_store_run_log, then calls run_log_watch, which marks the log
-- watched under the same row lock; from then on every write of the log
-- notifies the channel with the run id, so the reader wakes when it
-- commits, and every write before was committed when the reader read.  A
-- log nobody watches costs no notification (PostgreSQL serializes the
-- commits of notifying transactions across the whole server).  Whatever
-- takes both takes the log row before the runs row (a claim, every
-- run_update), so no two calls deadlock.
-- run_log_prune deletes finished, quiet logs.
--
-- Errors: SB001 (a stale epoch), SBR01 (unknown run), SBR02 (finished run
-- or closed log), SBR03 (invalid log offset), 22023 (bad argument).

CREATE TABLE sandbox_store.runs (
    run_id           pg_catalog.text NOT NULL,
    thread_id        pg_catalog.text NOT NULL,
    status           pg_catalog.text NOT NULL,
    started_at       pg_catalog.float8 NOT NULL,
    finished_at      pg_catalog.float8,
    error            pg_catalog.jsonb,
    usage            pg_catalog.jsonb,
    sandbox_key      pg_catalog.text,
    detached_since   pg_catalog.float8,
    cancel_requested pg_catalog.bool,
    driver_epoch     pg_catalog.int8,
    max_driver_epoch pg_catalog.int8,
    CONSTRAINT runs_pkey PRIMARY KEY (run_id),
    CONSTRAINT runs_run_id_length CHECK (pg_catalog.octet_length(run_id) BETWEEN 1 AND @MAX_TEXT_BYTES@),
    CONSTRAINT runs_thread_id_length CHECK (pg_catalog.octet_length(thread_id) BETWEEN 1 AND 1000),
    CONSTRAINT runs_status_check
        CHECK (status OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'interrupted', 'completed', 'failed', 'aborted'])),
    -- (the highest epoch the run had is never below its current one)
    CONSTRAINT runs_max_driver_epoch_check
        CHECK (driver_epoch IS NULL
               OR max_driver_epoch IS NOT NULL AND max_driver_epoch OPERATOR(pg_catalog.>=) driver_epoch)
);
-- run_list_by_thread (by started_at, then run_id as UTF-8 bytes) and
-- run_find_active (the latest).
CREATE INDEX runs_thread_order_idx
    ON sandbox_store.runs (thread_id, started_at, run_id COLLATE "C");
-- run_list_reclaimable: the detached running runs, by detached_since.
CREATE INDEX runs_detached_idx
    ON sandbox_store.runs (detached_since)
 WHERE status OPERATOR(pg_catalog.=) 'running' AND detached_since IS NOT NULL;
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.runs', '');
COMMENT ON TABLE sandbox_store.runs IS
'Agent runs (RunStore records): run id, thread, status, startedAt and finishedAt (epoch ms, as the client gave them), error, usage, sandbox key, detachedSince, cancelRequested, the current driver epoch (NULL: none) and the highest the run ever had (NULL: never claimed), which the next claim goes above. Written only through the run_* functions.';

CREATE TABLE sandbox_store.run_logs (
    run_id     pg_catalog.text NOT NULL,
    last_seq   pg_catalog.int8 NOT NULL DEFAULT 0,
    closed_at  pg_catalog.timestamptz,
    updated_at pg_catalog.timestamptz NOT NULL,
    watched    pg_catalog.bool NOT NULL DEFAULT false,
    CONSTRAINT run_logs_pkey PRIMARY KEY (run_id),
    CONSTRAINT run_logs_run_id_length CHECK (pg_catalog.octet_length(run_id) BETWEEN 1 AND @MAX_TEXT_BYTES@)
);
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.run_logs', '');
COMMENT ON TABLE sandbox_store.run_logs IS
'One row per run log: the greatest seq stored (0: none), when it was closed (NULL: open), when it was last written, and whether a reader has watched it (run_log_watch: only then do its writes notify). A log may exist without a runs row. Written only through the run_log_* functions.';

CREATE TABLE sandbox_store.run_log_entries (
    run_id pg_catalog.text NOT NULL,
    seq    pg_catalog.int8 NOT NULL,
    chunk  pg_catalog.jsonb NOT NULL,
    CONSTRAINT run_log_entries_pkey PRIMARY KEY (run_id, seq)
);
SELECT pg_catalog.pg_extension_config_dump('sandbox_store.run_log_entries', '');
COMMENT ON TABLE sandbox_store.run_log_entries IS
'The entries of the run logs: each chunk (a JSON object) under its run id and seq. No foreign key to run_logs (the append path does without its cost): the run_log_* functions keep them consistent.';

REVOKE ALL ON TABLE sandbox_store.runs, sandbox_store.run_logs,
    sandbox_store.run_log_entries FROM PUBLIC;

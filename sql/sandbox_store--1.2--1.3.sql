/* sandbox_store--1.2--1.3.sql: one C symbol per SQL signature */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sandbox_store UPDATE TO '1.3'" to load this file. \quit

-- The functions whose signature changed in 1.1 bind the C symbol of that
-- signature, so the library no longer tells versions apart by counting
-- arguments for them.  CREATE OR REPLACE keeps each function's OID, grants,
-- initial privileges and comment; nothing else changes, and calls in other
-- sessions go on (their plans are made again at next use).

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_upsert(
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now(),
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_upsert_1_1'
LANGUAGE C VOLATILE;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_delete(
    key pg_catalog.text,
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_delete_1_1'
LANGUAGE C VOLATILE;

CREATE OR REPLACE FUNCTION sandbox_store.sandbox_ensure(
    key pg_catalog.text,
    run_id pg_catalog.text,
    max_age pg_catalog.interval DEFAULT NULL,
    provider pg_catalog.text DEFAULT NULL,
    wait pg_catalog.interval DEFAULT NULL,
    lease pg_catalog.interval DEFAULT NULL)
RETURNS SETOF sandbox_store.ensure_result
AS 'MODULE_PATHNAME', 'sandbox_ensure_1_1'
LANGUAGE C VOLATILE ROWS 1;


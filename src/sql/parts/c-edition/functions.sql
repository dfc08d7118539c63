-- The functions.  Each binds the C symbol of its signature (a symbol
-- without a version suffix is the signature's first: 1.0 or 1.1), under the
-- name _v1_4_1 that the 1.4 library does not have: a session still running
-- the 1.4 library after the update fails its next call instead of running
-- 1.4's code (docs/upgrading.md, "Connections opened before an update").

CREATE FUNCTION sandbox_store.sandbox_upsert(
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now(),
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_upsert_1_1_v1_4_1'
LANGUAGE C VOLATILE;

CREATE FUNCTION sandbox_store.sandbox_upsert_release(
    key pg_catalog.text,
    fence pg_catalog.int8,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text DEFAULT NULL,
    latest_run_id pg_catalog.text DEFAULT NULL,
    updated_at pg_catalog.timestamptz DEFAULT pg_catalog.now())
RETURNS sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_upsert_release_v1_4_1'
LANGUAGE C VOLATILE;

CREATE FUNCTION sandbox_store.sandbox_get(key pg_catalog.text)
RETURNS SETOF sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_get_v1_4_1'
LANGUAGE C STABLE ROWS 1;

CREATE FUNCTION sandbox_store.sandbox_delete(
    key pg_catalog.text,
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_delete_1_1_v1_4_1'
LANGUAGE C VOLATILE;

CREATE FUNCTION sandbox_store.sandbox_list(thread_id pg_catalog.text)
RETURNS SETOF sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_list_v1_4_1'
LANGUAGE C STABLE ROWS 4;

CREATE FUNCTION sandbox_store.sandbox_ensure(
    key pg_catalog.text,
    run_id pg_catalog.text,
    max_age pg_catalog.interval DEFAULT NULL,
    provider pg_catalog.text DEFAULT NULL,
    wait pg_catalog.interval DEFAULT NULL,
    lease pg_catalog.interval DEFAULT NULL)
RETURNS SETOF sandbox_store.ensure_result
AS 'MODULE_PATHNAME', 'sandbox_ensure_1_1_v1_4_1'
LANGUAGE C VOLATILE ROWS 1;

CREATE FUNCTION sandbox_store.sandbox_lock(
    key pg_catalog.text,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.void
AS 'MODULE_PATHNAME', 'sandbox_lock_v1_4_1'
LANGUAGE C VOLATILE;

CREATE FUNCTION sandbox_store.sandbox_try_lock(key pg_catalog.text)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_try_lock_v1_4_1'
LANGUAGE C VOLATILE;

CREATE FUNCTION sandbox_store.sandbox_lock_id(key pg_catalog.text)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'sandbox_lock_id_v1_4_1'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION sandbox_store.sandbox_claim(
    key pg_catalog.text,
    lease pg_catalog.interval,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS TABLE (
    fence pg_catalog.int8,
    owner_token pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz)
AS 'MODULE_PATHNAME', 'sandbox_claim_v1_4_1'
LANGUAGE C VOLATILE ROWS 1;

CREATE FUNCTION sandbox_store.sandbox_renew(
    key pg_catalog.text,
    owner_token pg_catalog.uuid,
    lease pg_catalog.interval)
RETURNS pg_catalog.timestamptz
AS 'MODULE_PATHNAME', 'sandbox_renew_v1_4_1'
LANGUAGE C VOLATILE;

CREATE FUNCTION sandbox_store.sandbox_release(
    key pg_catalog.text,
    owner_token pg_catalog.uuid)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'sandbox_release_v1_4_1'
LANGUAGE C VOLATILE;

CREATE FUNCTION sandbox_store.sandbox_reap(
    idle_for pg_catalog.interval,
    max_rows pg_catalog.int4 DEFAULT 100)
RETURNS SETOF sandbox_store.instances
AS 'MODULE_PATHNAME', 'sandbox_reap_v1_4_1'
LANGUAGE C VOLATILE;

CREATE FUNCTION sandbox_store.sandbox_lock_holder(key pg_catalog.text)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'sandbox_lock_holder_v1_4_1'
LANGUAGE C VOLATILE;

-- A run's log append, the hot path of a durable run (1.5.1; run_log.c).
-- The SQL edition's is PL/pgSQL (parts/sql-edition/run_log.run_log_append.sql), with the
-- same checks and messages.  row_security is pinned as the SQL edition
-- pins it: forced on a run table, the statements fail (42501) instead of
-- being filtered by a policy.  The symbol of 1.6.0 (an append without an
-- epoch is refused once the run was ever claimed); the library keeps
-- 1.5.1's for a database not yet updated.
CREATE FUNCTION sandbox_store.run_log_append(
    run_id pg_catalog.text,
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.int8[]
AS 'MODULE_PATHNAME', 'sandbox_run_log_append_v1_6_0'
LANGUAGE C VOLATILE
SET row_security = off;

-- The same with notify (1.7.0): false, a watched log's append does not
-- notify when it commits; the caller wakes the readers with run_log_wake
-- after the commit.  No defaults: a call without notify is the function
-- above.
CREATE FUNCTION sandbox_store.run_log_append(
    run_id pg_catalog.text,
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8,
    notify pg_catalog.bool)
RETURNS pg_catalog.int8[]
AS 'MODULE_PATHNAME', 'sandbox_run_log_append_v1_7_0'
LANGUAGE C VOLATILE
SET row_security = off;

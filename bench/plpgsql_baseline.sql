-- bench/plpgsql_baseline.sql: sandbox_ensure, sandbox_get and sandbox_upsert
-- written in PL/pgSQL, the way a user would write them without the extension.
--
-- This is the "any of the above vs a PL/pgSQL implementation" baseline of the
-- benchmark.  It is written to be a fair, competent baseline:
--
--   * same signatures and named arguments as the C functions, same argument
--     checks (NULL -> 22004, empty -> 22023, over 1024 bytes -> 22001);
--   * the same per-key exclusion with a transaction-scoped advisory lock
--     (pg_advisory_xact_lock on hashtextextended(key, 0));
--   * the same single-statement resume path as the C code: one
--     UPDATE ... RETURNING stamps a fresh record (at READ COMMITTED each
--     statement of a VOLATILE PL/pgSQL function reads with a fresh snapshot,
--     so it sees what a previous lock holder committed);
--   * the same security model as the extension: callers need no privilege
--     on the table, so the functions are SECURITY DEFINER with a pinned
--     search_path (what a careful user does; it costs a GUC save/restore per
--     call, see BENCHMARKS.md).
--
-- What it does not do (and what the C version does): a private lock space
-- (it shares pg_advisory_xact_lock's bigint space with the application), the
-- REPEATABLE READ / SERIALIZABLE 40001 check, the WARNING when ensure answers
-- create outside a transaction block, restoring lock_timeout after a bounded
-- wait (set_config(..., true) keeps it until the transaction ends), and, in
-- version 1.1, the check that no lease-mode claim holds the key.
--
-- Installed in schema bench_plpgsql by bench/run.sh.

\set ON_ERROR_STOP 1
SET client_min_messages = warning;

DROP SCHEMA IF EXISTS bench_plpgsql CASCADE;
CREATE SCHEMA bench_plpgsql;

-- sandbox_ensure's result row: action, then the record.
CREATE TYPE bench_plpgsql.ensure_result AS (
    action              text,
    key                 text,
    provider            text,
    provider_sandbox_id text,
    latest_snapshot_id  text,
    thread_id           text,
    latest_run_id       text,
    updated_at          timestamptz);

CREATE FUNCTION bench_plpgsql.sandbox_ensure(
    key text,
    run_id text,
    max_age interval DEFAULT NULL,
    provider text DEFAULT NULL,
    wait interval DEFAULT NULL)
RETURNS SETOF bench_plpgsql.ensure_result
LANGUAGE plpgsql VOLATILE ROWS 1
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    res bench_plpgsql.ensure_result;
    lock_id bigint;
BEGIN
    IF sandbox_ensure.key IS NULL THEN
        RAISE EXCEPTION 'key must not be null' USING ERRCODE = '22004';
    ELSIF octet_length(sandbox_ensure.key) = 0 THEN
        RAISE EXCEPTION 'key must not be empty' USING ERRCODE = '22023';
    ELSIF octet_length(sandbox_ensure.key) > 1024 THEN
        RAISE EXCEPTION 'key is too long' USING ERRCODE = '22001';
    END IF;
    IF run_id IS NULL THEN
        RAISE EXCEPTION 'run_id must not be null' USING ERRCODE = '22004';
    ELSIF octet_length(run_id) = 0 THEN
        RAISE EXCEPTION 'run_id must not be empty' USING ERRCODE = '22023';
    ELSIF octet_length(run_id) > 1024 THEN
        RAISE EXCEPTION 'run_id is too long' USING ERRCODE = '22001';
    END IF;
    IF max_age < interval '0' THEN
        RAISE EXCEPTION 'max_age must not be negative' USING ERRCODE = '22023';
    END IF;
    IF sandbox_ensure.provider IS NOT NULL THEN
        IF octet_length(sandbox_ensure.provider) = 0 THEN
            RAISE EXCEPTION 'provider must not be empty' USING ERRCODE = '22023';
        ELSIF octet_length(sandbox_ensure.provider) > 1024 THEN
            RAISE EXCEPTION 'provider is too long' USING ERRCODE = '22001';
        END IF;
    END IF;
    IF wait < interval '0' THEN
        RAISE EXCEPTION 'wait must not be negative' USING ERRCODE = '22023';
    END IF;

    lock_id := hashtextextended(sandbox_ensure.key, 0);
    IF wait IS NULL THEN
        PERFORM pg_advisory_xact_lock(lock_id);
    ELSIF wait = interval '0' THEN
        IF NOT pg_try_advisory_xact_lock(lock_id) THEN
            RAISE EXCEPTION 'could not lock sandbox key "%"', sandbox_ensure.key
                USING ERRCODE = '55P03';
        END IF;
    ELSE
        PERFORM set_config('lock_timeout',
                           ceil(extract(epoch FROM wait) * 1000)::bigint::text, true);
        PERFORM pg_advisory_xact_lock(lock_id);
    END IF;

    -- resume: stamp a fresh record, in one statement
    UPDATE sandbox_store.instances AS i
       SET latest_run_id = run_id, updated_at = now()
     WHERE i.key = sandbox_ensure.key
       AND (max_age IS NULL OR i.updated_at >= now() - max_age)
       AND (sandbox_ensure.provider IS NULL OR i.provider = sandbox_ensure.provider)
    RETURNING 'resume', i.key, i.provider, i.provider_sandbox_id, i.latest_snapshot_id,
              i.thread_id, i.latest_run_id, i.updated_at
         INTO res;
    IF NOT FOUND THEN
        -- recreate (a stale record: return it, unstamped) or create
        SELECT 'recreate', i.key, i.provider, i.provider_sandbox_id, i.latest_snapshot_id,
               i.thread_id, i.latest_run_id, i.updated_at
          INTO res
          FROM sandbox_store.instances AS i
         WHERE i.key = sandbox_ensure.key;
        IF NOT FOUND THEN
            res := ROW('create', NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        END IF;
    END IF;
    RETURN NEXT res;
END
$$;

CREATE FUNCTION bench_plpgsql.sandbox_get(key text)
RETURNS SETOF sandbox_store.instances
LANGUAGE plpgsql STABLE ROWS 1
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF sandbox_get.key IS NULL THEN
        RAISE EXCEPTION 'key must not be null' USING ERRCODE = '22004';
    ELSIF octet_length(sandbox_get.key) = 0 THEN
        RAISE EXCEPTION 'key must not be empty' USING ERRCODE = '22023';
    ELSIF octet_length(sandbox_get.key) > 1024 THEN
        RAISE EXCEPTION 'key is too long' USING ERRCODE = '22001';
    END IF;
    RETURN QUERY SELECT * FROM sandbox_store.instances AS i WHERE i.key = sandbox_get.key;
END
$$;

CREATE FUNCTION bench_plpgsql.sandbox_upsert(
    key text,
    provider text,
    provider_sandbox_id text,
    thread_id text,
    latest_snapshot_id text DEFAULT NULL,
    latest_run_id text DEFAULT NULL,
    updated_at timestamptz DEFAULT now())
RETURNS sandbox_store.instances
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r sandbox_store.instances;
BEGIN
    IF sandbox_upsert.key IS NULL THEN
        RAISE EXCEPTION 'key must not be null' USING ERRCODE = '22004';
    ELSIF octet_length(sandbox_upsert.key) NOT BETWEEN 1 AND 1024 THEN
        RAISE EXCEPTION 'key must be 1..1024 bytes'
            USING ERRCODE = CASE WHEN octet_length(sandbox_upsert.key) = 0 THEN '22023' ELSE '22001' END;
    END IF;
    IF sandbox_upsert.provider IS NULL THEN
        RAISE EXCEPTION 'provider must not be null' USING ERRCODE = '22004';
    ELSIF octet_length(sandbox_upsert.provider) NOT BETWEEN 1 AND 1024 THEN
        RAISE EXCEPTION 'provider must be 1..1024 bytes'
            USING ERRCODE = CASE WHEN octet_length(sandbox_upsert.provider) = 0 THEN '22023' ELSE '22001' END;
    END IF;
    IF sandbox_upsert.provider_sandbox_id IS NULL THEN
        RAISE EXCEPTION 'provider_sandbox_id must not be null' USING ERRCODE = '22004';
    ELSIF octet_length(sandbox_upsert.provider_sandbox_id) NOT BETWEEN 1 AND 1024 THEN
        RAISE EXCEPTION 'provider_sandbox_id must be 1..1024 bytes'
            USING ERRCODE = CASE WHEN octet_length(sandbox_upsert.provider_sandbox_id) = 0 THEN '22023' ELSE '22001' END;
    END IF;
    IF sandbox_upsert.thread_id IS NULL THEN
        RAISE EXCEPTION 'thread_id must not be null' USING ERRCODE = '22004';
    ELSIF octet_length(sandbox_upsert.thread_id) NOT BETWEEN 1 AND 1024 THEN
        RAISE EXCEPTION 'thread_id must be 1..1024 bytes'
            USING ERRCODE = CASE WHEN octet_length(sandbox_upsert.thread_id) = 0 THEN '22023' ELSE '22001' END;
    END IF;
    IF octet_length(sandbox_upsert.latest_snapshot_id) NOT BETWEEN 1 AND 1024 THEN
        RAISE EXCEPTION 'latest_snapshot_id must be 1..1024 bytes'
            USING ERRCODE = CASE WHEN octet_length(sandbox_upsert.latest_snapshot_id) = 0 THEN '22023' ELSE '22001' END;
    END IF;
    IF octet_length(sandbox_upsert.latest_run_id) NOT BETWEEN 1 AND 1024 THEN
        RAISE EXCEPTION 'latest_run_id must be 1..1024 bytes'
            USING ERRCODE = CASE WHEN octet_length(sandbox_upsert.latest_run_id) = 0 THEN '22023' ELSE '22001' END;
    END IF;
    IF sandbox_upsert.updated_at IS NULL THEN
        RAISE EXCEPTION 'updated_at must not be null' USING ERRCODE = '22004';
    ELSIF NOT isfinite(sandbox_upsert.updated_at) THEN
        RAISE EXCEPTION 'updated_at must be a finite timestamp' USING ERRCODE = '22023';
    END IF;

    INSERT INTO sandbox_store.instances AS i
           (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id,
            latest_run_id, updated_at)
    VALUES (sandbox_upsert.key, sandbox_upsert.provider, sandbox_upsert.provider_sandbox_id,
            sandbox_upsert.latest_snapshot_id, sandbox_upsert.thread_id,
            sandbox_upsert.latest_run_id, sandbox_upsert.updated_at)
    ON CONFLICT ON CONSTRAINT instances_pkey DO UPDATE SET
           provider = EXCLUDED.provider,
           provider_sandbox_id = EXCLUDED.provider_sandbox_id,
           latest_snapshot_id = EXCLUDED.latest_snapshot_id,
           thread_id = EXCLUDED.thread_id,
           latest_run_id = EXCLUDED.latest_run_id,
           updated_at = EXCLUDED.updated_at
    RETURNING i.* INTO r;
    RETURN r;
END
$$;

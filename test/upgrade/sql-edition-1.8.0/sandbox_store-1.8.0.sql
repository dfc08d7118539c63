-- sandbox_store 1.8.0, SQL edition, plain script.
--
-- For a PostgreSQL server that cannot load the C library and has no pg_tle.
-- Run it once per database, as the role that is to own sandbox_store (it
-- needs CREATE on the database, not superuser):
--
--     psql -v ON_ERROR_STOP=1 -f sandbox_store-1.8.0.sql
--
-- It makes the schema sandbox_store and everything in it, in one
-- transaction: if anything fails, nothing is left behind.
-- SELECT * FROM sandbox_store.edition() says what is installed.

BEGIN;
SET LOCAL search_path = pg_catalog, pg_temp;
SET LOCAL client_min_messages = warning;

-- One edition per database: refuse when sandbox_store is installed as an
-- extension (the C edition, or the SQL edition through pg_tle).
DO $$
DECLARE
    installed pg_catalog.text;
    language pg_catalog.name;
    owner_name pg_catalog.name;
BEGIN
    SELECT e.extversion INTO installed
      FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'sandbox_store';
    IF installed IS NOT NULL THEN
        SELECT l.lanname INTO language
          FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
          JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
         WHERE n.nspname OPERATOR(pg_catalog.=) 'sandbox_store' AND p.proname OPERATOR(pg_catalog.=) 'sandbox_get';
        RAISE EXCEPTION USING
            ERRCODE = 'duplicate_object',
            MESSAGE = 'sandbox_store is already installed in this database',
            DETAIL = pg_catalog.format('Extension sandbox_store %s is installed (%s).', installed,
                                       CASE WHEN language OPERATOR(pg_catalog.=) 'c' THEN 'the C edition'
                                            ELSE 'the SQL edition, through pg_tle' END),
            HINT = 'Keep one edition per database: use ALTER EXTENSION sandbox_store UPDATE to change its version.';
    END IF;
    -- The script makes two schemas: the role needs CREATE on the database.
    IF NOT pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = pg_catalog.format('role %I cannot create schemas in database %I', CURRENT_USER, pg_catalog.current_database()),
            DETAIL = 'The plain script makes the schemas sandbox_store and sandbox_store_internal, which needs the CREATE privilege on the database.',
            HINT = 'Run it as the database owner, or as a role that was granted CREATE on the database (GRANT CREATE ON DATABASE ... TO ...).';
    END IF;
    -- A schema sandbox_store this role cannot create in: most often the
    -- empty one DROP EXTENSION leaves (CREATE EXTENSION made it, owned by
    -- the role that created the extension).
    SELECT r.rolname INTO owner_name
      FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
     WHERE n.nspname OPERATOR(pg_catalog.=) 'sandbox_store';
    IF owner_name IS NOT NULL AND NOT pg_catalog.has_schema_privilege('sandbox_store', 'CREATE') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = pg_catalog.format('schema sandbox_store already exists and role %I cannot create in it', CURRENT_USER),
            DETAIL = pg_catalog.format('It belongs to role %I.  DROP EXTENSION sandbox_store leaves the schema that CREATE EXTENSION made.', owner_name),
            HINT = 'If it is empty, drop it as its owner or a superuser (DROP SCHEMA sandbox_store) and run this script again, as the reference''s "Moving between editions" describes.';
    END IF;
END
$$;

CREATE SCHEMA IF NOT EXISTS sandbox_store;

-- The schema sandbox_store may exist before this script runs: CREATE
-- EXTENSION installs into it if it does.  Refuse one that belongs to anyone
-- but the installing role or a superuser (its owner could drop what the
-- extension relies on, rename it, and put look-alike objects in its place),
-- and one that already holds sandbox_store installed another way (the plain
-- SQL script): one database holds one edition.
DO $$
DECLARE
    owner_name pg_catalog.name;
    trusted boolean;
    installed pg_catalog.text;
BEGIN
    -- (From the catalogs only: nothing in an existing schema is run.)
    IF EXISTS (SELECT FROM pg_catalog.pg_proc p
                 JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
                WHERE n.nspname OPERATOR(pg_catalog.=) 'sandbox_store'
                  AND p.proname OPERATOR(pg_catalog.=) 'sandbox_get') THEN
        SELECT pg_catalog.format('plain edition, version %s',
                                 COALESCE(pg_catalog.max(pg_catalog.substring(p.prosrc, 'extversion, ''([0-9.]+)''')), 'unknown'))
          INTO installed
          FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
         WHERE n.nspname OPERATOR(pg_catalog.=) 'sandbox_store' AND p.proname OPERATOR(pg_catalog.=) 'edition';
    END IF;
    IF installed IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'duplicate_object',
            MESSAGE = 'sandbox_store is already installed in this database',
            DETAIL = pg_catalog.format('Schema sandbox_store already holds sandbox_store (%s), installed without CREATE EXTENSION.', installed),
            HINT = 'Keep one edition per database.  To change editions, save the records and claims, drop schema sandbox_store and install again, as the reference''s "Moving between editions" describes.';
    END IF;
    SELECT r.rolname, r.rolsuper OR r.rolname OPERATOR(pg_catalog.=) CURRENT_USER
      INTO owner_name, trusted
      FROM pg_catalog.pg_namespace n
      JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
     WHERE n.nspname OPERATOR(pg_catalog.=) 'sandbox_store';
    IF NOT trusted THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = pg_catalog.format('schema "sandbox_store" already exists and belongs to role %I', owner_name),
            DETAIL = 'The extension installs into that schema, and its owner could replace the extension''s objects.',
            HINT = 'Drop the schema, or make a superuser or the installing role its owner (ALTER SCHEMA sandbox_store OWNER TO ...), and install again.';
    END IF;
END
$$;

-- The 1..1024-byte rule of the text columns, as a domain (a domain's
-- constraint is compiled once per backend and checked only for the columns
-- a statement assigns; it binds every writer, superusers included).  Clients
-- see the columns as text (the protocol sends a domain's base type).
CREATE DOMAIN sandbox_store.bounded_text AS pg_catalog.text
    CONSTRAINT bounded_text_length
        CHECK (pg_catalog.octet_length(VALUE) BETWEEN 1 AND 1024);
COMMENT ON DOMAIN sandbox_store.bounded_text IS
'Text of 1..1024 bytes: the type of the text columns of sandbox_store.instances.';

-- The records: one per instance key.  No index on latest_run_id or
-- updated_at, and free space in each page (fillfactor 90): a resume stamp is
-- a heap-only tuple update.
CREATE TABLE sandbox_store.instances (
    key                 sandbox_store.bounded_text NOT NULL,
    provider            sandbox_store.bounded_text NOT NULL,
    provider_sandbox_id sandbox_store.bounded_text NOT NULL,
    latest_snapshot_id  sandbox_store.bounded_text,
    thread_id           sandbox_store.bounded_text NOT NULL,
    latest_run_id       sandbox_store.bounded_text,
    updated_at          pg_catalog.timestamptz NOT NULL,
    CONSTRAINT instances_pkey PRIMARY KEY (key)
) WITH (fillfactor = 90);

-- sandbox_list(thread_id).
CREATE INDEX instances_thread_id_idx ON sandbox_store.instances (thread_id);

-- Records survive pg_dump / restore.

COMMENT ON TABLE sandbox_store.instances IS
'Sandbox instance records, one per instance key. Written only through the sandbox_store functions; app roles get no privilege on it.';
COMMENT ON COLUMN sandbox_store.instances.key IS
'Compound instance key (thread, sandbox definition, provider, workspace, tenant); 1..1024 bytes.';
COMMENT ON COLUMN sandbox_store.instances.provider IS
'Provider that owns provider_sandbox_id.';
COMMENT ON COLUMN sandbox_store.instances.provider_sandbox_id IS
'The provider''s id of the sandbox, used to resume it.';
COMMENT ON COLUMN sandbox_store.instances.latest_snapshot_id IS
'Newest snapshot of the sandbox, when the provider has snapshots.';
COMMENT ON COLUMN sandbox_store.instances.thread_id IS
'The conversation thread the sandbox serves.';
COMMENT ON COLUMN sandbox_store.instances.latest_run_id IS
'The last run that used the sandbox.';
COMMENT ON COLUMN sandbox_store.instances.updated_at IS
'Last write; apps sweep on it.';

-- Fences: one sequence, so they strictly increase per key forever (across
-- release, expiry, delete, crash restart, and dump/restore: it is dumped).
CREATE SEQUENCE sandbox_store.fence_seq AS pg_catalog.int8 MINVALUE 1 NO CYCLE;
COMMENT ON SEQUENCE sandbox_store.fence_seq IS
'Source of claim fences: strictly increasing, never reused.';

-- One row per key ever claimed, kept after release so it remembers the
-- key's newest fence; owner_token and lease_expires_at are set while a claim
-- holds the key.  Claims are updates of that row: fillfactor 90 keeps them HOT.
CREATE TABLE sandbox_store.leases (
    key              pg_catalog.text NOT NULL,
    fence            pg_catalog.int8 NOT NULL,
    owner_token      pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz,
    CONSTRAINT leases_pkey PRIMARY KEY (key),
    CONSTRAINT leases_key_length
        CHECK (pg_catalog.octet_length(key) BETWEEN 1 AND 1024),
    CONSTRAINT leases_claim_complete
        CHECK ((owner_token IS NULL) = (lease_expires_at IS NULL))
) WITH (fillfactor = 90);
COMMENT ON TABLE sandbox_store.leases IS
'Claims on keys (lease mode) and each key''s newest fence. Written only through the sandbox_store functions.';

CREATE VIEW sandbox_store.claims AS
SELECT key, fence, owner_token, lease_expires_at
  FROM sandbox_store.leases
 WHERE owner_token IS NOT NULL
   AND lease_expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp();
COMMENT ON VIEW sandbox_store.claims IS
'Live claims: keys held in lease mode, with their fence, owner token and expiry.';

-- The row sandbox_ensure returns.
CREATE TYPE sandbox_store.ensure_result AS (
    action pg_catalog.text,
    key pg_catalog.text,
    provider pg_catalog.text,
    provider_sandbox_id pg_catalog.text,
    latest_snapshot_id pg_catalog.text,
    thread_id pg_catalog.text,
    latest_run_id pg_catalog.text,
    updated_at pg_catalog.timestamptz,
    fence pg_catalog.int8,
    owner_token pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz);
COMMENT ON TYPE sandbox_store.ensure_result IS
'The row sandbox_ensure returns: action, the record''s columns, and the claim (lease mode).';

-- The schema of the internal helper functions (the names that start with an
-- underscore).  No role but its owner, the role that installed
-- sandbox_store, has USAGE on it, and nobody is granted its functions: the
-- interface functions call them as their owner.  An app role that was
-- granted every function of schema sandbox_store (GRANT EXECUTE ON ALL
-- FUNCTIONS IN SCHEMA sandbox_store) can call the documented interface and
-- nothing else.  The install script makes it (CREATE SCHEMA fails if a
-- schema of that name exists: nobody can lay one out beforehand), and
-- DROP EXTENSION drops it with the extension.
CREATE SCHEMA sandbox_store_internal;
COMMENT ON SCHEMA sandbox_store_internal IS
'Internal helper functions of sandbox_store: no role but the owner may use them.';

-- The key locks of this database, as pg_locks shows them, so that tests,
-- monitoring queries and operators never spell out the lock-tag class
-- (objsubid 1): who holds (granted) and who waits for each key's lock.
-- lock_id is sandbox_lock_id(key) of the key.  pg_locks shows every
-- database's locks; this view, this database's keys only.
CREATE VIEW sandbox_store.key_locks AS
SELECT l.pid,
       l.granted,
       (l.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
         OPERATOR(pg_catalog.|) l.objid::pg_catalog.int8 AS lock_id,
       l.mode,
       l.virtualtransaction,
       l.waitstart
  FROM pg_catalog.pg_locks l
 WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
   AND l.objsubid OPERATOR(pg_catalog.=) 1
   AND l.database OPERATOR(pg_catalog.=)
       (SELECT d.oid FROM pg_catalog.pg_database d
         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());
COMMENT ON VIEW sandbox_store.key_locks IS
'Key locks of this database: the backend (pid; NULL for a prepared transaction), whether it holds (granted) or waits, and the key''s lock id (sandbox_lock_id(key)).';

-- Which edition of sandbox_store this database has, and its version: c (the
-- C edition, CREATE EXTENSION with the library), pg_tle (the SQL edition
-- registered with pg_tle, then CREATE EXTENSION) or plain (the SQL edition's
-- plain script, run with psql).
CREATE FUNCTION sandbox_store.edition(OUT edition pg_catalog.text, OUT version pg_catalog.text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE WHEN l.lanname OPERATOR(pg_catalog.=) 'c' THEN 'c'
            WHEN e.oid IS NOT NULL THEN 'pg_tle'
            ELSE 'plain' END,
       COALESCE(e.extversion, '1.8.0')
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
  LEFT JOIN pg_catalog.pg_extension e ON e.extname OPERATOR(pg_catalog.=) 'sandbox_store'
 WHERE p.oid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure('sandbox_store.sandbox_get(pg_catalog.text)')
$$;

COMMENT ON FUNCTION sandbox_store.edition() IS
'Which edition of sandbox_store this database has (c, pg_tle or plain) and its version.';

-- A text argument that is NULL (when required), empty or over 1024 bytes; a
-- key that is reserved (starts with E'\x01': the extension's own claims, such
-- as a thread's checkpoint writer on E'\x01checkpoint-writer\x01' || thread).
CREATE FUNCTION sandbox_store_internal._bad_text(v pg_catalog.text, arg pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF v IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = format('%s must not be null', arg);
    END IF;
    IF octet_length(v) = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must not be empty', arg);
    END IF;
    IF arg = 'key' AND octet_length(v) <= 1024 AND starts_with(v, E'\x01') THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'key is reserved',
            DETAIL = E'Keys that start with E''\\x01'' are reserved for the extension''s own claims, such as the checkpoint writers''.',
            HINT = 'Use a key that does not start with the byte 0x01.';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'string_data_right_truncation',
        MESSAGE = format('%s is too long', arg),
        DETAIL = format('The value has %s bytes; at most 1024 are allowed.', octet_length(v));
END
$$;

-- A fence argument must be positive.
CREATE FUNCTION sandbox_store_internal._check_fence_arg(f pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF f <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'fence must be positive',
            DETAIL = format('The value given is %s; fences start at 1.', f);
    END IF;
END
$$;

-- The interface.

-- An interval argument: parts of one sign; not negative; positive (and
-- now() + it still a timestamp) where the argument must be positive.
CREATE FUNCTION sandbox_store_internal._check_interval(v pg_catalog.interval, arg pg_catalog.text,
                                              must_be_positive pg_catalog.bool)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    -- v's parts, as _interval_parts gives them (computed here: one call fewer)
    months pg_catalog.numeric := extract(year FROM v) * 12 + extract(month FROM v);
    days pg_catalog.numeric := extract(day FROM v);
    usecs pg_catalog.numeric := (extract(hour FROM v) * 3600 + extract(minute FROM v) * 60 + extract(second FROM v)) * 1000000;
    some_negative boolean := months < 0 OR days < 0 OR usecs < 0;
    some_positive boolean := months > 0 OR days > 0 OR usecs > 0;
BEGIN
    IF some_negative AND some_positive THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must not mix negative and positive parts', arg),
            DETAIL = format('The value given is %s.  Its months, days and time last differently on different dates, so its sign depends on the date.', v),
            HINT = 'Write it with parts of one sign, such as ''36 hours'' instead of ''2 days -12 hours''.';
    END IF;
    IF (some_negative AND must_be_positive) OR (must_be_positive AND NOT some_positive) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must be positive', arg),
            DETAIL = format('The value given is %s.', v);
    END IF;
    IF some_negative THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must not be negative', arg),
            DETAIL = format('The value given is %s.', v);
    END IF;
    -- now() + v must stay a timestamp (a month counted as 31 days, as the C
    -- edition counts it).
    IF must_be_positive
       AND (months * 31 * 86400000000 + days * 86400000000 + usecs)
           >= (extract(epoch FROM timestamptz '294276-12-31 23:59:59.999999+00')
               - extract(epoch FROM clock_timestamp())) * 1000000 + 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s is too long', arg),
            DETAIL = format('now() + %s would be past the latest timestamp PostgreSQL has.', arg);
    END IF;
END
$$;

-- Arguments of the record writers, in declaration order.
CREATE FUNCTION sandbox_store_internal._check_record_args(p_provider pg_catalog.text, p_provider_sandbox_id pg_catalog.text,
                                                 p_thread_id pg_catalog.text, p_latest_snapshot_id pg_catalog.text,
                                                 p_latest_run_id pg_catalog.text, p_updated_at pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF p_provider IS NULL OR octet_length(p_provider) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(p_provider, 'provider');
    END IF;
    IF p_provider_sandbox_id IS NULL OR octet_length(p_provider_sandbox_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(p_provider_sandbox_id, 'provider_sandbox_id');
    END IF;
    IF p_thread_id IS NULL OR octet_length(p_thread_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(p_thread_id, 'thread_id');
    END IF;
    IF octet_length(p_latest_snapshot_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(p_latest_snapshot_id, 'latest_snapshot_id');
    END IF;
    IF octet_length(p_latest_run_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(p_latest_run_id, 'latest_run_id');
    END IF;
    IF p_updated_at IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = 'updated_at must not be null',
            HINT = 'Omit updated_at to use the current time.';
    END IF;
    IF NOT isfinite(p_updated_at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'updated_at must be a finite timestamp',
            DETAIL = 'Records are swept by age, which an infinite timestamp does not have.';
    END IF;
END
$$;

-- now() - age, in UTC; -infinity when that reaches before the earliest
-- timestamp (nothing is that old).
CREATE FUNCTION sandbox_store_internal._cutoff(age pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    p record := sandbox_store_internal._interval_parts(age);
BEGIN
    IF p.months * 31 * 86400000000 + p.days * 86400000000 + p.usecs
       >= (extract(epoch FROM now()) - extract(epoch FROM timestamptz '4714-11-24 00:00:00+00 BC')) * 1000000 THEN
        RETURN '-infinity';
    END IF;
    RETURN (now() AT TIME ZONE 'UTC' - age) AT TIME ZONE 'UTC';
END
$$;

-- An interval's months, days and microseconds, each with its sign (in
-- PL/pgSQL: a SQL function that returns a record is never inlined).
CREATE FUNCTION sandbox_store_internal._interval_parts(v pg_catalog.interval,
    OUT months pg_catalog.numeric, OUT days pg_catalog.numeric, OUT usecs pg_catalog.numeric)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
    months := extract(year FROM v) * 12 + extract(month FROM v);
    days := extract(day FROM v);
    usecs := (extract(hour FROM v) * 3600 + extract(minute FROM v) * 60 + extract(second FROM v)) * 1000000;
END
$$;

-- sandbox_store.max_checkpoint_bytes in bytes (0: not set, or no limit).
-- Without a library it is a placeholder: a text that any role may set,
-- read here as a size with or without a unit (kB, MB, GB).
CREATE FUNCTION sandbox_store_internal._max_checkpoint_bytes()
RETURNS pg_catalog.int8
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting pg_catalog.text := btrim(current_setting('sandbox_store.max_checkpoint_bytes', true));
BEGIN
    IF setting IS NULL OR setting = '' THEN
        RETURN 0;
    END IF;
    -- (a block with an exception handler only when there is a value to read)
    BEGIN
        RETURN pg_size_bytes(regexp_replace(setting, '^([0-9]+) *B$', E'\\1 bytes'));
    EXCEPTION WHEN invalid_parameter_value OR numeric_value_out_of_range THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('invalid value for sandbox_store.max_checkpoint_bytes: %s', to_jsonb(setting)),
            DETAIL = 'It is a size in bytes, with or without a unit (kB, MB, GB), such as 104857600 or 100MB; 0 means no limit.',
            HINT = 'Set it to a valid size, or RESET it.';
    END;
END
$$;

-- A required argument given as NULL.
CREATE FUNCTION sandbox_store_internal._null_arg(arg pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
        MESSAGE = format('%s must not be null', arg);
END
$$;

-- 25006 on a hot standby: a standby's advisory lock excludes nothing on the
-- primary.
CREATE FUNCTION sandbox_store_internal._refuse_on_standby(k pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'read_only_sql_transaction',
        MESSAGE = format('cannot lock sandbox key "%s" on a standby', k),
        DETAIL = 'A standby''s locks exclude nothing on the primary, where the key is held.',
        HINT = 'Connect to the primary.';
END
$$;

-- Whether the transaction reads with one snapshot (REPEATABLE READ or
-- SERIALIZABLE).
CREATE FUNCTION sandbox_store_internal._snapshot_isolation()
RETURNS pg_catalog.bool
LANGUAGE sql STABLE
AS $$
SELECT pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.=) ANY ('{repeatable read,serializable}'::pg_catalog.text[])
$$;

-- 40001 in our words, at REPEATABLE READ or SERIALIZABLE.
CREATE FUNCTION sandbox_store_internal._changed(k pg_catalog.text, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'serialization_failure',
        MESSAGE = format('could not serialize access to sandbox key "%s"', k),
        DETAIL = format('The key''s %s was changed by a transaction that committed after this transaction''s snapshot was taken.', what),
        HINT = 'Retry the transaction, or run it at READ COMMITTED.';
END
$$;

-- SB001, the ways a claim is lost.
CREATE FUNCTION sandbox_store_internal._claim_lost(k pg_catalog.text, how pg_catalog.text,
                                          f pg_catalog.int8, newest pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF how = 'token' THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = 'The owner token does not hold the key''s claim: it was released, or its lease expired and the key was taken over.  Nothing was changed.',
            HINT = 'Take a new claim with sandbox_claim or sandbox_ensure.';
    ELSIF how = 'old' THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The write is fenced with %s, but the key has fence %s since it was claimed or taken over again.  Nothing was changed.', f, newest),
            HINT = 'Stop writing for this key.';
    ELSIF how = 'foreign' AND newest = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The write is fenced with %s, but the key was never claimed.  Nothing was changed.', f),
            HINT = 'Fence a write with the fence of a claim on the same key.';
    ELSIF how = 'foreign' THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The write is fenced with %s, which was never given for this key (its fence is %s).  Nothing was changed.', f, newest),
            HINT = 'Fence a write with the fence of a claim on the same key.';
    ELSE
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The claim that was given fence %s has ended: it was released.  Nothing was changed.', f),
            HINT = 'If this retries a write whose acknowledgement was lost, read the record with sandbox_get to see whether the first attempt landed.  Otherwise take a new claim.';
    END IF;
END
$$;

-- A fence for a claim that SQL code takes itself (the checkpoint writers):
-- drawn and kept as for sandbox_claim.
CREATE FUNCTION sandbox_store_internal._draw_claim_fence(above pg_catalog.int8)
RETURNS pg_catalog.int8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f pg_catalog.int8 := sandbox_store_internal._draw_fence(above);
BEGIN
    IF (sandbox_store_internal._keep_fence()) IS NULL THEN END IF;
    RETURN f;
END
$$;

-- A new fence above `above`, drawn from fence_seq.  A draw holds the fence
-- draw lock (advisory (0, 21315)) shared; moving the sequence up to the key
-- holds it exclusive, draws again and calls setval only if still needed, so
-- the sequence never moves back under another draw.  In this edition the
-- draw lock lasts until the transaction ends.
CREATE FUNCTION sandbox_store_internal._draw_fence(above pg_catalog.int8)
RETURNS pg_catalog.int8
LANGUAGE plpgsql
AS $$
DECLARE
    f pg_catalog.int8;
BEGIN
    IF (pg_advisory_xact_lock_shared(0, 21315)) IS NULL THEN END IF;
    f := nextval('sandbox_store.fence_seq');
    IF f > above THEN
        RETURN f;
    END IF;
    IF (pg_advisory_xact_lock(0, 21315)) IS NULL THEN END IF;
    f := nextval('sandbox_store.fence_seq');
    IF f <= above THEN
        PERFORM setval('sandbox_store.fence_seq', above);
        f := nextval('sandbox_store.fence_seq');
    END IF;
    IF f <= above THEN
        RAISE EXCEPTION 'sequence sandbox_store.fence_seq gave % after being set to %', f, above
            USING ERRCODE = 'internal_error';
    END IF;
    RETURN f;
END
$$;

-- The fence just drawn must survive a crash before the client sees it.  On
-- PostgreSQL 17 and later the WAL that covers it is flushed now (a claim
-- made in a transaction block, or by a statement that streams its rows, is
-- seen before its commit).  Earlier versions have no SQL function that
-- flushes WAL: there the commit flushes it (synchronous_commit is raised for
-- the transaction if it is off), which covers a claim made by a statement
-- in autocommit (docs/reference.md, "Editions").
CREATE FUNCTION sandbox_store_internal._keep_fence()
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        IF (set_config('synchronous_commit', 'local', true)) IS NULL THEN END IF;
    END IF;
    IF current_setting('server_version_num')::pg_catalog.int4 >= 170000 THEN
        IF (pg_logical_emit_message(false, 'sandbox_store', ''::pg_catalog.text, true)) IS NULL THEN END IF;
    END IF;
END
$$;

-- REPEATABLE READ / SERIALIZABLE: a statement reads with the transaction's
-- snapshot, which may hide a row committed after it.  An INSERT ... ON
-- CONFLICT DO NOTHING that conflicts with a row the snapshot cannot see
-- raises PostgreSQL's 40001; the probe's own row, if it inserts one, is
-- rolled back with the block.  what: 'claim' (leases) or 'record'
-- (instances).
CREATE FUNCTION sandbox_store_internal._probe_hidden(k pg_catalog.text, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    BEGIN
        IF what = 'claim' THEN
            INSERT INTO sandbox_store.leases (key, fence) VALUES (k, 0)
                ON CONFLICT ON CONSTRAINT leases_pkey DO NOTHING;
        ELSE
            INSERT INTO sandbox_store.instances (key, provider, provider_sandbox_id, thread_id, updated_at)
                VALUES (k, '-', '-', '-', now())
                ON CONFLICT ON CONSTRAINT instances_pkey DO NOTHING;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'SBP01';
    EXCEPTION
        WHEN SQLSTATE 'SBP01' THEN
            NULL;
        WHEN serialization_failure THEN
            PERFORM sandbox_store_internal._changed(k, what);
    END;
END
$$;

-- Retire the key's expired claim (a lock-mode caller took the key over): a
-- new fence, no token.  False if the claim was renewed or released since it
-- was seen.
CREATE FUNCTION sandbox_store_internal._retire(k pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE plpgsql
AS $$
DECLARE
    newest pg_catalog.int8;
    is_claimed boolean;
BEGIN
    BEGIN
        SELECT l.fence, l.owner_token IS NOT NULL INTO newest, is_claimed
          FROM ONLY sandbox_store.leases l
         WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
    EXCEPTION WHEN serialization_failure THEN
        PERFORM sandbox_store_internal._changed(k, 'claim');
    END;
    IF is_claimed THEN
        UPDATE ONLY sandbox_store.leases l
           SET fence = GREATEST(l.fence + 1, sandbox_store_internal._draw_fence(newest)),
               owner_token = NULL, lease_expires_at = NULL
         WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL
           AND l.lease_expires_at OPERATOR(pg_catalog.<=) clock_timestamp();
        IF FOUND THEN
            RETURN true;
        END IF;
    END IF;
    IF sandbox_store_internal._snapshot_isolation() THEN
        PERFORM sandbox_store_internal._changed(k, 'claim');
    END IF;
    RETURN false;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_claim(
    key pg_catalog.text,
    lease pg_catalog.interval,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS TABLE (
    fence pg_catalog.int8,
    owner_token pg_catalog.uuid,
    lease_expires_at pg_catalog.timestamptz)
LANGUAGE plpgsql VOLATILE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_claim.key IS NULL OR octet_length(sandbox_claim.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_claim.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_claim.key, 'key');
    END IF;
    IF lease IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('lease');
    END IF;
    IF (sandbox_store_internal._check_interval(lease, 'lease', true)) IS NULL THEN END IF;
    IF wait IS NOT NULL THEN
        IF (sandbox_store_internal._check_interval(wait, 'wait', false)) IS NULL THEN END IF;
    END IF;
    RETURN QUERY SELECT t.fence, t.owner_token, t.lease_expires_at
                   FROM sandbox_store_internal._take(sandbox_claim.key, sandbox_store_internal._lock_id(sandbox_claim.key), wait, lease) t;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_release(
    key pg_catalog.text,
    owner_token pg_catalog.uuid)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_release.key IS NULL OR octet_length(sandbox_release.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_release.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_release.key, 'key');
    END IF;
    IF sandbox_release.owner_token IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('owner_token');
    END IF;
    IF (sandbox_store_internal._lock(sandbox_release.key, sandbox_store_internal._lock_id(sandbox_release.key))) IS NULL THEN END IF;
    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_release.key AND l.owner_token OPERATOR(pg_catalog.=) sandbox_release.owner_token;
    RETURN FOUND;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_renew(
    key pg_catalog.text,
    owner_token pg_catalog.uuid,
    lease pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    expires pg_catalog.timestamptz;
BEGIN
    IF sandbox_renew.key IS NULL OR octet_length(sandbox_renew.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_renew.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_renew.key, 'key');
    END IF;
    IF sandbox_renew.owner_token IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('owner_token');
    END IF;
    IF lease IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('lease');
    END IF;
    IF (sandbox_store_internal._check_interval(lease, 'lease', true)) IS NULL THEN END IF;
    IF (sandbox_store_internal._lock(sandbox_renew.key, sandbox_store_internal._lock_id(sandbox_renew.key))) IS NULL THEN END IF;
    UPDATE ONLY sandbox_store.leases l
       SET lease_expires_at = (clock_timestamp() AT TIME ZONE 'UTC' + lease) AT TIME ZONE 'UTC'
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_renew.key AND l.owner_token OPERATOR(pg_catalog.=) sandbox_renew.owner_token
    RETURNING l.lease_expires_at INTO expires;
    IF NOT FOUND THEN
        PERFORM sandbox_store_internal._claim_lost(sandbox_renew.key, 'token', 0, 0);
    END IF;
    RETURN expires;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_ensure(
    key pg_catalog.text,
    run_id pg_catalog.text,
    max_age pg_catalog.interval DEFAULT NULL,
    provider pg_catalog.text DEFAULT NULL,
    wait pg_catalog.interval DEFAULT NULL,
    lease pg_catalog.interval DEFAULT NULL)
RETURNS SETOF sandbox_store.ensure_result
LANGUAGE plpgsql VOLATILE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    c record;
    r sandbox_store.instances;
    res sandbox_store.ensure_result;
    cutoff pg_catalog.timestamptz;
    c_fence pg_catalog.int8;
    c_live boolean;
BEGIN
    -- One condition for the text arguments and max_age; when it holds, the
    -- checks in their order (key, run_id, max_age, provider) say which one
    -- is bad, and a good max_age gives the cutoff.  (The lengths as
    -- '[1,1024]' @> n: one operator each, where NOT BETWEEN evaluates the
    -- length twice with two operators.)
    IF sandbox_ensure.key IS NULL OR sandbox_ensure.run_id IS NULL
       OR NOT '[1,1024]'::int4range @> octet_length(sandbox_ensure.key)
       OR NOT '[1,1024]'::int4range @> octet_length(sandbox_ensure.run_id)
       OR NOT '[1,1024]'::int4range @> octet_length(sandbox_ensure.provider)
       OR starts_with(sandbox_ensure.key, E'\x01') OR max_age IS NOT NULL THEN
        IF sandbox_ensure.key IS NULL OR octet_length(sandbox_ensure.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_ensure.key, E'\x01') THEN
            PERFORM sandbox_store_internal._bad_text(sandbox_ensure.key, 'key');
        END IF;
        IF sandbox_ensure.run_id IS NULL OR octet_length(sandbox_ensure.run_id) NOT BETWEEN 1 AND 1024 THEN
            PERFORM sandbox_store_internal._bad_text(sandbox_ensure.run_id, 'run_id');
        END IF;
        IF max_age IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval(max_age, 'max_age', false)) IS NULL THEN END IF;
        END IF;
        IF octet_length(sandbox_ensure.provider) NOT BETWEEN 1 AND 1024 THEN
            PERFORM sandbox_store_internal._bad_text(sandbox_ensure.provider, 'provider');
        END IF;
        IF max_age IS NOT NULL THEN
            cutoff := sandbox_store_internal._cutoff(max_age);
        END IF;
    END IF;

    IF wait IS NULL AND lease IS NULL AND NOT sandbox_store_internal._snapshot_isolation() AND NOT pg_is_in_recovery() THEN
        -- Lock mode without a wait at READ COMMITTED: _take's first step
        -- here (one call fewer), _take itself only when a claim is found.
        BEGIN
            IF (pg_advisory_xact_lock(sandbox_store_internal._lock_id(sandbox_ensure.key))) IS NULL THEN END IF;
            SELECT l.fence, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) sandbox_ensure.key AND l.owner_token IS NOT NULL;
            IF c_live THEN
                -- Give the lock back (the subtransaction's rollback does).
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            c_live := true;
        END;
        -- (nested: without a claim, the path sets up no call of _retire)
        IF c_fence IS NOT NULL THEN
            IF c_live OR NOT sandbox_store_internal._retire(sandbox_ensure.key) THEN
                c := sandbox_store_internal._take(sandbox_ensure.key, sandbox_store_internal._lock_id(sandbox_ensure.key), NULL, NULL);
            END IF;
        END IF;
    ELSE
        IF wait IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval(wait, 'wait', false)) IS NULL THEN END IF;
        END IF;
        IF lease IS NOT NULL THEN
            IF (sandbox_store_internal._check_interval(lease, 'lease', true)) IS NULL THEN END IF;
        END IF;
        c := sandbox_store_internal._take(sandbox_ensure.key, sandbox_store_internal._lock_id(sandbox_ensure.key), wait, lease);
    END IF;

    IF lease IS NULL AND cutoff IS NULL AND sandbox_ensure.provider IS NULL THEN
        -- Lock mode, no condition on the record: a resume's row comes
        -- straight from the UPDATE (no claim).
        RETURN QUERY
        UPDATE ONLY sandbox_store.instances i
           SET latest_run_id = sandbox_ensure.run_id, updated_at = GREATEST(i.updated_at, now())
         WHERE i.key OPERATOR(pg_catalog.=) sandbox_ensure.key
        RETURNING 'resume'::pg_catalog.text, i.key::pg_catalog.text, i.provider::pg_catalog.text,
                  i.provider_sandbox_id::pg_catalog.text, i.latest_snapshot_id::pg_catalog.text,
                  i.thread_id::pg_catalog.text, i.latest_run_id::pg_catalog.text, i.updated_at,
                  NULL::pg_catalog.int8, NULL::pg_catalog.uuid, NULL::pg_catalog.timestamptz;
        IF FOUND THEN
            RETURN;
        END IF;
    ELSE
        UPDATE ONLY sandbox_store.instances i
           SET latest_run_id = sandbox_ensure.run_id, updated_at = GREATEST(i.updated_at, now())
         WHERE i.key OPERATOR(pg_catalog.=) sandbox_ensure.key
           AND (cutoff IS NULL OR i.updated_at OPERATOR(pg_catalog.>=) cutoff)
           AND (sandbox_ensure.provider IS NULL OR i.provider OPERATOR(pg_catalog.=) sandbox_ensure.provider)
        RETURNING i.* INTO r;
    END IF;
    IF FOUND THEN
        res.action := 'resume';
    ELSE
        IF sandbox_store_internal._snapshot_isolation() THEN
            r := sandbox_store_internal._current_record(sandbox_ensure.key);
        ELSE
            SELECT i.* INTO r FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) sandbox_ensure.key;
        END IF;
        res.action := CASE WHEN r.key IS NULL THEN 'create' ELSE 'recreate' END;
        -- Lock mode in autocommit: the lock ends with the statement.  (A
        -- procedure or DO block holds it until its own COMMIT.)
        IF lease IS NULL AND transaction_timestamp() = statement_timestamp()
           AND current_query() !~* E'^\\s*(call|do)\\M' THEN
            RAISE WARNING USING
                MESSAGE = format('sandbox_ensure returned "%s" outside a transaction block', res.action),
                DETAIL = 'The lock on the key ends with the statement, so another session may also be told to create a sandbox for it.',
                HINT = 'Call sandbox_ensure after BEGIN (or in a procedure) and upsert the new record before COMMIT, or pass a lease.';
        END IF;
    END IF;
    IF lease IS NULL THEN    -- lock mode: no claim (c is not set on the path above)
        RETURN NEXT ROW(res.action, r.key, r.provider, r.provider_sandbox_id, r.latest_snapshot_id, r.thread_id,
                        r.latest_run_id, r.updated_at, NULL, NULL, NULL)::sandbox_store.ensure_result;
    ELSE
        RETURN NEXT ROW(res.action, r.key, r.provider, r.provider_sandbox_id, r.latest_snapshot_id, r.thread_id,
                        r.latest_run_id, r.updated_at, c.fence, c.owner_token, c.lease_expires_at)::sandbox_store.ensure_result;
    END IF;
END
$$;

-- The key's lock, taken for a write that does not wait for claims (fenced
-- writes, renew, release, REPEATABLE READ upserts).
CREATE FUNCTION sandbox_store_internal._lock(k pg_catalog.text, lock_id pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF pg_is_in_recovery() THEN
        PERFORM sandbox_store_internal._refuse_on_standby(k);
    END IF;
    IF (pg_advisory_xact_lock(lock_id)) IS NULL THEN END IF;
END
$$;

-- The key's lock id: FNV-1a over the key's bytes in the database encoding,
-- as the C edition computes it, in one statement a byte.  y is the hash
-- xor the byte, its multiplication by the prime (2^40 + 435) still to do:
-- it starts at the offset basis divided by the prime (mod 2^64), and a 0
-- byte after the key's does the last multiplication.  The product is made
-- of y's 32-bit halves (bigint arithmetic must not overflow; << wraps into
-- the sign bit, >> keeps it, hence the masks).
CREATE FUNCTION sandbox_store_internal._lock_id(k pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    b pg_catalog.bytea := pg_catalog.convert_to(k, pg_catalog.getdatabaseencoding()) || E'\\x00'::pg_catalog.bytea;
    y pg_catalog.int8 := 2094230015291517895;
BEGIN
    FOR i IN 0 .. pg_catalog.octet_length(k) LOOP
        y := ((((y >> 32) * 435 + (((y & 4294967295) * 435) >> 32) + ((y & 4294967295) << 8)) << 32)
              | (((y & 4294967295) * 435) & 4294967295)) # pg_catalog.get_byte(b, i);
    END LOOP;
    RETURN y;
END
$$;

-- The end lock_timeout sets to a wait for a key that started at started
-- (lock_timeout read now, in whole milliseconds as PostgreSQL keeps it), or
-- NULL when lock_timeout is 0 (no bound).  _take reads it once per call, and
-- only when it is to wait: with a wait, or when a live claim is in the way.
CREATE FUNCTION sandbox_store_internal._lock_timeout_deadline(started pg_catalog.timestamptz)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_ms pg_catalog.int8 := (extract(epoch FROM current_setting('lock_timeout')::pg_catalog.interval) * 1000)::pg_catalog.int8;
BEGIN
    IF v_ms > 0 THEN
        RETURN started + make_interval(secs => v_ms / 1000.0);
    END IF;
    RETURN NULL;
END
$$;

-- Take the key's lock with lock_timeout set to ms for this wait only (the
-- SET clause restores the caller's value on the way out, also on error).
-- ms must fit lock_timeout: 1 to 2147483647 (about 24.8 days).
CREATE FUNCTION sandbox_store_internal._lock_within(lock_id pg_catalog.int8, ms pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET lock_timeout = 0
AS $$
BEGIN
    IF (set_config('lock_timeout', ms::pg_catalog.text, true)) IS NULL THEN END IF;
    IF (pg_advisory_xact_lock(lock_id)) IS NULL THEN END IF;
END
$$;

-- 55P03: the key could not be taken within the wait.  blocked_fence NULL:
-- another transaction's lock was in the way; else a live claim.
CREATE FUNCTION sandbox_store_internal._not_obtained(k pg_catalog.text, wait pg_catalog.interval,
                                            by_lock_timeout pg_catalog.bool,
                                            blocked_fence pg_catalog.int8,
                                            blocked_until pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    limit_text pg_catalog.text;
    hint_text pg_catalog.text;
BEGIN
    IF by_lock_timeout OR wait IS NULL THEN
        limit_text := format('lock_timeout (%s)', current_setting('lock_timeout'));
        hint_text := 'Retry later, or raise lock_timeout.';
    ELSE
        limit_text := format('the wait (%s)', wait);
        hint_text := 'Retry later, or pass a longer wait.';
    END IF;
    IF blocked_fence IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
            MESSAGE = format('could not lock sandbox key "%s"', k),
            DETAIL = format('The key is claimed (fence %s) until %s, past %s.', blocked_fence, blocked_until, limit_text),
            HINT = hint_text;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
        MESSAGE = format('could not lock sandbox key "%s"', k),
        DETAIL = format('Another transaction holds the key''s lock, and %s is over.', limit_text),
        HINT = hint_text;
END
$$;

-- Take the key: its lock (waiting as wait allows; 55P03 when the wait is
-- over), once no live claim holds it.  Lock mode (lease NULL): an expired
-- claim is retired, and the result is all NULL.  Lease mode: a new claim,
-- replacing an expired one, and the result is the claim.  The lock is held
-- until the transaction ends.
CREATE FUNCTION sandbox_store_internal._take(k pg_catalog.text, lock_id pg_catalog.int8,
                                    wait pg_catalog.interval, lease pg_catalog.interval,
                                    OUT fence pg_catalog.int8, OUT owner_token pg_catalog.uuid,
                                    OUT lease_expires_at pg_catalog.timestamptz)
LANGUAGE plpgsql
AS $$
DECLARE
    started pg_catalog.timestamptz := clock_timestamp();
    deadline pg_catalog.timestamptz;    -- NULL: no bound
    by_lock_timeout boolean;
    lock_timeout_read boolean := false;
    lock_timeout_end pg_catalog.timestamptz;
    p record;
    ms_left pg_catalog.int8;
    delay_ms pg_catalog.int4;
    nap_ms pg_catalog.numeric;
    c_fence pg_catalog.int8;
    c_until pg_catalog.timestamptz;
    c_live boolean;
    blocked boolean;
    rr boolean := sandbox_store_internal._snapshot_isolation();
    newest pg_catalog.int8;
    new_fence pg_catalog.int8;
    now_clock pg_catalog.timestamptz;
BEGIN
    IF pg_is_in_recovery() THEN
        PERFORM sandbox_store_internal._refuse_on_standby(k);
    END IF;
    -- Lock mode without a wait at READ COMMITTED, the common call: the
    -- lock, and no live claim in the way (else the general loop below).
    IF wait IS NULL AND lease IS NULL AND NOT rr THEN
        BEGIN
            IF (pg_advisory_xact_lock(lock_id)) IS NULL THEN END IF;
            SELECT l.fence, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL;
            IF c_live THEN
                -- Give the lock back (the subtransaction's rollback does).
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            c_live := true;
        END;
        IF c_fence IS NULL OR (NOT c_live AND sandbox_store_internal._retire(k)) THEN
            RETURN;
        END IF;
    END IF;
    by_lock_timeout := false;
    delay_ms := 1;
    -- How long the caller may wait: wait (more than 36,500 days is no
    -- bound), or lock_timeout if that is sooner.
    IF wait IS NOT NULL THEN
        p := sandbox_store_internal._interval_parts(wait);
        IF p.usecs + p.days * 86400000000 + p.months * 30 * 86400000000 <= 36500 * 86400000000::pg_catalog.numeric THEN
            deadline := started + make_interval(secs => (p.usecs + p.days * 86400000000 + p.months * 30 * 86400000000) / 1000000);
        END IF;
    END IF;
    -- Without a wait, lock_timeout matters only once a claim is in the way
    -- (PostgreSQL's own wait for the lock ends with it): read it there.
    IF wait IS NOT NULL THEN
        lock_timeout_read := true;
        lock_timeout_end := sandbox_store_internal._lock_timeout_deadline(started);
        IF lock_timeout_end IS NOT NULL AND (deadline IS NULL OR lock_timeout_end < deadline) THEN
            deadline := lock_timeout_end;
            by_lock_timeout := true;
        END IF;
    END IF;

    LOOP
        blocked := false;
        c_fence := NULL;
        BEGIN
            IF wait IS NULL OR deadline IS NULL THEN
                -- PostgreSQL's own wait (lock_timeout, if set, ends it).
                IF (pg_advisory_xact_lock(lock_id)) IS NULL THEN END IF;
            ELSE
                -- lock_timeout holds at most 2147483647 ms (about 24.8
                -- days): a longer wait waits in pieces of that length.
                LOOP
                    ms_left := ceil(extract(epoch FROM deadline - clock_timestamp()) * 1000);
                    IF ms_left <= 0 THEN
                        IF NOT pg_try_advisory_xact_lock(lock_id) THEN
                            PERFORM sandbox_store_internal._not_obtained(k, wait, by_lock_timeout, NULL, NULL);
                        END IF;
                        EXIT;
                    END IF;
                    BEGIN
                        IF (sandbox_store_internal._lock_within(lock_id, LEAST(ms_left, 2147483647))) IS NULL THEN END IF;
                        EXIT;
                    EXCEPTION WHEN lock_not_available THEN
                        IF ms_left <= 2147483647 THEN
                            PERFORM sandbox_store_internal._not_obtained(k, wait, by_lock_timeout, NULL, NULL);
                        END IF;
                    END;
                END LOOP;
            END IF;
            IF rr THEN
                PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
            END IF;
            SELECT l.fence, l.lease_expires_at, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_until, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL;
            IF c_live THEN
                -- Give the lock back (the subtransaction's rollback does).
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            blocked := true;
        END;

        IF NOT blocked THEN
            IF lease IS NULL THEN
                IF c_fence IS NULL OR sandbox_store_internal._retire(k) THEN
                    RETURN;
                END IF;
            ELSE
                -- (40001 is raised only at REPEATABLE READ and above: the
                -- subtransaction that turns it into ours only there)
                IF rr THEN
                    BEGIN
                        SELECT l.fence INTO newest FROM ONLY sandbox_store.leases l
                         WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
                    EXCEPTION WHEN serialization_failure THEN
                        PERFORM sandbox_store_internal._changed(k, 'claim');
                    END;
                ELSE
                    SELECT l.fence INTO newest FROM ONLY sandbox_store.leases l
                     WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
                END IF;
                now_clock := clock_timestamp();
                -- The fence: _draw_fence(COALESCE(newest, 0)), its common
                -- case here (a draw above newest under the shared draw lock).
                IF (pg_advisory_xact_lock_shared(0, 21315)) IS NULL THEN END IF;
                new_fence := nextval('sandbox_store.fence_seq');
                IF new_fence <= COALESCE(newest, 0) THEN
                    new_fence := sandbox_store_internal._draw_fence(COALESCE(newest, 0));
                END IF;
                INSERT INTO sandbox_store.leases AS l (key, fence, owner_token, lease_expires_at)
                VALUES (k, new_fence, gen_random_uuid(),
                        (now_clock AT TIME ZONE 'UTC' + lease) AT TIME ZONE 'UTC')
                ON CONFLICT ON CONSTRAINT leases_pkey DO UPDATE
                   SET fence = GREATEST(l.fence + 1, EXCLUDED.fence),
                       owner_token = EXCLUDED.owner_token,
                       lease_expires_at = EXCLUDED.lease_expires_at
                 WHERE l.owner_token IS NULL OR l.lease_expires_at OPERATOR(pg_catalog.<=) now_clock
                RETURNING l.fence, l.owner_token, l.lease_expires_at
                     INTO fence, owner_token, lease_expires_at;
                IF FOUND THEN
                    -- _keep_fence: its first step here, the call only where
                    -- it flushes (PostgreSQL 17 and later)
                    IF current_setting('synchronous_commit') = 'off' THEN
                        IF (set_config('synchronous_commit', 'local', true)) IS NULL THEN END IF;
                    END IF;
                    IF current_setting('server_version_num')::pg_catalog.int4 >= 170000 THEN
                        IF (sandbox_store_internal._keep_fence()) IS NULL THEN END IF;
                    END IF;
                    RETURN;
                END IF;
            END IF;
            CONTINUE;    -- the claim changed under us: look again
        END IF;

        -- A live claim holds the key: wait for it, backing off.
        -- (without a wait, deadline is NULL until here)
        IF wait IS NULL AND NOT lock_timeout_read THEN
            lock_timeout_read := true;
            deadline := sandbox_store_internal._lock_timeout_deadline(started);
            by_lock_timeout := deadline IS NOT NULL;
        END IF;
        IF deadline IS NOT NULL AND clock_timestamp() >= deadline THEN
            PERFORM sandbox_store_internal._not_obtained(k, wait, by_lock_timeout, c_fence, c_until);
        END IF;
        nap_ms := delay_ms;
        IF c_until > clock_timestamp() THEN
            nap_ms := LEAST(nap_ms, floor(extract(epoch FROM c_until - clock_timestamp()) * 1000) + 1);
        END IF;
        IF deadline IS NOT NULL THEN
            nap_ms := LEAST(nap_ms, GREATEST(ceil(extract(epoch FROM deadline - clock_timestamp()) * 1000), 0));
        END IF;
        IF nap_ms > 0 THEN
            PERFORM pg_sleep(nap_ms / 1000.0);
        END IF;
        delay_ms := LEAST(delay_ms * 2, 50);
    END LOOP;
END
$$;

-- Take the key's lock if it is free now (no other transaction's lock, no
-- live claim; an expired claim is retired).  False leaves nothing held.
CREATE FUNCTION sandbox_store_internal._try_take(k pg_catalog.text, lock_id pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql
AS $$
DECLARE
    c_fence pg_catalog.int8;
    c_live boolean;
BEGIN
    IF pg_is_in_recovery() THEN
        PERFORM sandbox_store_internal._refuse_on_standby(k);
    END IF;
    LOOP
        c_fence := NULL;
        BEGIN
            IF NOT pg_try_advisory_xact_lock(lock_id) THEN
                RETURN false;
            END IF;
            IF sandbox_store_internal._snapshot_isolation() THEN
                PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
            END IF;
            SELECT l.fence, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL;
            IF c_live THEN
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            RETURN false;
        END;
        IF c_fence IS NULL OR sandbox_store_internal._retire(k) THEN
            RETURN true;
        END IF;
    END LOOP;
END
$$;

-- The lock of a thread's first checkpoint writer: the writer key's lock, as
-- this edition takes a key's lock (pg_advisory_xact_lock on its lock id,
-- which an application's own advisory lock on that number shares), at once
-- or not at all, until the transaction ends.
CREATE FUNCTION sandbox_store_internal._try_writer_lock(k pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE sql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
SELECT pg_catalog.pg_try_advisory_xact_lock(sandbox_store_internal._lock_id(k))
$$;

CREATE FUNCTION sandbox_store.sandbox_lock(
    key pg_catalog.text,
    wait pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_lock.key IS NULL OR octet_length(sandbox_lock.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_lock.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_lock.key, 'key');
    END IF;
    IF wait IS NOT NULL THEN
        IF (sandbox_store_internal._check_interval(wait, 'wait', false)) IS NULL THEN END IF;
    END IF;
    PERFORM sandbox_store_internal._take(sandbox_lock.key, sandbox_store_internal._lock_id(sandbox_lock.key), wait, NULL);
END
$$;

CREATE FUNCTION sandbox_store.sandbox_lock_holder(key pg_catalog.text)
RETURNS pg_catalog.int4
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    holder pg_catalog.int4;
BEGIN
    IF sandbox_lock_holder.key IS NULL OR octet_length(sandbox_lock_holder.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_lock_holder.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_lock_holder.key, 'key');
    END IF;
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION USING ERRCODE = 'read_only_sql_transaction',
            MESSAGE = format('cannot report the holder of sandbox key "%s" on a standby', sandbox_lock_holder.key),
            DETAIL = 'The key''s lock is held on the primary, whose locks a standby cannot see.',
            HINT = 'Connect to the primary.';
    END IF;
    SELECT COALESCE(k.pid, 0) INTO holder FROM sandbox_store.key_locks k
     WHERE k.lock_id OPERATOR(pg_catalog.=) sandbox_store_internal._lock_id(sandbox_lock_holder.key) AND k.granted
     LIMIT 1;
    RETURN holder;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_lock_id(key pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF sandbox_lock_id.key IS NULL OR octet_length(sandbox_lock_id.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_lock_id.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_lock_id.key, 'key');
    END IF;
    RETURN sandbox_store_internal._lock_id(sandbox_lock_id.key);
END
$$;

CREATE FUNCTION sandbox_store.sandbox_try_lock(key pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_try_lock.key IS NULL OR octet_length(sandbox_try_lock.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_try_lock.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_try_lock.key, 'key');
    END IF;
    RETURN sandbox_store_internal._try_take(sandbox_try_lock.key, sandbox_store_internal._lock_id(sandbox_try_lock.key));
END
$$;

-- The reaper's candidates, oldest first: a sequential read (there is no
-- index on updated_at), whatever the caller's enable_seqscan.
CREATE FUNCTION sandbox_store_internal._reap_candidates(cutoff pg_catalog.timestamptz)
RETURNS SETOF pg_catalog.text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = on
AS $$
SELECT i.key FROM ONLY sandbox_store.instances i
 WHERE i.updated_at OPERATOR(pg_catalog.<) cutoff
 ORDER BY i.updated_at, i.key
$$;

CREATE FUNCTION sandbox_store.sandbox_reap(
    idle_for pg_catalog.interval,
    max_rows pg_catalog.int4 DEFAULT 100)
RETURNS SETOF sandbox_store.instances
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    cutoff pg_catalog.timestamptz;
    reaped pg_catalog.int4 := 0;
    candidate pg_catalog.text;
    r sandbox_store.instances;
BEGIN
    IF idle_for IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('idle_for');
    END IF;
    IF (sandbox_store_internal._check_interval(idle_for, 'idle_for', false)) IS NULL THEN END IF;
    cutoff := sandbox_store_internal._cutoff(idle_for);
    IF max_rows IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('max_rows');
    END IF;
    IF max_rows <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'max_rows must be positive',
            DETAIL = format('The value given is %s.', max_rows);
    END IF;
    FOR candidate IN SELECT sandbox_store_internal._reap_candidates(cutoff) LOOP
        EXIT WHEN reaped >= max_rows;
        CONTINUE WHEN NOT sandbox_store_internal._try_take(candidate, sandbox_store_internal._lock_id(candidate));
        PERFORM FROM ONLY sandbox_store.instances i
          WHERE i.key OPERATOR(pg_catalog.=) candidate AND i.updated_at OPERATOR(pg_catalog.<) cutoff
          FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM ONLY sandbox_store.instances i
         WHERE i.key OPERATOR(pg_catalog.=) candidate AND i.updated_at OPERATOR(pg_catalog.<) cutoff
        RETURNING i.* INTO r;
        IF FOUND THEN
            RETURN NEXT r;
            reaped := reaped + 1;
        END IF;
    END LOOP;
END
$$;

-- A fenced write goes through only with the fence of the key's current
-- claim: the key's newest fence, its claim still set.  SB001 otherwise.
CREATE FUNCTION sandbox_store_internal._check_fence(k pg_catalog.text, f pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    newest pg_catalog.int8;
    is_claimed boolean;
BEGIN
    SELECT l.fence, l.owner_token IS NOT NULL INTO newest, is_claimed
      FROM ONLY sandbox_store.leases l
     WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
    IF NOT FOUND THEN
        -- (REPEATABLE READ: a claim committed after the snapshot is 40001.)
        IF sandbox_store_internal._snapshot_isolation() THEN
            PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
        END IF;
        newest := 0;
        is_claimed := false;
    END IF;
    IF newest > f THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'old', f, newest);
    ELSIF newest <> f THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'foreign', f, newest);
    ELSIF NOT is_claimed THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'ended', f, newest);
    END IF;
END
$$;

-- The key's record, row-locked, at REPEATABLE READ or SERIALIZABLE: the one
-- the snapshot shows must be the newest (40001 otherwise).  NULL key when
-- there is none.
CREATE FUNCTION sandbox_store_internal._current_record(k pg_catalog.text)
RETURNS sandbox_store.instances
LANGUAGE plpgsql
AS $$
DECLARE
    r sandbox_store.instances;
BEGIN
    BEGIN
        SELECT i.* INTO r FROM ONLY sandbox_store.instances i
         WHERE i.key OPERATOR(pg_catalog.=) k FOR UPDATE;
    EXCEPTION WHEN serialization_failure THEN
        PERFORM sandbox_store_internal._changed(k, 'record');
    END;
    IF r.key IS NULL THEN
        PERFORM sandbox_store_internal._probe_hidden(k, 'record');
    END IF;
    RETURN r;
END
$$;

-- Insert or fully replace a record (sandbox_upsert, sandbox_upsert_release),
-- arguments already checked.
CREATE FUNCTION sandbox_store_internal._upsert(k pg_catalog.text, f pg_catalog.int8, release pg_catalog.bool,
                                      p_provider pg_catalog.text, p_provider_sandbox_id pg_catalog.text,
                                      p_thread_id pg_catalog.text, p_latest_snapshot_id pg_catalog.text,
                                      p_latest_run_id pg_catalog.text, p_updated_at pg_catalog.timestamptz)
RETURNS sandbox_store.instances
LANGUAGE plpgsql
AS $$
DECLARE
    rr boolean := sandbox_store_internal._snapshot_isolation();
    r sandbox_store.instances;
    newest pg_catalog.int8;
    is_claimed boolean;
BEGIN
    IF f IS NOT NULL OR rr THEN
        -- _lock and _check_fence, here (two calls fewer)
        IF pg_is_in_recovery() THEN
            PERFORM sandbox_store_internal._refuse_on_standby(k);
        END IF;
        IF (pg_advisory_xact_lock(sandbox_store_internal._lock_id(k))) IS NULL THEN END IF;
        IF f IS NOT NULL THEN
            SELECT l.fence, l.owner_token IS NOT NULL INTO newest, is_claimed
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
            IF NOT FOUND THEN
                IF rr THEN
                    PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
                END IF;
                newest := 0;
                is_claimed := false;
            END IF;
            IF newest > f THEN
                PERFORM sandbox_store_internal._claim_lost(k, 'old', f, newest);
            ELSIF newest <> f THEN
                PERFORM sandbox_store_internal._claim_lost(k, 'foreign', f, newest);
            ELSIF NOT is_claimed THEN
                PERFORM sandbox_store_internal._claim_lost(k, 'ended', f, newest);
            END IF;
        END IF;
        IF release THEN
            IF rr THEN
                BEGIN
                    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
                     WHERE l.key OPERATOR(pg_catalog.=) k AND l.fence OPERATOR(pg_catalog.=) f
                       AND l.owner_token IS NOT NULL;
                EXCEPTION WHEN serialization_failure THEN
                    PERFORM sandbox_store_internal._changed(k, 'claim');
                END;
            ELSE    -- (no 40001 at READ COMMITTED: no subtransaction)
                UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
                 WHERE l.key OPERATOR(pg_catalog.=) k AND l.fence OPERATOR(pg_catalog.=) f
                   AND l.owner_token IS NOT NULL;
            END IF;
            IF NOT FOUND THEN
                IF rr THEN
                    PERFORM sandbox_store_internal._changed(k, 'claim');
                END IF;
                RAISE EXCEPTION 'the checked claim of fence % on sandbox key "%" was not found', f, k
                    USING ERRCODE = 'internal_error';
            END IF;
        END IF;
    END IF;
    IF rr THEN
        PERFORM sandbox_store_internal._current_record(k);
    END IF;
    INSERT INTO sandbox_store.instances AS i
           (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at)
    VALUES (k, p_provider, p_provider_sandbox_id, p_latest_snapshot_id, p_thread_id, p_latest_run_id, p_updated_at)
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

CREATE FUNCTION sandbox_store.sandbox_delete(
    key pg_catalog.text,
    fence pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    deleted boolean;
BEGIN
    IF sandbox_delete.key IS NULL OR octet_length(sandbox_delete.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_delete.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_delete.key, 'key');
    END IF;
    IF sandbox_delete.fence <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg(sandbox_delete.fence);
    END IF;
    IF sandbox_delete.fence IS NOT NULL THEN
        IF (sandbox_store_internal._lock(sandbox_delete.key, sandbox_store_internal._lock_id(sandbox_delete.key))) IS NULL THEN END IF;
        IF (sandbox_store_internal._check_fence(sandbox_delete.key, sandbox_delete.fence)) IS NULL THEN END IF;
    ELSE
        PERFORM sandbox_store_internal._take(sandbox_delete.key, sandbox_store_internal._lock_id(sandbox_delete.key), NULL, NULL);
    END IF;
    DELETE FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) sandbox_delete.key;
    deleted := FOUND;
    IF NOT deleted AND sandbox_store_internal._snapshot_isolation() THEN
        PERFORM sandbox_store_internal._current_record(sandbox_delete.key);
    END IF;
    RETURN deleted;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_get(key pg_catalog.text)
RETURNS SETOF sandbox_store.instances
LANGUAGE plpgsql STABLE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_get.key IS NULL OR octet_length(sandbox_get.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_get.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_get.key, 'key');
    END IF;
    RETURN QUERY SELECT i.* FROM ONLY sandbox_store.instances i WHERE i.key OPERATOR(pg_catalog.=) sandbox_get.key;
END
$$;

CREATE FUNCTION sandbox_store.sandbox_list(thread_id pg_catalog.text)
RETURNS SETOF sandbox_store.instances
LANGUAGE plpgsql STABLE ROWS 4 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_list.thread_id IS NULL OR octet_length(sandbox_list.thread_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_list.thread_id, 'thread_id');
    END IF;
    RETURN QUERY SELECT i.* FROM ONLY sandbox_store.instances i
                  WHERE i.thread_id OPERATOR(pg_catalog.=) sandbox_list.thread_id
                  ORDER BY i.updated_at DESC, i.key;
END
$$;

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
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    r sandbox_store.instances;
BEGIN
    IF sandbox_upsert.key IS NULL OR octet_length(sandbox_upsert.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_upsert.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_upsert.key, 'key');
    END IF;
    IF sandbox_upsert.provider IS NULL OR octet_length(sandbox_upsert.provider) NOT BETWEEN 1 AND 1024 OR sandbox_upsert.provider_sandbox_id IS NULL OR octet_length(sandbox_upsert.provider_sandbox_id) NOT BETWEEN 1 AND 1024
       OR sandbox_upsert.thread_id IS NULL OR octet_length(sandbox_upsert.thread_id) NOT BETWEEN 1 AND 1024 OR octet_length(sandbox_upsert.latest_snapshot_id) NOT BETWEEN 1 AND 1024
       OR octet_length(sandbox_upsert.latest_run_id) NOT BETWEEN 1 AND 1024 OR sandbox_upsert.updated_at IS NULL OR NOT isfinite(sandbox_upsert.updated_at) THEN
        PERFORM sandbox_store_internal._check_record_args(sandbox_upsert.provider, sandbox_upsert.provider_sandbox_id, sandbox_upsert.thread_id, sandbox_upsert.latest_snapshot_id, sandbox_upsert.latest_run_id, sandbox_upsert.updated_at);
    END IF;
    IF sandbox_upsert.fence <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg(sandbox_upsert.fence);
    END IF;
    IF sandbox_upsert.fence IS NULL AND NOT sandbox_store_internal._snapshot_isolation() THEN
        -- _upsert without a fence at READ COMMITTED (no lock): here, one
        -- call fewer.
        INSERT INTO sandbox_store.instances AS i
               (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at)
        VALUES (sandbox_upsert.key, sandbox_upsert.provider, sandbox_upsert.provider_sandbox_id, sandbox_upsert.latest_snapshot_id, sandbox_upsert.thread_id, sandbox_upsert.latest_run_id, sandbox_upsert.updated_at)
        ON CONFLICT ON CONSTRAINT instances_pkey DO UPDATE SET
               provider = EXCLUDED.provider,
               provider_sandbox_id = EXCLUDED.provider_sandbox_id,
               latest_snapshot_id = EXCLUDED.latest_snapshot_id,
               thread_id = EXCLUDED.thread_id,
               latest_run_id = EXCLUDED.latest_run_id,
               updated_at = EXCLUDED.updated_at
        RETURNING i.* INTO r;
        RETURN r;
    END IF;
    RETURN sandbox_store_internal._upsert(sandbox_upsert.key, sandbox_upsert.fence, false, sandbox_upsert.provider, sandbox_upsert.provider_sandbox_id, sandbox_upsert.thread_id, sandbox_upsert.latest_snapshot_id, sandbox_upsert.latest_run_id, sandbox_upsert.updated_at);
END
$$;

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
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    IF sandbox_upsert_release.key IS NULL OR octet_length(sandbox_upsert_release.key) NOT BETWEEN 1 AND 1024 OR starts_with(sandbox_upsert_release.key, E'\x01') THEN
        PERFORM sandbox_store_internal._bad_text(sandbox_upsert_release.key, 'key');
    END IF;
    IF sandbox_upsert_release.fence IS NULL THEN
        PERFORM sandbox_store_internal._null_arg('fence');
    END IF;
    IF sandbox_upsert_release.fence <= 0 THEN
        PERFORM sandbox_store_internal._check_fence_arg(sandbox_upsert_release.fence);
    END IF;
    IF sandbox_upsert_release.provider IS NULL OR octet_length(sandbox_upsert_release.provider) NOT BETWEEN 1 AND 1024 OR sandbox_upsert_release.provider_sandbox_id IS NULL OR octet_length(sandbox_upsert_release.provider_sandbox_id) NOT BETWEEN 1 AND 1024
       OR sandbox_upsert_release.thread_id IS NULL OR octet_length(sandbox_upsert_release.thread_id) NOT BETWEEN 1 AND 1024 OR octet_length(sandbox_upsert_release.latest_snapshot_id) NOT BETWEEN 1 AND 1024
       OR octet_length(sandbox_upsert_release.latest_run_id) NOT BETWEEN 1 AND 1024 OR sandbox_upsert_release.updated_at IS NULL OR NOT isfinite(sandbox_upsert_release.updated_at) THEN
        PERFORM sandbox_store_internal._check_record_args(sandbox_upsert_release.provider, sandbox_upsert_release.provider_sandbox_id, sandbox_upsert_release.thread_id, sandbox_upsert_release.latest_snapshot_id, sandbox_upsert_release.latest_run_id, sandbox_upsert_release.updated_at);
    END IF;
    RETURN sandbox_store_internal._upsert(sandbox_upsert_release.key, sandbox_upsert_release.fence, true, sandbox_upsert_release.provider, sandbox_upsert_release.provider_sandbox_id, sandbox_upsert_release.thread_id, sandbox_upsert_release.latest_snapshot_id, sandbox_upsert_release.latest_run_id, sandbox_upsert_release.updated_at);
END
$$;


-- The SQL edition's check of a checkpoint before it is appended (the C
-- edition's is C, checkpoint_check.c, with the same checks, order and
-- messages): its size against sandbox_store.max_checkpoint_bytes, its ids
-- (SBC07), then its fields and entries (SBC08).  Returns the blob keys it
-- points to, each once, by bytes (the checkpoints row's blob_keys).
--
-- First one query decides whether the whole checkpoint is valid and
-- collects its keys, without a loop: the paths joined with '/' are checked
-- as one path (stricter than each alone: a segment "c:x" after the first
-- takes the long way), the hex digits of the file keys joined as one string
-- (a regular expression per key costs more than the rest of the check),
-- and a file followed, in
-- the order of path || '/' as bytes, by a path beneath it.  Only when that
-- says no are the checks run one by one, in the documented order, to raise
-- the first error with its message (or, if none is found, go on).
CREATE FUNCTION sandbox_store_internal._checkpoint_check(c pg_catalog.jsonb)
RETURNS pg_catalog.text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    e pg_catalog.jsonb;
    bad pg_catalog.text;
    ok pg_catalog.bool;
    keys pg_catalog.text[];
BEGIN
    PERFORM sandbox_store_internal._checkpoint_size(pg_column_size(c), 'The checkpoint');
    SELECT t.ok AND f.ok AND a.ok,
           ARRAY(SELECT DISTINCT k COLLATE "C" FROM unnest(f.keys || a.keys) k ORDER BY 1)
      INTO ok, keys
      FROM (SELECT jsonb_typeof(c) = 'object'
               AND jsonb_typeof(c -> 'id') = 'string' AND octet_length(c ->> 'id') BETWEEN 1 AND 1024
               AND jsonb_typeof(c -> 'threadId') = 'string' AND octet_length(c ->> 'threadId') BETWEEN 1 AND 1000
               AND CASE jsonb_typeof(c -> 'parentCheckpointId')
                   WHEN 'string' THEN octet_length(c ->> 'parentCheckpointId') BETWEEN 1 AND 1024
                   WHEN 'null' THEN true ELSE c -> 'parentCheckpointId' IS NULL END
               AND CASE WHEN jsonb_typeof(c -> 'createdAt') = 'number' AND c ->> 'createdAt' ~ '^-?[0-9]{1,16}$'
                        THEN (c ->> 'createdAt')::pg_catalog.int8 BETWEEN -8640000000000000 AND 8640000000000000
                        ELSE false END
               AND jsonb_typeof(c -> 'reason') = 'string' AND c ->> 'reason' IN ('automatic', 'named', 'fork-root')
               AND COALESCE(jsonb_typeof(c -> 'label') IN ('string', 'null'), true)
               AND COALESCE(jsonb_typeof(c -> 'sourceRunId') IN ('string', 'null'), true)
               AND c ? 'conversation'
               AND jsonb_typeof(c -> 'files') = 'array' AND jsonb_typeof(c -> 'artifacts') = 'array' AS ok) t,
           (SELECT COALESCE(bool_and(COALESCE(
                       jsonb_typeof(s.ent) = 'object' AND jsonb_typeof(s.ent -> 'path') = 'string'
                       AND CASE s.kind
                           WHEN 'file' THEN jsonb_typeof(s.ent -> 'blobKey') = 'string'
                                -- (the 64 hex digits of every key: below, in one match)
                                AND starts_with(s.ent ->> 'blobKey', 'sandbox-files/sha256/')
                                AND octet_length(s.ent ->> 'blobKey') = 85
                                AND jsonb_typeof(s.ent -> 'size') = 'number'
                                AND CASE WHEN s.ent ->> 'size' ~ '^[0-9]{1,16}$'
                                         THEN (s.ent ->> 'size')::pg_catalog.int8 <= 9007199254740991 ELSE false END
                           WHEN 'dir' THEN NOT (s.ent ? 'blobKey' OR s.ent ? 'size')
                           ELSE false END
                       AND NOT COALESCE(s.kind = 'file' AND starts_with(s.next_path, s.path || '/'), false),
                       false)), true)
                   AND count(DISTINCT s.path) = count(*)
                   AND COALESCE(string_agg(substr(s.ent ->> 'blobKey', 22), '') FILTER (WHERE s.kind = 'file')
                                ~ '^[0-9a-f]*$', true)
                   AND COALESCE(string_agg(s.path, '/') ~ E'^[^/\\\\]+(/[^/\\\\]+)*$'
                                AND string_agg(s.path, '/') !~ E'(^|/)(\\.\\.?(/|$)|[A-Za-z]:)', true) AS ok,
                   COALESCE(array_agg(s.ent ->> 'blobKey') FILTER (WHERE s.kind = 'file'), '{}') AS keys
              FROM (SELECT x.ent, x.ent ->> 'path' AS path, x.ent ->> 'kind' AS kind,
                           lead(x.ent ->> 'path') OVER (ORDER BY ((x.ent ->> 'path') || '/') COLLATE "C") AS next_path
                      FROM jsonb_array_elements(CASE jsonb_typeof(c -> 'files') WHEN 'array' THEN c -> 'files'
                                                ELSE '[]' END) x(ent)) s) f,
           (SELECT COALESCE(bool_and(COALESCE(
                       jsonb_typeof(y.art) = 'object'
                       AND jsonb_typeof(y.art -> 'artifactId') = 'string' AND y.art ->> 'artifactId' <> ''
                       AND jsonb_typeof(y.art -> 'name') = 'string' AND y.art ->> 'name' <> ''
                       AND jsonb_typeof(y.art -> 'mimeType') = 'string' AND y.art ->> 'mimeType' <> ''
                       AND jsonb_typeof(y.art -> 'size') = 'number' AND y.art ->> 'size' ~ '^[0-9]{1,16}$'
                       AND jsonb_typeof(y.art -> 'createdAt') = 'number'
                       AND jsonb_typeof(y.art -> 'blobKey') = 'string' AND y.art ->> 'blobKey' ~ '^sandbox-artifacts/.'
                       AND octet_length(y.art ->> 'blobKey') <= 1024, false)), true) AS ok,
                   COALESCE(array_agg(y.art ->> 'blobKey'), '{}') AS keys
              FROM jsonb_array_elements(CASE jsonb_typeof(c -> 'artifacts') WHEN 'array' THEN c -> 'artifacts'
                                        ELSE '[]' END) y(art)) a;
    IF ok THEN
        RETURN keys;
    END IF;

    -- The checks one by one, in order: the first error raised.
    IF jsonb_typeof(c) IS DISTINCT FROM 'object' THEN
        PERFORM sandbox_store_internal._invalid_entry('A checkpoint is a JSON object.');
    END IF;
    IF jsonb_typeof(c -> 'id') IS DISTINCT FROM 'string' THEN
        PERFORM sandbox_store_internal._check_id('SBC07', NULL, 'checkpoint id', 1024);
    END IF;
    PERFORM sandbox_store_internal._check_id('SBC07', c ->> 'id', 'checkpoint id', 1024);
    IF jsonb_typeof(c -> 'threadId') IS DISTINCT FROM 'string' THEN
        PERFORM sandbox_store_internal._check_id('SBC07', NULL, 'thread id', 1000);
    END IF;
    PERFORM sandbox_store_internal._check_id('SBC07', c ->> 'threadId', 'thread id', 1000);
    IF jsonb_typeof(c -> 'parentCheckpointId') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._check_id('SBC07', NULL, 'parent checkpoint id', 1024);
    END IF;
    IF jsonb_typeof(c -> 'parentCheckpointId') = 'string' THEN
        PERFORM sandbox_store_internal._check_id('SBC07', c ->> 'parentCheckpointId', 'parent checkpoint id', 1024);
    END IF;

    IF (CASE WHEN jsonb_typeof(c -> 'createdAt') IS DISTINCT FROM 'number' THEN true
             -- (written as a whole number: 1.0 is a number with a fraction)
             WHEN c ->> 'createdAt' !~ '^-?[0-9]{1,16}$' THEN true
             ELSE (c ->> 'createdAt')::pg_catalog.int8 NOT BETWEEN -8640000000000000 AND 8640000000000000 END) THEN
        PERFORM sandbox_store_internal._invalid_entry('createdAt is a whole number of milliseconds since 1970-01-01 UTC.');
    END IF;
    IF jsonb_typeof(c -> 'reason') IS DISTINCT FROM 'string'
       OR c ->> 'reason' NOT IN ('automatic', 'named', 'fork-root') THEN
        PERFORM sandbox_store_internal._invalid_entry('reason is "automatic", "named" or "fork-root".');
    END IF;
    IF jsonb_typeof(c -> 'label') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._invalid_entry('label is a string when present.');
    END IF;
    IF jsonb_typeof(c -> 'sourceRunId') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._invalid_entry('sourceRunId is a string when present.');
    END IF;
    IF NOT (c ? 'conversation') THEN
        PERFORM sandbox_store_internal._invalid_entry('conversation is required (the model messages).');
    END IF;

    -- files: {path, kind: 'file', blobKey, size} or {path, kind: 'dir'}.
    -- (Set-based: one pass over the entries, the first bad one reported;
    -- then duplicates and entries beneath a file, by hashing, not pairs.)
    IF jsonb_typeof(c -> 'files') IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._invalid_entry('files is an array.');
    END IF;
    SELECT r INTO bad FROM (
        SELECT i, CASE
            WHEN jsonb_typeof(ent) IS DISTINCT FROM 'object' OR jsonb_typeof(ent -> 'path') IS DISTINCT FROM 'string'
                THEN 'Each file entry is an object with a path.'
            WHEN ent ->> 'path' !~ E'^[^/\\\\]+(/[^/\\\\]+)*$' OR ent ->> 'path' ~ E'(^|/)\\.\\.?(/|$)'
                 OR ent ->> 'path' ~ '^[A-Za-z]:'
                THEN format('Path %s is not a normalized relative path.', ent -> 'path')
            WHEN ent ->> 'kind' = 'dir' AND (ent ? 'blobKey' OR ent ? 'size')
                THEN format('Directory %s has a blob key or a size; only files have them.', ent -> 'path')
            WHEN ent ->> 'kind' = 'file' AND (jsonb_typeof(ent -> 'blobKey') IS DISTINCT FROM 'string'
                                         OR ent ->> 'blobKey' !~ '^sandbox-files/sha256/[0-9a-f]{64}$')
                THEN format('The blob key of file %s is not sandbox-files/sha256/ and 64 lowercase hex digits.', ent -> 'path')
            WHEN ent ->> 'kind' = 'file'
                 AND (jsonb_typeof(ent -> 'size') IS DISTINCT FROM 'number'
                      OR CASE WHEN ent ->> 'size' ~ '^[0-9]{1,16}$'
                              THEN (ent ->> 'size')::pg_catalog.int8 > 9007199254740991 ELSE true END)
                THEN format('The size of file %s is not a whole number of bytes.', ent -> 'path')
            WHEN ent ->> 'kind' IS DISTINCT FROM 'file' AND ent ->> 'kind' IS DISTINCT FROM 'dir'
                THEN format('Entry %s has kind %s; a kind is "file" or "dir".', ent -> 'path', COALESCE(ent -> 'kind', 'null'))
            END AS r
          FROM jsonb_array_elements(c -> 'files') WITH ORDINALITY x(ent, i)) s
     WHERE r IS NOT NULL ORDER BY i LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._invalid_entry(bad);
    END IF;
    SELECT f ->> 'path' INTO bad FROM jsonb_array_elements(c -> 'files') f
     GROUP BY f ->> 'path' HAVING count(*) > 1 LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._invalid_entry(format('Path %s is listed more than once.', to_jsonb(bad)));
    END IF;
    -- An entry beneath a file: ordered by path || '/' as bytes, everything
    -- beneath an entry comes right after it, so a file is followed by an
    -- entry beneath it exactly when any entry is beneath it.
    SELECT s.next_path INTO bad FROM (
        SELECT ent ->> 'kind' AS kind, (ent ->> 'path') || '/' AS prefix,
               lead(ent ->> 'path') OVER (ORDER BY ((ent ->> 'path') || '/') COLLATE "C") AS next_path
          FROM jsonb_array_elements(c -> 'files') ent) s
     WHERE s.kind = 'file' AND starts_with(s.next_path, s.prefix) LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._invalid_entry(format('Path %s is beneath a file.', to_jsonb(bad)));
    END IF;

    -- artifacts: {artifactId, name, mimeType, size, blobKey, createdAt}.
    IF jsonb_typeof(c -> 'artifacts') IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._invalid_entry('artifacts is an array.');
    END IF;
    FOR e IN SELECT * FROM jsonb_array_elements(c -> 'artifacts') LOOP
        IF jsonb_typeof(e) IS DISTINCT FROM 'object'
           OR jsonb_typeof(e -> 'artifactId') IS DISTINCT FROM 'string' OR e ->> 'artifactId' = ''
           OR jsonb_typeof(e -> 'name') IS DISTINCT FROM 'string' OR e ->> 'name' = ''
           OR jsonb_typeof(e -> 'mimeType') IS DISTINCT FROM 'string' OR e ->> 'mimeType' = ''
           OR e ->> 'size' !~ '^[0-9]{1,16}$'
           OR jsonb_typeof(e -> 'size') IS DISTINCT FROM 'number'
           OR jsonb_typeof(e -> 'createdAt') IS DISTINCT FROM 'number' THEN
            PERFORM sandbox_store_internal._invalid_entry('Each artifact has artifactId, name, mimeType, size, blobKey and createdAt.');
        END IF;
        IF jsonb_typeof(e -> 'blobKey') IS DISTINCT FROM 'string'
           OR e ->> 'blobKey' !~ '^sandbox-artifacts/.' THEN
            PERFORM sandbox_store_internal._invalid_entry(format('The blob key of artifact %s is not under sandbox-artifacts/.', e -> 'artifactId'));
        END IF;
        -- (a key of checkpoint_blobs: short enough for its index)
        IF octet_length(e ->> 'blobKey') > 1024 THEN
            PERFORM sandbox_store_internal._invalid_entry(format('The blob key of artifact %s has %s bytes; at most 1024 are allowed.',
                                                        e -> 'artifactId', octet_length(e ->> 'blobKey')));
        END IF;
    END LOOP;
    -- (valid after all: the query above was stricter)
    RETURN ARRAY(SELECT DISTINCT s.k COLLATE "C" FROM (
        SELECT f ->> 'blobKey' FROM jsonb_array_elements(c -> 'files') f WHERE f ->> 'kind' = 'file'
        UNION ALL
        SELECT a ->> 'blobKey' FROM jsonb_array_elements(c -> 'artifacts') a) s(k)
      ORDER BY 1);
END
$$;


-- An id argument (checkpoint, run or thread): a string of 1..max_bytes
-- bytes; otherwise the error state (the checkpoint store's SBC07, the run
-- store's 22023).  (Text in the database is always well-formed Unicode: a
-- JSON string with a lone surrogate escape is refused where the jsonb is
-- read, 22P05, and the client refuses such strings before sending them.)
CREATE FUNCTION sandbox_store_internal._check_id(state pg_catalog.text, v pg_catalog.text,
                                                what pg_catalog.text, max_bytes pg_catalog.int4)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF v IS NULL OR octet_length(v) NOT BETWEEN 1 AND max_bytes THEN
        PERFORM sandbox_store_internal._raise(state, format('invalid %s', what),
            format('A %s is a string of 1 to %s bytes; the value given is %s.', what, max_bytes,
                   CASE WHEN v IS NULL THEN 'missing' ELSE octet_length(v) || ' bytes long' END));
    END IF;
END
$$;

-- Raise an error of the checkpoint, run and run log stores: SQLSTATE state
-- (22023, SB001, SBCnn, SBR01..SBR03), message and detail given.
CREATE FUNCTION sandbox_store_internal._raise(state pg_catalog.text, message pg_catalog.text,
                                             detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = _raise.state, MESSAGE = _raise.message, DETAIL = _raise.detail;
END
$$;


-- Sandbox checkpoints (1.4): the append-only chain of a thread's saved
-- sandbox states (files, conversation, artifacts), its head, the
-- content-addressed blobs they point to, and the single writer per thread.
-- The same SQL in both editions (PL/pgSQL); the fence draw,
-- sandbox_store_internal._draw_claim_fence(), and the check of a checkpoint
-- before it is appended, _checkpoint_check() (C in the C edition), are each
-- edition's own.
--
-- The blob keys a checkpoint points to are a column of its row (1.5), each
-- once: checkpoint_blob_references() counts them when it is called, so an
-- append or a delete writes no row per blob.
--
-- A thread's writer holds a claim, in sandbox_store.leases, on the reserved
-- key E'\x01checkpoint-writer\x01' || thread_id, with a fence from fence_seq
-- like every claim.  Every write (append, delete_head, fork) is one call:
-- it locks the writer's lease row, checks owner token, fence and expiry,
-- then the head, and writes, in one transaction, so two writers, or a stale
-- writer after a takeover, never both succeed.  The clock is the database
-- server's (clock_timestamp()), or, for tests, the time the caller passes
-- as at (every call of one store must then pass the same clock).
--
-- Errors carry SQLSTATEs of their own, SBC01..SBC10, which the TypeScript
-- client maps to the SANDBOX_SNAPSHOT_* codes; a lost writer is SB001, as
-- for any lost claim.

CREATE TABLE sandbox_store.checkpoints (
    id         pg_catalog.text NOT NULL,
    thread_id  pg_catalog.text NOT NULL,
    parent_id  pg_catalog.text,
    created_at pg_catalog.int8 NOT NULL,
    checkpoint pg_catalog.jsonb NOT NULL,
    blob_keys  pg_catalog.text[] NOT NULL,
    CONSTRAINT checkpoints_pkey PRIMARY KEY (id),
    CONSTRAINT checkpoints_id_length CHECK (pg_catalog.octet_length(id) BETWEEN 1 AND 1024),
    CONSTRAINT checkpoints_thread_id_length CHECK (pg_catalog.octet_length(thread_id) BETWEEN 1 AND 1000)
);
-- checkpoint_list(thread_id): by created_at, then id as UTF-8 bytes.
CREATE INDEX checkpoints_thread_order_idx
    ON sandbox_store.checkpoints (thread_id, created_at, id COLLATE "C");
COMMENT ON TABLE sandbox_store.checkpoints IS
'Sandbox checkpoints, immutable once appended: id, thread, parent, createdAt (epoch ms), the whole checkpoint as jsonb and the blob keys it points to (each once, by bytes). Written only through the checkpoint_* functions.';

CREATE TABLE sandbox_store.checkpoint_heads (
    thread_id pg_catalog.text NOT NULL,
    head_id   pg_catalog.text NOT NULL,
    CONSTRAINT checkpoint_heads_pkey PRIMARY KEY (thread_id)
);
COMMENT ON TABLE sandbox_store.checkpoint_heads IS
'The head checkpoint of each thread that has one.';

REVOKE ALL ON TABLE sandbox_store.checkpoints, sandbox_store.checkpoint_heads FROM PUBLIC;

-- The writer check of every write: writer_thread_id's lease row, locked,
-- must hold owner_token and fence, unexpired at now, and be the writer of
-- thread_id.  SB001 otherwise.
CREATE FUNCTION sandbox_store_internal._check_writer(thread_id pg_catalog.text, writer_thread_id pg_catalog.text,
                                            owner_token pg_catalog.uuid, fence pg_catalog.int8,
                                            now pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record;
BEGIN
    IF writer_thread_id IS DISTINCT FROM thread_id THEN
        PERFORM sandbox_store_internal._raise('SB001', format('the checkpoint writer of thread %s was lost', to_jsonb(thread_id)),
            format('The writer given holds thread %s, not this one.  Nothing was changed.', to_jsonb(writer_thread_id)));
    END IF;
    SELECT s.owner_token, s.fence, s.lease_expires_at INTO l
      FROM ONLY sandbox_store.leases s
     WHERE s.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key(thread_id)
       FOR UPDATE;
    IF l.owner_token IS NULL OR l.owner_token IS DISTINCT FROM _check_writer.owner_token
       OR l.fence IS DISTINCT FROM _check_writer.fence OR l.lease_expires_at <= now THEN
        PERFORM sandbox_store_internal._raise('SB001', format('the checkpoint writer of thread %s was lost', to_jsonb(thread_id)),
            CASE WHEN l.owner_token IS NULL THEN 'The thread has no writer: it was released or never taken.  Nothing was changed.'
                 WHEN l.owner_token IS DISTINCT FROM _check_writer.owner_token OR l.fence IS DISTINCT FROM _check_writer.fence
                 THEN format('The thread''s writer has fence %s now: the lease was taken over.  Nothing was changed.', l.fence)
                 ELSE format('The writer''s lease expired at %s.  Nothing was changed.', l.lease_expires_at) END);
    END IF;
END
$$;

-- The interface.

-- A checkpoint larger than the setting sandbox_store.max_checkpoint_bytes
-- (0: no limit) is refused with SBC08 before anything else reads it:
-- working on a checkpoint takes many times its size in memory.  size is its
-- jsonb value's size as pg_column_size gives it.  Each edition reads the
-- setting in _max_checkpoint_bytes() (the C edition's library defines it,
-- for superusers; the SQL edition parses the text anyone may set).
CREATE FUNCTION sandbox_store_internal._checkpoint_size(size pg_catalog.int8, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    max_bytes pg_catalog.int8 := sandbox_store_internal._max_checkpoint_bytes();
BEGIN
    IF max_bytes > 0 AND size > max_bytes THEN
        PERFORM sandbox_store_internal._invalid_entry(
            format('%s is %s bytes; sandbox_store.max_checkpoint_bytes allows at most %s.', what, size, max_bytes));
    END IF;
END
$$;

-- An entry of a checkpoint that is not as the contract says: SBC08.
CREATE FUNCTION sandbox_store_internal._invalid_entry(detail pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'SBC08', MESSAGE = 'invalid checkpoint entry', DETAIL = detail;
END
$$;

-- The reserved claim key of a thread's checkpoint writer.
CREATE FUNCTION sandbox_store_internal._writer_key(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT E'\x01checkpoint-writer\x01' OPERATOR(pg_catalog.||) thread_id $$;

CREATE FUNCTION sandbox_store.checkpoint_acquire_writer(
    thread_id pg_catalog.text,
    lease_ms pg_catalog.int8 DEFAULT 120000,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS TABLE (fence pg_catalog.int8, owner_token pg_catalog.uuid, expires_at pg_catalog.timestamptz)
LANGUAGE plpgsql VOLATILE ROWS 1 SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    k pg_catalog.text;
    now pg_catalog.timestamptz := COALESCE(checkpoint_acquire_writer.at, clock_timestamp());
    cur record;
BEGIN
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_acquire_writer.thread_id, 'thread id', 1000);
    IF lease_ms IS NULL OR lease_ms <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms must be positive', DETAIL = format('The value given is %s.', lease_ms);
    END IF;
    IF checkpoint_acquire_writer.at IS NOT NULL AND NOT isfinite(checkpoint_acquire_writer.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_acquire_writer.at);
    END IF;
    IF lease_ms / 1000.0 >= 9223372036854 OR extract(epoch FROM now) + lease_ms / 1000.0 >= 9224318015999 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms is too long',
            DETAIL = 'now + lease_ms would be past the latest timestamp PostgreSQL has.';
    END IF;
    k := sandbox_store_internal._writer_key(checkpoint_acquire_writer.thread_id);
    -- Never wait: the writer's lease row is locked at once, or another
    -- transaction is acquiring, renewing, releasing or writing with it and
    -- has not ended (SBC05, whatever it does next).  A thread without a
    -- lease row yet: its first acquirers also take the writer key's lock
    -- (_try_writer_lock, until the transaction ends), at once or not at
    -- all, so that none waits for another's insert of the row.
    BEGIN
        SELECT l.fence, l.owner_token, l.lease_expires_at INTO cur
          FROM ONLY sandbox_store.leases l WHERE l.key OPERATOR(pg_catalog.=) k FOR UPDATE NOWAIT;
        IF NOT FOUND THEN
            IF NOT sandbox_store_internal._try_writer_lock(k) THEN
                RAISE EXCEPTION USING ERRCODE = 'lock_not_available';
            END IF;
            -- (a row committed since the first look)
            SELECT l.fence, l.owner_token, l.lease_expires_at INTO cur
              FROM ONLY sandbox_store.leases l WHERE l.key OPERATOR(pg_catalog.=) k FOR UPDATE NOWAIT;
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            'Another transaction is acquiring, renewing, releasing or writing with the thread''s writer and has not ended.');
    END;
    IF cur.owner_token IS NOT NULL AND cur.lease_expires_at > now THEN
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            format('Its lease (fence %s) runs until %s.', cur.fence, cur.lease_expires_at));
    END IF;
    INSERT INTO sandbox_store.leases AS l (key, fence, owner_token, lease_expires_at)
    VALUES (k, sandbox_store_internal._draw_claim_fence(COALESCE(cur.fence, 0)), gen_random_uuid(),
            now + make_interval(secs => lease_ms / 1000.0))
    ON CONFLICT ON CONSTRAINT leases_pkey DO UPDATE
       -- (a row another transaction inserted meanwhile may already have a
       -- fence above the one drawn: then one above it, never a lower one)
       SET fence = CASE WHEN EXCLUDED.fence OPERATOR(pg_catalog.>) l.fence THEN EXCLUDED.fence
                        ELSE sandbox_store_internal._draw_claim_fence(l.fence) END,
           owner_token = EXCLUDED.owner_token,
           lease_expires_at = EXCLUDED.lease_expires_at
     WHERE l.owner_token IS NULL OR l.lease_expires_at OPERATOR(pg_catalog.<=) now
    RETURNING l.fence, l.owner_token, l.lease_expires_at INTO fence, owner_token, expires_at;
    IF NOT FOUND THEN
        -- Another writer took the thread's first lease meanwhile.
        PERFORM sandbox_store_internal._raise('SBC05', format('thread %s has a checkpoint writer', to_jsonb(checkpoint_acquire_writer.thread_id)),
            'Another writer took the lease at the same time.');
    END IF;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_acquire_writer(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz) IS
'Take the single checkpoint writer of a thread for lease_ms, without waiting: a claim (fence, owner_token, expires_at) on the thread''s reserved key, its fence above every fence the thread had. SBC05 if another unexpired writer holds it, or another transaction holds the writer at the moment.';

CREATE FUNCTION sandbox_store.checkpoint_append(
    checkpoint pg_catalog.jsonb,
    expected_head_id pg_catalog.text,
    writer_thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_id pg_catalog.text := checkpoint_append.checkpoint ->> 'id';
    v_thread pg_catalog.text := checkpoint_append.checkpoint ->> 'threadId';
    v_parent pg_catalog.text := checkpoint_append.checkpoint ->> 'parentCheckpointId';
    v_head pg_catalog.text;
    v_keys pg_catalog.text[];
BEGIN
    IF checkpoint_append.at IS NOT NULL AND NOT isfinite(checkpoint_append.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_append.at);
    END IF;
    v_keys := sandbox_store_internal._checkpoint_check(checkpoint_append.checkpoint);
    PERFORM sandbox_store_internal._check_writer(v_thread, writer_thread_id, checkpoint_append.owner_token, checkpoint_append.fence, COALESCE(checkpoint_append.at, clock_timestamp()));
    IF EXISTS (SELECT FROM ONLY sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) v_id) THEN
        PERFORM sandbox_store_internal._raise('SBC03', format('checkpoint %s already exists', to_jsonb(v_id)),
            'Checkpoints are immutable: an id is appended once.');
    END IF;
    SELECT h.head_id INTO v_head FROM ONLY sandbox_store.checkpoint_heads h
     WHERE h.thread_id OPERATOR(pg_catalog.=) v_thread FOR UPDATE;
    IF v_head IS DISTINCT FROM expected_head_id THEN
        PERFORM sandbox_store_internal._raise('SBC01', format('the head of thread %s is not the expected one', to_jsonb(v_thread)),
            format('The head is %s; the append expected %s.', COALESCE(to_jsonb(v_head), 'null'), COALESCE(to_jsonb(expected_head_id), 'null')));
    END IF;
    IF v_parent IS DISTINCT FROM expected_head_id THEN
        PERFORM sandbox_store_internal._raise('SBC02', format('the parent of checkpoint %s is not the head', to_jsonb(v_id)),
            format('Its parent is %s; the head is %s.', COALESCE(to_jsonb(v_parent), 'null'), COALESCE(to_jsonb(expected_head_id), 'null')));
    END IF;
    BEGIN
        INSERT INTO sandbox_store.checkpoints (id, thread_id, parent_id, created_at, checkpoint, blob_keys)
        VALUES (v_id, v_thread, v_parent, (checkpoint_append.checkpoint ->> 'createdAt')::pg_catalog.int8, checkpoint_append.checkpoint, v_keys);
    EXCEPTION WHEN unique_violation THEN
        PERFORM sandbox_store_internal._raise('SBC03', format('checkpoint %s already exists', to_jsonb(v_id)),
            'Checkpoints are immutable: an id is appended once.');
    END;
    INSERT INTO sandbox_store.checkpoint_heads AS h (thread_id, head_id) VALUES (v_thread, v_id)
    ON CONFLICT ON CONSTRAINT checkpoint_heads_pkey DO UPDATE SET head_id = EXCLUDED.head_id;
    RETURN v_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_append(pg_catalog.jsonb, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Append a checkpoint as the thread''s new head, in one call that checks the writer and the head together: SBC07/SBC08 invalid, SB001 writer lost, SBC03 duplicate id, SBC01 stale head, SBC02 parent mismatch. Returns the new head id.';

CREATE FUNCTION sandbox_store.checkpoint_blob_references()
RETURNS TABLE (key pg_catalog.text, refs pg_catalog.int8)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
AS $$
-- (every checkpoint's keys, counted now: no row per blob is written)
SELECT k.key, pg_catalog.count(*) FROM ONLY sandbox_store.checkpoints c, pg_catalog.unnest(c.blob_keys) k(key)
 GROUP BY k.key ORDER BY k.key COLLATE "C"
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_blob_references() IS
'Every blob key a stored checkpoint points to, with the number of checkpoints that point to it, by key as UTF-8 bytes.';

CREATE FUNCTION sandbox_store.checkpoint_delete_head(
    thread_id pg_catalog.text,
    checkpoint_id pg_catalog.text,
    writer_thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    head pg_catalog.text;
    gone record;
BEGIN
    IF checkpoint_delete_head.at IS NOT NULL AND NOT isfinite(checkpoint_delete_head.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_delete_head.at);
    END IF;
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_delete_head.thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_id, 'checkpoint id', 1024);
    PERFORM sandbox_store_internal._check_writer(checkpoint_delete_head.thread_id, writer_thread_id, checkpoint_delete_head.owner_token, checkpoint_delete_head.fence, COALESCE(checkpoint_delete_head.at, clock_timestamp()));
    SELECT h.head_id INTO head FROM ONLY sandbox_store.checkpoint_heads h
     WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id FOR UPDATE;
    IF head IS DISTINCT FROM checkpoint_id THEN
        PERFORM sandbox_store_internal._raise('SBC04', format('checkpoint %s is not the head of thread %s', to_jsonb(checkpoint_id), to_jsonb(checkpoint_delete_head.thread_id)),
            format('The head is %s.', COALESCE(to_jsonb(head), 'null')));
    END IF;
    DELETE FROM ONLY sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) checkpoint_id
    RETURNING c.parent_id INTO gone;
    IF gone.parent_id IS NULL THEN
        DELETE FROM ONLY sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id;
    ELSE
        UPDATE ONLY sandbox_store.checkpoint_heads h SET head_id = gone.parent_id
         WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_delete_head.thread_id;
    END IF;
    RETURN gone.parent_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_delete_head(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Delete the thread''s head checkpoint (SBC04 if checkpoint_id is not the head); the head moves to its parent and its blob references drop. Returns the new head id or NULL.';

CREATE FUNCTION sandbox_store.checkpoint_fork(
    source_thread_id pg_catalog.text,
    source_checkpoint_id pg_catalog.text,
    destination_thread_id pg_catalog.text,
    destination_checkpoint_id pg_catalog.text,
    created_at pg_catalog.int8,
    writer_thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_source pg_catalog.jsonb;
    v_keys pg_catalog.text[];
    v_copy pg_catalog.jsonb;
BEGIN
    IF checkpoint_fork.at IS NOT NULL AND NOT isfinite(checkpoint_fork.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_fork.at);
    END IF;
    PERFORM sandbox_store_internal._check_id('SBC07', source_thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._check_id('SBC07', source_checkpoint_id, 'checkpoint id', 1024);
    PERFORM sandbox_store_internal._check_id('SBC07', destination_thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._check_id('SBC07', destination_checkpoint_id, 'checkpoint id', 1024);
    IF checkpoint_fork.created_at IS NULL OR checkpoint_fork.created_at NOT BETWEEN -8640000000000000 AND 8640000000000000 THEN
        PERFORM sandbox_store_internal._invalid_entry('createdAt is a whole number of milliseconds since 1970-01-01 UTC.');
    END IF;
    PERFORM sandbox_store_internal._check_writer(destination_thread_id, writer_thread_id, checkpoint_fork.owner_token, checkpoint_fork.fence, COALESCE(checkpoint_fork.at, clock_timestamp()));
    IF source_thread_id = destination_thread_id THEN
        PERFORM sandbox_store_internal._raise('SBC11', format('a fork of thread %s cannot go to the same thread', to_jsonb(source_thread_id)),
            'A fork makes the first checkpoint of another thread.');
    END IF;
    -- (its stored size, read before the checkpoint itself)
    PERFORM sandbox_store_internal._checkpoint_size(pg_column_size(c.checkpoint), 'The source checkpoint')
       FROM ONLY sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) source_checkpoint_id;
    SELECT c.checkpoint, c.blob_keys INTO v_source, v_keys FROM ONLY sandbox_store.checkpoints c
     WHERE c.id OPERATOR(pg_catalog.=) source_checkpoint_id;
    IF v_source IS NULL THEN
        PERFORM sandbox_store_internal._raise('SBC09', format('checkpoint %s does not exist', to_jsonb(source_checkpoint_id)),
            'A fork copies a stored checkpoint.');
    END IF;
    IF v_source ->> 'threadId' IS DISTINCT FROM source_thread_id THEN
        PERFORM sandbox_store_internal._raise('SBC11', format('checkpoint %s is not a checkpoint of thread %s', to_jsonb(source_checkpoint_id), to_jsonb(source_thread_id)),
            format('It belongs to thread %s.', v_source -> 'threadId'));
    END IF;
    IF EXISTS (SELECT FROM ONLY sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) destination_thread_id)
       OR EXISTS (SELECT FROM ONLY sandbox_store.checkpoints c WHERE c.thread_id OPERATOR(pg_catalog.=) destination_thread_id) THEN
        PERFORM sandbox_store_internal._raise('SBC10', format('thread %s already has checkpoints', to_jsonb(destination_thread_id)),
            'A fork makes the first checkpoint of an empty thread.');
    END IF;
    -- The fork root: the source's files, conversation and artifacts, and
    -- nothing of its save (label, sourceRunId).
    v_copy := jsonb_build_object('id', destination_checkpoint_id, 'threadId', destination_thread_id, 'parentCheckpointId', NULL,
                                 'createdAt', checkpoint_fork.created_at, 'reason', 'fork-root',
                                 'files', v_source -> 'files', 'conversation', v_source -> 'conversation',
                                 'artifacts', v_source -> 'artifacts');
    BEGIN
        -- (the same files and artifacts: the same blob keys)
        INSERT INTO sandbox_store.checkpoints (id, thread_id, parent_id, created_at, checkpoint, blob_keys)
        VALUES (destination_checkpoint_id, destination_thread_id, NULL, checkpoint_fork.created_at, v_copy, v_keys);
    EXCEPTION WHEN unique_violation THEN
        PERFORM sandbox_store_internal._raise('SBC03', format('checkpoint %s already exists', to_jsonb(destination_checkpoint_id)),
            'Checkpoints are immutable: an id is appended once.');
    END;
    INSERT INTO sandbox_store.checkpoint_heads (thread_id, head_id) VALUES (destination_thread_id, destination_checkpoint_id);
    RETURN v_copy;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_fork(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz) IS
'Copy a stored checkpoint as the fork-root (no parent) of an empty thread, atomically, under the destination''s writer, and return the copy; SBC09 if the source does not exist, SBC11 if it is not of the source thread (or the threads are the same), SBC10 if the destination has checkpoints.';

CREATE FUNCTION sandbox_store.checkpoint_get(id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF checkpoint_get.id IS NULL OR octet_length(checkpoint_get.id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_get.id, 'checkpoint id', 1024);
    END IF;
    RETURN (SELECT c.checkpoint FROM ONLY sandbox_store.checkpoints c WHERE c.id OPERATOR(pg_catalog.=) checkpoint_get.id);
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_get(pg_catalog.text) IS
'The checkpoint with this id, as appended, or NULL.';

CREATE FUNCTION sandbox_store.checkpoint_head(thread_id pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF checkpoint_head.thread_id IS NULL OR octet_length(checkpoint_head.thread_id) NOT BETWEEN 1 AND 1000 THEN
        PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_head.thread_id, 'thread id', 1000);
    END IF;
    RETURN (SELECT h.head_id FROM ONLY sandbox_store.checkpoint_heads h WHERE h.thread_id OPERATOR(pg_catalog.=) checkpoint_head.thread_id);
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_head(pg_catalog.text) IS
'The head checkpoint id of a thread, or NULL.';

CREATE FUNCTION sandbox_store.checkpoint_list(thread_id pg_catalog.text)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    -- (the check inline, a simple expression: the read's own cost stays small)
    IF checkpoint_list.thread_id IS NULL OR octet_length(checkpoint_list.thread_id) NOT BETWEEN 1 AND 1000 THEN
        PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_list.thread_id, 'thread id', 1000);
    END IF;
    RETURN QUERY SELECT c.checkpoint FROM ONLY sandbox_store.checkpoints c
                  WHERE c.thread_id OPERATOR(pg_catalog.=) checkpoint_list.thread_id
                  ORDER BY c.created_at, c.id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_list(pg_catalog.text) IS
'The checkpoints of a thread, by createdAt, then id as UTF-8 bytes.';

CREATE FUNCTION sandbox_store.checkpoint_release_writer(
    thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_release_writer.thread_id, 'thread id', 1000);
    UPDATE ONLY sandbox_store.leases l SET owner_token = NULL, lease_expires_at = NULL
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key(checkpoint_release_writer.thread_id)
       AND l.owner_token OPERATOR(pg_catalog.=) checkpoint_release_writer.owner_token AND l.fence OPERATOR(pg_catalog.=) checkpoint_release_writer.fence;
    RETURN FOUND;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_release_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8) IS
'End the thread''s writer if owner_token and fence still hold it: true if they did (a stale writer never ends its successor).';

CREATE FUNCTION sandbox_store.checkpoint_renew_writer(
    thread_id pg_catalog.text,
    owner_token pg_catalog.uuid,
    fence pg_catalog.int8,
    lease_ms pg_catalog.int8 DEFAULT 120000,
    at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    now pg_catalog.timestamptz := COALESCE(checkpoint_renew_writer.at, clock_timestamp());
    expires pg_catalog.timestamptz;
BEGIN
    PERFORM sandbox_store_internal._check_id('SBC07', checkpoint_renew_writer.thread_id, 'thread id', 1000);
    IF lease_ms IS NULL OR lease_ms <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms must be positive', DETAIL = format('The value given is %s.', lease_ms);
    END IF;
    IF checkpoint_renew_writer.at IS NOT NULL AND NOT isfinite(checkpoint_renew_writer.at) THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'at must be a finite timestamp', DETAIL = format('The value given is %s.', checkpoint_renew_writer.at);
    END IF;
    IF lease_ms / 1000.0 >= 9223372036854 OR extract(epoch FROM now) + lease_ms / 1000.0 >= 9224318015999 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'lease_ms is too long',
            DETAIL = 'now + lease_ms would be past the latest timestamp PostgreSQL has.';
    END IF;
    PERFORM sandbox_store_internal._check_writer(checkpoint_renew_writer.thread_id, checkpoint_renew_writer.thread_id, checkpoint_renew_writer.owner_token, checkpoint_renew_writer.fence, now);
    UPDATE ONLY sandbox_store.leases l SET lease_expires_at = now + make_interval(secs => lease_ms / 1000.0)
     WHERE l.key OPERATOR(pg_catalog.=) sandbox_store_internal._writer_key(checkpoint_renew_writer.thread_id)
    RETURNING l.lease_expires_at INTO expires;
    RETURN expires;
END
$$;

COMMENT ON FUNCTION sandbox_store.checkpoint_renew_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.int8, pg_catalog.timestamptz) IS
'Extend the thread''s writer to now + lease_ms while it is still the current, unexpired writer; SB001 otherwise.';


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
    CONSTRAINT runs_run_id_length CHECK (pg_catalog.octet_length(run_id) BETWEEN 1 AND 1024),
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
COMMENT ON TABLE sandbox_store.runs IS
'Agent runs (RunStore records): run id, thread, status, startedAt and finishedAt (epoch ms, as the client gave them), error, usage, sandbox key, detachedSince, cancelRequested, the current driver epoch (NULL: none) and the highest the run ever had (NULL: never claimed), which the next claim goes above. Written only through the run_* functions.';

CREATE TABLE sandbox_store.run_logs (
    run_id     pg_catalog.text NOT NULL,
    last_seq   pg_catalog.int8 NOT NULL DEFAULT 0,
    closed_at  pg_catalog.timestamptz,
    updated_at pg_catalog.timestamptz NOT NULL,
    watched    pg_catalog.bool NOT NULL DEFAULT false,
    CONSTRAINT run_logs_pkey PRIMARY KEY (run_id),
    CONSTRAINT run_logs_run_id_length CHECK (pg_catalog.octet_length(run_id) BETWEEN 1 AND 1024)
);
COMMENT ON TABLE sandbox_store.run_logs IS
'One row per run log: the greatest seq stored (0: none), when it was closed (NULL: open), when it was last written, and whether a reader has watched it (run_log_watch: only then do its writes notify). A log may exist without a runs row. Written only through the run_log_* functions.';

CREATE TABLE sandbox_store.run_log_entries (
    run_id pg_catalog.text NOT NULL,
    seq    pg_catalog.int8 NOT NULL,
    chunk  pg_catalog.jsonb NOT NULL,
    CONSTRAINT run_log_entries_pkey PRIMARY KEY (run_id, seq)
);
COMMENT ON TABLE sandbox_store.run_log_entries IS
'The entries of the run logs: each chunk (a JSON object) under its run id and seq. No foreign key to run_logs (the append path does without its cost): the run_log_* functions keep them consistent.';

REVOKE ALL ON TABLE sandbox_store.runs, sandbox_store.run_logs,
    sandbox_store.run_log_entries FROM PUBLIC;

-- A claim of a run (run_claim, or run_update raising driverEpoch) commits
-- durably whatever the session's synchronous_commit: off is raised to
-- local for the rest of the transaction, so a claim whose commit the
-- caller saw is never lost in a crash (another claim would then be given
-- the same number by run_update's patch, or the previous driver would go
-- on while the caller believes it drives the run).
CREATE FUNCTION sandbox_store_internal._run_durable()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'local', true);
    END IF;
END
$$;

-- The fence of a log write (append, upsert, close) of run_id, called with
-- the log row locked: reads the runs row (a claim takes the log row's lock
-- before it raises the epoch, so it waits for the write's transaction, or
-- the write, which read after the lock, sees the claim) and raises SB001
-- unless the write may go on:
-- without an epoch, while the run has no runs row or was never claimed (a
-- cleared epoch does not count: the highest it had is kept); with one, when
-- it is the run's current driver_epoch.  Returns the run's status (NULL
-- without a runs row).
CREATE FUNCTION sandbox_store_internal._run_fence(run_id pg_catalog.text, epoch pg_catalog.int8)
RETURNS pg_catalog.text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_status pg_catalog.text;
    v_epoch pg_catalog.int8;
    v_highest pg_catalog.int8;
BEGIN
    SELECT r.status, r.driver_epoch, r.max_driver_epoch INTO v_status, v_epoch, v_highest
      FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) _run_fence.run_id;
    IF epoch IS NULL AND v_highest IS NOT NULL
       OR epoch IS NOT NULL AND v_epoch IS DISTINCT FROM epoch THEN
        PERFORM sandbox_store_internal._run_stale(_run_fence.run_id, epoch, v_epoch, v_highest, v_status IS NOT NULL);
    END IF;
    RETURN v_status;
END
$$;

-- Whether a run's status is a finished one (completed, failed or aborted):
-- the one place the SQL of both editions lists them (src/run_log.c has the
-- same list, in run_status_finished).  A LANGUAGE sql expression with no
-- SET clause, so the planner puts it inline where it is called.  NULL for
-- NULL.
CREATE FUNCTION sandbox_store_internal._run_finished(status pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE sql
IMMUTABLE
AS $$
    SELECT _run_finished.status OPERATOR(pg_catalog.=) ANY (ARRAY['completed', 'failed', 'aborted']::pg_catalog.text[])
$$;

-- 22003 for an append of n entries to the log of run_id whose last seq is
-- last, when they would take seqs past 2^53 - 1 (the largest whole number a
-- JavaScript number holds exactly, an offset's position in the client).
-- Only run_log_upsert brings a tail that near the end.
CREATE FUNCTION sandbox_store_internal._run_log_full(run_id pg_catalog.text, last pg_catalog.int8,
                                                    n pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'numeric_value_out_of_range',
        MESSAGE = format('the log of run %s is full', to_jsonb(_run_log_full.run_id)),
        DETAIL = format('Its last seq is %s, and the entries appended would end at seq %s, past 9007199254740991 (2^53 - 1), the greatest seq.  Nothing was changed.',
                        last, last OPERATOR(pg_catalog.+) n),
        HINT = 'A log reaches its end only through run_log_upsert of a seq near it; close the log.';
END
$$;

-- A time in epoch milliseconds, as the client's JavaScript number: a finite
-- float8 (NaN and the infinities are refused, 22023).  what names the
-- argument or the patch key in the error.
CREATE FUNCTION sandbox_store_internal._run_number(v pg_catalog.float8, what pg_catalog.text)
RETURNS pg_catalog.float8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF v IS NULL OR v = 'NaN'::pg_catalog.float8
       OR v = 'Infinity'::pg_catalog.float8
       OR v = '-Infinity'::pg_catalog.float8 THEN
        PERFORM sandbox_store_internal._raise('22023', format('invalid %s', what),
            format('%s is a finite number; the value given is %s.', what, COALESCE(v::pg_catalog.text, 'missing')));
    END IF;
    RETURN v;
END
$$;

-- The value of key in a run_update patch that must be a finite number (a
-- JSON number that a float8 holds) or null (returned as NULL); 22023
-- otherwise.
CREATE FUNCTION sandbox_store_internal._run_patch_number(patch pg_catalog.jsonb, key pg_catalog.text)
RETURNS pg_catalog.float8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v pg_catalog.jsonb := patch -> key;
BEGIN
    IF jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) = 'number' THEN
        BEGIN
            RETURN (patch ->> key)::pg_catalog.float8;
        EXCEPTION WHEN numeric_value_out_of_range THEN
            NULL;
        END;
    END IF;
    PERFORM sandbox_store_internal._raise('22023', format('invalid patch key %s', key),
        format('%s is a number of milliseconds (a finite JavaScript number) or null; the value given is %s.', key,
               CASE WHEN jsonb_typeof(v) OPERATOR(pg_catalog.=) 'number' THEN 'a number out of range' ELSE v::pg_catalog.text END));
    RETURN NULL;
END
$$;

-- A run as the client's RunRecord: runId, threadId, status and startedAt
-- always; finishedAt, error, usage, sandboxKey, detachedSince,
-- cancelRequested and driverEpoch only when not NULL (absent, never JSON
-- null).  Numbers are the stored float8 values exactly (the function's
-- extra_float_digits makes their text the shortest that reads back as the
-- same float8).  It takes the columns, not the row: on Citus a whole-row
-- reference in a query on a distributed table becomes the shard's row type,
-- which no function takes.
CREATE FUNCTION sandbox_store_internal._run_record(
    run_id pg_catalog.text, thread_id pg_catalog.text, status pg_catalog.text,
    started_at pg_catalog.float8, finished_at pg_catalog.float8, error pg_catalog.jsonb,
    usage pg_catalog.jsonb, sandbox_key pg_catalog.text, detached_since pg_catalog.float8,
    cancel_requested pg_catalog.bool, driver_epoch pg_catalog.int8)
RETURNS pg_catalog.jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 1
AS $$
SELECT pg_catalog.jsonb_build_object(
           'runId', _run_record.run_id, 'threadId', _run_record.thread_id, 'status', _run_record.status, 'startedAt', _run_record.started_at,
           'finishedAt', _run_record.finished_at, 'error', _run_record.error, 'usage', _run_record.usage, 'sandboxKey', _run_record.sandbox_key,
           'detachedSince', _run_record.detached_since, 'cancelRequested', _run_record.cancel_requested,
           'driverEpoch', _run_record.driver_epoch)
       OPERATOR(pg_catalog.-) pg_catalog.array_remove(ARRAY[
           CASE WHEN _run_record.finished_at IS NULL THEN 'finishedAt' END,
           CASE WHEN _run_record.error IS NULL THEN 'error' END,
           CASE WHEN _run_record.usage IS NULL THEN 'usage' END,
           CASE WHEN _run_record.sandbox_key IS NULL THEN 'sandboxKey' END,
           CASE WHEN _run_record.detached_since IS NULL THEN 'detachedSince' END,
           CASE WHEN _run_record.cancel_requested IS NULL THEN 'cancelRequested' END,
           CASE WHEN _run_record.driver_epoch IS NULL THEN 'driverEpoch' END], NULL)
$$;

-- SB001 for a write of run_id that carried epoch given (NULL: none) while
-- the run's driver_epoch is current_epoch (NULL: none) and the highest
-- epoch it ever had is highest (NULL: never claimed; has_record: whether
-- the run has a runs row).
CREATE FUNCTION sandbox_store_internal._run_stale(run_id pg_catalog.text, given pg_catalog.int8,
                                                 current_epoch pg_catalog.int8, highest pg_catalog.int8,
                                                 has_record pg_catalog.bool)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sandbox_store_internal._raise('SB001',
        format('the driver epoch of run %s is not current', to_jsonb(_run_stale.run_id)),
        CASE WHEN given IS NULL AND current_epoch IS NOT NULL
             THEN format('The write carried no epoch, and a driver has claimed the run: its current epoch is %s.  Nothing was changed.',
                         current_epoch)
             WHEN given IS NULL
             THEN format('The write carried no epoch, and a driver has claimed the run: its epoch was cleared (the highest it had is %s).  Nothing was changed.',
                         highest)
             WHEN NOT has_record
             THEN format('The write carried epoch %s, and the run has no record: it was never claimed (no current epoch).  Nothing was changed.',
                         given)
             WHEN current_epoch IS NULL AND highest IS NOT NULL
             THEN format('The write carried epoch %s, and the run has no current epoch: it was cleared (the highest it had is %s).  Nothing was changed.',
                         given, highest)
             WHEN current_epoch IS NULL
             THEN format('The write carried epoch %s, and the run was never claimed (no current epoch).  Nothing was changed.',
                         given)
             ELSE format('The write carried epoch %s; the current epoch is %s.  Nothing was changed.', given, current_epoch) END);
END
$$;

-- Claim a run for a driver: take the lock of its log row (which every log
-- write holds from before its fence check to its commit), then the runs
-- row's, and give the run a new driver epoch: the highest it ever had (its
-- max_driver_epoch, which a clear of driver_epoch keeps; 0 if none) plus a
-- number drawn from fence_seq, as a sandbox claim draws its fence.  The
-- drawn number is never drawn again, even after a crash that loses this
-- transaction (the WAL that covers it is flushed before it is returned),
-- and the highest epoch never goes down, so an epoch once returned is
-- never returned again for the run; and a run's epoch, which a run_update
-- patch may raise to any number, never moves the sequence.
CREATE FUNCTION sandbox_store.run_claim(run_id pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_epoch pg_catalog.int8;
    v_highest pg_catalog.int8;
    v_next pg_catalog.numeric;
    v_status pg_catalog.text;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_claim.run_id, 'run id', 1024);
    -- The run's log row first (made, empty, if the run has none), locked:
    -- a log write in flight holds it, so the claim waits for it to commit,
    -- and every later write reads the new epoch after taking it.
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_claim.run_id, 0, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at;
    SELECT r.status, r.max_driver_epoch INTO v_status, v_highest
      FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) run_claim.run_id
       FOR UPDATE;
    IF v_status IS NULL THEN
        PERFORM sandbox_store_internal._raise('SBR01', format('run %s does not exist', to_jsonb(run_claim.run_id)),
            'Only a run that run_create_or_resume made can be claimed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_claim.run_id)),
            format('Its status is %s; a finished run cannot be claimed.', v_status));
    END IF;
    v_next := COALESCE(v_highest, 0)::pg_catalog.numeric + sandbox_store_internal._draw_claim_fence(0);
    IF v_next > 9007199254740991 THEN
        PERFORM sandbox_store_internal._raise('22003', format('no driver epoch is left for run %s', to_jsonb(run_claim.run_id)),
            format('The next epoch would be %s, past 9007199254740991 (2^53 - 1), the greatest epoch.  Nothing was changed.', v_next));
    END IF;
    v_epoch := v_next;
    -- (made durable by its commit too, whatever the session's
    -- synchronous_commit: a claim the caller saw commit is never lost)
    PERFORM sandbox_store_internal._run_durable();
    UPDATE ONLY sandbox_store.runs r SET driver_epoch = v_epoch, max_driver_epoch = v_epoch
     WHERE r.run_id OPERATOR(pg_catalog.=) run_claim.run_id;
    RETURN v_epoch;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_claim(pg_catalog.text) IS
'Claim the run for a driver: it gets a new driver epoch, greater than any it had and never returned again for the run (not even after a crash): the highest epoch it ever had (a cleared one included) plus a number drawn from sandbox_store.fence_seq. The new epoch is returned; writes carrying an older epoch, or none, are refused (SB001) from then on. SBR01 if the run does not exist, SBR02 if its status is completed, failed or aborted.';

-- RunStore.createOrResume: insert the run, or return the existing record
-- unchanged (the other arguments are then ignored, but still checked).
CREATE FUNCTION sandbox_store.run_create_or_resume(
    run_id pg_catalog.text,
    thread_id pg_catalog.text,
    started_at pg_catalog.float8,
    status pg_catalog.text DEFAULT 'running')
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_run sandbox_store.runs;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_create_or_resume.run_id, 'run id', 1024);
    PERFORM sandbox_store_internal._check_id('22023', run_create_or_resume.thread_id, 'thread id', 1000);
    PERFORM sandbox_store_internal._run_number(run_create_or_resume.started_at, 'startedAt');
    IF run_create_or_resume.status IS NULL
       OR (run_create_or_resume.status NOT IN ('running', 'interrupted')
           AND NOT sandbox_store_internal._run_finished(run_create_or_resume.status)) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid run status',
            format('A status is running, interrupted, completed, failed or aborted; the value given is %s.',
                   COALESCE(to_jsonb(run_create_or_resume.status), 'null')));
    END IF;
    INSERT INTO sandbox_store.runs (run_id, thread_id, status, started_at)
    VALUES (run_create_or_resume.run_id, run_create_or_resume.thread_id, run_create_or_resume.status,
            run_create_or_resume.started_at)
    ON CONFLICT ON CONSTRAINT runs_pkey DO NOTHING;
    SELECT r.* INTO v_run FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) run_create_or_resume.run_id;
    RETURN sandbox_store_internal._run_record(
        v_run.run_id, v_run.thread_id, v_run.status, v_run.started_at, v_run.finished_at, v_run.error, v_run.usage, v_run.sandbox_key, v_run.detached_since, v_run.cancel_requested, v_run.driver_epoch);
END
$$;

COMMENT ON FUNCTION sandbox_store.run_create_or_resume(pg_catalog.text, pg_catalog.text, pg_catalog.float8, pg_catalog.text) IS
'Insert the run (thread, startedAt in epoch ms, status, running by default) and return its record as RunRecord JSON; if the run exists, return its record unchanged (the other arguments are checked, then ignored).';

-- RunStore.findActiveRun.
CREATE FUNCTION sandbox_store.run_find_active(thread_id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_find_active.thread_id, 'thread id', 1000);
    RETURN (SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
             WHERE r.thread_id OPERATOR(pg_catalog.=) run_find_active.thread_id
               AND r.status OPERATOR(pg_catalog.=) 'running'
             ORDER BY r.started_at DESC, r.run_id COLLATE "C" DESC
             LIMIT 1);
END
$$;

COMMENT ON FUNCTION sandbox_store.run_find_active(pg_catalog.text) IS
'The running run of a thread with the latest startedAt (ties: the greatest run id as UTF-8 bytes) as RunRecord JSON, or NULL.';

-- RunStore.get.
CREATE FUNCTION sandbox_store.run_get(run_id pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_get.run_id, 'run id', 1024);
    RETURN (SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
             WHERE r.run_id OPERATOR(pg_catalog.=) run_get.run_id);
END
$$;

COMMENT ON FUNCTION sandbox_store.run_get(pg_catalog.text) IS
'The record of the run as RunRecord JSON (fields that are not set are absent), or NULL.';

-- RunStore.listByThread.
CREATE FUNCTION sandbox_store.run_list_by_thread(thread_id pg_catalog.text)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_list_by_thread.thread_id, 'thread id', 1000);
    RETURN QUERY
        SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
         WHERE r.thread_id OPERATOR(pg_catalog.=) run_list_by_thread.thread_id
         ORDER BY r.started_at, r.run_id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.run_list_by_thread(pg_catalog.text) IS
'The runs of a thread as RunRecord JSON, by startedAt, then run id as UTF-8 bytes.';

-- RunStore.listReclaimable: the running runs detached at now - ttl_ms or
-- earlier.
CREATE FUNCTION sandbox_store.run_list_reclaimable(now pg_catalog.float8, ttl_ms pg_catalog.float8)
RETURNS SETOF pg_catalog.jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    cutoff pg_catalog.float8;
BEGIN
    cutoff := sandbox_store_internal._run_number(run_list_reclaimable.now, 'now')
              - sandbox_store_internal._run_number(run_list_reclaimable.ttl_ms, 'ttl_ms');
    RETURN QUERY
        SELECT sandbox_store_internal._run_record(
               r.run_id, r.thread_id, r.status, r.started_at, r.finished_at, r.error, r.usage, r.sandbox_key, r.detached_since, r.cancel_requested, r.driver_epoch) FROM ONLY sandbox_store.runs r
         WHERE r.status OPERATOR(pg_catalog.=) 'running' AND r.detached_since IS NOT NULL
           AND r.detached_since OPERATOR(pg_catalog.<=) cutoff
         ORDER BY r.detached_since, r.run_id COLLATE "C";
END
$$;

COMMENT ON FUNCTION sandbox_store.run_list_reclaimable(pg_catalog.float8, pg_catalog.float8) IS
'The running runs whose detachedSince is at or before now - ttl_ms (epoch ms), as RunRecord JSON, by detachedSince, then run id as UTF-8 bytes.';

-- Close the log of run_id (making a closed, empty log if it has none): true
-- if this call closed it, false if it was closed already.  Fenced like the
-- other log writes; a finished run's log may be closed.
CREATE FUNCTION sandbox_store.run_log_close(
    run_id pg_catalog.text,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_closed pg_catalog.timestamptz;
    v_watched pg_catalog.bool;
    v_now pg_catalog.timestamptz;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_close.run_id, 'run id', 1024);
    IF run_log_close.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_close.epoch));
    END IF;
    -- The log row, locked, then the fence.
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_close.run_id, 0, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at
    RETURNING l.closed_at, l.watched INTO v_closed, v_watched;
    PERFORM sandbox_store_internal._run_fence(run_log_close.run_id, run_log_close.epoch);
    IF v_closed IS NOT NULL THEN
        RETURN false;
    END IF;
    -- The time as a value, not a call in the UPDATE (Citus refuses a
    -- volatile function there).
    v_now := clock_timestamp();
    UPDATE ONLY sandbox_store.run_logs l SET closed_at = v_now, updated_at = v_now
     WHERE l.run_id OPERATOR(pg_catalog.=) run_log_close.run_id;
    IF v_watched THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_close.run_id);
    END IF;
    RETURN true;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_close(pg_catalog.text, pg_catalog.int8) IS
'Close the run''s log (a run without one gets a closed, empty log): true if this call closed it, false if it was closed already. Fenced like run_log_append (SB001); the log of a finished run may be closed. Notifies channel sandbox_store_run_log if a reader watches the log (run_log_watch).';

-- Delete the logs that are finished and quiet (the log row and its
-- entries): closed at least older_than ago, or open with a runs row whose
-- status is terminal and last written at least older_than ago, or open,
-- empty and without a runs row (a reader's run_log_watch made it) and made
-- at least older_than ago.  Any other open log is kept; run
-- records are never deleted.  At most max_logs (NULL: no limit), oldest
-- first; logs another transaction has locked are skipped.
CREATE FUNCTION sandbox_store.run_log_prune(
    older_than pg_catalog.interval,
    max_logs pg_catalog.int4 DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    cutoff pg_catalog.timestamptz;
    pruned pg_catalog.int8;
    candidates pg_catalog.text[];
    v_run pg_catalog.text;
    v_batch pg_catalog.int4;
    v_last_touched pg_catalog.timestamptz;
    v_last_run pg_catalog.text;
BEGIN
    IF run_log_prune.older_than IS NULL OR run_log_prune.older_than < '0'::pg_catalog.interval
       OR NOT isfinite(run_log_prune.older_than) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid older_than',
            format('older_than is a finite interval, 0 or more; the value given is %s.',
                   COALESCE(run_log_prune.older_than::pg_catalog.text, 'missing')));
    END IF;
    IF run_log_prune.max_logs < 0 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid max_logs',
            format('max_logs is 0 or more, or NULL for no limit; the value given is %s.', run_log_prune.max_logs));
    END IF;
    cutoff := clock_timestamp() - run_log_prune.older_than;
    -- Two steps, so that no statement locks rows of more than one run (Citus
    -- cannot lock rows across shards): the logs last touched at the cutoff
    -- or before, oldest first, read without a lock, a batch at a time (as
    -- many as max_logs, at most 100000, each batch after the last one read);
    -- then each one locked if no other transaction holds it, checked against
    -- the rules above and deleted with its entries, in one statement on its
    -- own run, until max_logs are gone or no candidate is left.
    pruned := 0;
    v_batch := LEAST(COALESCE(run_log_prune.max_logs, 100000), 100000);
    WHILE v_batch OPERATOR(pg_catalog.>) 0
          AND (run_log_prune.max_logs IS NULL OR pruned OPERATOR(pg_catalog.<) run_log_prune.max_logs) LOOP
        SELECT pg_catalog.array_agg(c.run_id ORDER BY c.touched, c.run_id COLLATE "C"),
               (pg_catalog.array_agg(c.touched ORDER BY c.touched DESC, c.run_id COLLATE "C" DESC))[1],
               (pg_catalog.array_agg(c.run_id ORDER BY c.touched DESC, c.run_id COLLATE "C" DESC))[1]
          INTO candidates, v_last_touched, v_last_run
          FROM (SELECT l.run_id, COALESCE(l.closed_at, l.updated_at) AS touched
                  FROM ONLY sandbox_store.run_logs l
                 WHERE COALESCE(l.closed_at, l.updated_at) OPERATOR(pg_catalog.<=) cutoff
                   AND (v_last_touched IS NULL
                        OR COALESCE(l.closed_at, l.updated_at) OPERATOR(pg_catalog.>) v_last_touched
                        OR (COALESCE(l.closed_at, l.updated_at) OPERATOR(pg_catalog.=) v_last_touched
                            AND l.run_id COLLATE "C" OPERATOR(pg_catalog.>) v_last_run COLLATE "C"))
                 ORDER BY COALESCE(l.closed_at, l.updated_at), l.run_id COLLATE "C"
                 LIMIT v_batch) c;
        EXIT WHEN candidates IS NULL;
        FOREACH v_run IN ARRAY candidates LOOP
            EXIT WHEN pruned OPERATOR(pg_catalog.>=) run_log_prune.max_logs;
            WITH victim AS (
                SELECT l.run_id FROM ONLY sandbox_store.run_logs l
                 WHERE l.run_id OPERATOR(pg_catalog.=) v_run
                   AND ((l.closed_at IS NOT NULL AND l.closed_at OPERATOR(pg_catalog.<=) cutoff)
                     OR (l.closed_at IS NULL AND l.updated_at OPERATOR(pg_catalog.<=) cutoff
                         AND EXISTS (SELECT FROM ONLY sandbox_store.runs r
                                      WHERE r.run_id OPERATOR(pg_catalog.=) v_run
                                        AND sandbox_store_internal._run_finished(r.status)))
                     OR (l.closed_at IS NULL AND l.last_seq OPERATOR(pg_catalog.=) 0
                         AND l.updated_at OPERATOR(pg_catalog.<=) cutoff
                         AND NOT EXISTS (SELECT FROM ONLY sandbox_store.runs r
                                          WHERE r.run_id OPERATOR(pg_catalog.=) v_run)))
                   FOR UPDATE OF l SKIP LOCKED
            ), entries AS (
                DELETE FROM ONLY sandbox_store.run_log_entries e USING victim v
                 WHERE e.run_id OPERATOR(pg_catalog.=) v_run AND e.run_id OPERATOR(pg_catalog.=) v.run_id
            ), logs AS (
                DELETE FROM ONLY sandbox_store.run_logs l USING victim v
                 WHERE l.run_id OPERATOR(pg_catalog.=) v_run AND l.run_id OPERATOR(pg_catalog.=) v.run_id
                RETURNING l.run_id
            )
            SELECT pruned OPERATOR(pg_catalog.+) count(*) INTO pruned FROM logs;
        END LOOP;
        EXIT WHEN pg_catalog.cardinality(candidates) OPERATOR(pg_catalog.<) v_batch;
    END LOOP;
    RETURN pruned;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_prune(pg_catalog.interval, pg_catalog.int4) IS
'Delete the run logs (log and entries) that are finished and quiet: closed at least older_than ago, or open, of a run whose status is completed, failed or aborted, and last written at least older_than ago, or open, empty and of no run record (made by a reader) at least older_than ago. Any other open log is kept; run records are never deleted. At most max_logs (NULL: no limit), oldest first, skipping logs another transaction holds. Returns how many were deleted.';

-- The entries of the log of run_id after seq after, in seq order, at most
-- max_rows of them (NULL: all).  Never waits for a writer.
CREATE FUNCTION sandbox_store.run_log_read(
    run_id pg_catalog.text,
    after pg_catalog.int8 DEFAULT 0,
    max_rows pg_catalog.int4 DEFAULT NULL)
RETURNS TABLE (seq pg_catalog.int8, chunk pg_catalog.jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_read.run_id, 'run id', 1024);
    IF run_log_read.after IS NULL OR run_log_read.after < 0 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid after',
            format('after is a seq, 0 or more (0: from the start); the value given is %s.',
                   COALESCE(run_log_read.after::pg_catalog.text, 'missing')));
    END IF;
    IF run_log_read.max_rows < 0 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid max_rows',
            format('max_rows is 0 or more, or NULL for all; the value given is %s.', run_log_read.max_rows));
    END IF;
    RETURN QUERY
        SELECT e.seq, e.chunk FROM ONLY sandbox_store.run_log_entries e
         WHERE e.run_id OPERATOR(pg_catalog.=) run_log_read.run_id
           AND e.seq OPERATOR(pg_catalog.>) run_log_read.after
         ORDER BY e.seq
         LIMIT run_log_read.max_rows;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_read(pg_catalog.text, pg_catalog.int8, pg_catalog.int4) IS
'The entries of the run''s log with seq above after, in seq order, at most max_rows (NULL: all). Never waits for a writer.';

-- The tail of the log of run_id and whether it is closed; no row without a
-- log.
CREATE FUNCTION sandbox_store.run_log_status(run_id pg_catalog.text)
RETURNS TABLE (last_seq pg_catalog.int8, closed pg_catalog.bool)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_status.run_id, 'run id', 1024);
    RETURN QUERY
        SELECT l.last_seq, l.closed_at IS NOT NULL FROM ONLY sandbox_store.run_logs l
         WHERE l.run_id OPERATOR(pg_catalog.=) run_log_status.run_id;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_status(pg_catalog.text) IS
'The greatest seq stored in the run''s log (0: none) and whether the log is closed: one row, or none when the run has no log.';

-- Write entries at given seqs: seqs[i] pairs with chunks -> (i - 1).  A seq
-- already stored is replaced; a new one must come after the tail and after
-- every preceding new seq of the batch; none may repeat (SBR03, the whole
-- batch checked before anything is written).
CREATE FUNCTION sandbox_store.run_log_upsert(
    run_id pg_catalog.text,
    seqs pg_catalog.int8[],
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.int8[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    n pg_catalog.int8;
    objects pg_catalog.bool;
    bad pg_catalog.int8;
    v_last pg_catalog.int8;
    v_closed pg_catalog.timestamptz;
    v_status pg_catalog.text;
    v_watched pg_catalog.bool;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_upsert.run_id, 'run id', 1024);
    IF jsonb_typeof(run_log_upsert.chunks) IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            format('chunks is a JSON array of JSON objects; the value given is %s.',
                   COALESCE(jsonb_typeof(run_log_upsert.chunks), 'missing')));
    END IF;
    SELECT count(*), COALESCE(bool_and(jsonb_typeof(c) OPERATOR(pg_catalog.=) 'object'), true)
      INTO n, objects
      FROM jsonb_array_elements(run_log_upsert.chunks) c;
    IF NOT objects THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            'chunks is a JSON array of JSON objects; an element is not an object.');
    END IF;
    IF run_log_upsert.seqs IS NULL OR COALESCE(cardinality(run_log_upsert.seqs), 0) <> n THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid seqs',
            format('seqs pairs one seq with each chunk: %s seqs were given for %s chunks.',
                   COALESCE(cardinality(run_log_upsert.seqs)::pg_catalog.text, 'no'), n));
    END IF;
    -- (at most 2^53 - 1: an offset's position is a JavaScript number, and
    -- the log's tail must stay far from bigint's end, or no append could
    -- follow)
    IF EXISTS (SELECT FROM unnest(run_log_upsert.seqs) s
                WHERE s IS NULL OR s OPERATOR(pg_catalog.<) 1 OR s OPERATOR(pg_catalog.>) 9007199254740991) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid seqs',
            'A seq is a whole number from 1 to 9007199254740991; seqs has a NULL, a smaller or a larger one.');
    END IF;
    IF run_log_upsert.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_upsert.epoch));
    END IF;
    IF n = 0 THEN
        PERFORM sandbox_store_internal._run_fence(run_log_upsert.run_id, run_log_upsert.epoch);
        RETURN '{}'::pg_catalog.int8[];
    END IF;

    -- The log row, locked (its last_seq as it was), then the fence.
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_upsert.run_id, 0, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = EXCLUDED.updated_at
    RETURNING l.last_seq, l.closed_at, l.watched INTO v_last, v_closed, v_watched;
    v_status := sandbox_store_internal._run_fence(run_log_upsert.run_id, run_log_upsert.epoch);
    IF v_closed IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('the log of run %s is closed', to_jsonb(run_log_upsert.run_id)),
            'A closed log takes no more entries.  Nothing was changed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_log_upsert.run_id)),
            format('Its status is %s: its log takes no more entries.  Nothing was changed.', v_status));
    END IF;

    SELECT s INTO bad FROM unnest(run_log_upsert.seqs) s GROUP BY s HAVING count(*) OPERATOR(pg_catalog.>) 1
     ORDER BY s LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR03', 'invalid log offset',
            format('Seq %s is repeated in the batch; each may appear once.  Nothing was changed.', bad));
    END IF;
    -- A seq not stored must be above the tail and above every preceding new
    -- seq of the batch.
    SELECT y.s INTO bad FROM (
        SELECT x.i, x.s, x.stored,
               max(x.s) FILTER (WHERE NOT x.stored)
                   OVER (ORDER BY x.i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_it
          FROM (SELECT u.i, u.s,
                       EXISTS (SELECT FROM ONLY sandbox_store.run_log_entries e
                                WHERE e.run_id OPERATOR(pg_catalog.=) run_log_upsert.run_id
                                  AND e.seq OPERATOR(pg_catalog.=) u.s) AS stored
                  FROM unnest(run_log_upsert.seqs) WITH ORDINALITY u(s, i)) x) y
     WHERE NOT y.stored AND y.s OPERATOR(pg_catalog.<=) GREATEST(v_last, y.before_it)
     ORDER BY y.i LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR03', 'invalid log offset',
            format('Seq %s is not stored, and it is not after the tail (%s) and every preceding new seq of the batch.  Nothing was changed.',
                   bad, v_last));
    END IF;

    INSERT INTO sandbox_store.run_log_entries AS e (run_id, seq, chunk)
    SELECT run_log_upsert.run_id, x.s, x.c
      FROM ROWS FROM (unnest(run_log_upsert.seqs), jsonb_array_elements(run_log_upsert.chunks)) x(s, c)
    ON CONFLICT ON CONSTRAINT run_log_entries_pkey DO UPDATE SET chunk = EXCLUDED.chunk;
    UPDATE ONLY sandbox_store.run_logs l
       SET last_seq = GREATEST(l.last_seq, (SELECT max(s) FROM unnest(run_log_upsert.seqs) s))
     WHERE l.run_id OPERATOR(pg_catalog.=) run_log_upsert.run_id;
    IF v_watched THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_upsert.run_id);
    END IF;
    RETURN run_log_upsert.seqs;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_upsert(pg_catalog.text, pg_catalog.int8[], pg_catalog.jsonb, pg_catalog.int8) IS
'Write chunks at the given seqs of the run''s log (seqs[i] with the i-th chunk) and return the seqs: a seq already stored is replaced, a new one must come after the tail and every preceding new seq of the batch, and none may repeat (SBR03; the whole batch is checked before anything is written). Fenced and refused like run_log_append; notifies channel sandbox_store_run_log if a reader watches the log (run_log_watch).';

-- Wake the readers of logs written with notify false, after the writes
-- committed: notify channel sandbox_store_run_log once for each given run
-- whose log is watched, and return how many were notified.  The read needs
-- no lock: at READ COMMITTED its snapshot is taken after the writes
-- committed (before this call), so a reader's run_log_watch that it does
-- not see commits after them, and the reader's first read after that sees
-- them.  At REPEATABLE READ or SERIALIZABLE the transaction's snapshot may
-- be older than the writes and the mark: every run named is notified,
-- watched or not (a reader ignores a wake it did not need; it must never
-- miss one).
CREATE FUNCTION sandbox_store.run_log_wake(VARIADIC run_ids pg_catalog.text[])
RETURNS pg_catalog.int4
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    v_id pg_catalog.text;
    n pg_catalog.int4 := 0;
BEGIN
    IF run_log_wake.run_ids IS NULL THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid run ids',
            'run_ids is an array of run ids; the value given is missing.');
    END IF;
    FOREACH v_id IN ARRAY run_log_wake.run_ids LOOP
        PERFORM sandbox_store_internal._check_id('22023', v_id, 'run id', 1024);
    END LOOP;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        FOR v_id IN SELECT DISTINCT u.id FROM unnest(run_log_wake.run_ids) AS u(id) LOOP
            PERFORM pg_notify('sandbox_store_run_log', v_id);
            n := n + 1;
        END LOOP;
        RETURN n;
    END IF;
    FOR v_id IN
        SELECT l.run_id
          FROM ONLY sandbox_store.run_logs l
         WHERE l.run_id OPERATOR(pg_catalog.=) ANY (run_log_wake.run_ids)
           AND l.watched
    LOOP
        PERFORM pg_notify('sandbox_store_run_log', v_id);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_wake(pg_catalog.text[]) IS
'Wake the readers of the given runs'' logs after writes made with notify false committed: notifies channel sandbox_store_run_log with each run id whose log a reader watches (run_log_watch), and returns how many; at REPEATABLE READ or SERIALIZABLE, every run id given (the snapshot may predate the writes). Call it after the commit, never in the writing transaction (there it would notify at the same commit and gain nothing).';

-- A reader's start: mark the log of run_id watched (making an open, empty
-- log if it has none) and return its tail and whether it is closed, as
-- run_log_status does.  The reader LISTENs on sandbox_store_run_log first:
-- the mark is made under the log row's lock, so every write that commits
-- after it sees the mark and notifies, and every write before it had
-- committed, and is read, when this returns.
CREATE FUNCTION sandbox_store.run_log_watch(run_id pg_catalog.text)
RETURNS TABLE (last_seq pg_catalog.int8, closed pg_catalog.bool)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_log_watch.run_id, 'run id', 1024);
    RETURN QUERY
        INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at, watched)
        VALUES (run_log_watch.run_id, 0, clock_timestamp(), true)
        ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET watched = true
        RETURNING l.last_seq, l.closed_at IS NOT NULL;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_log_watch(pg_catalog.text) IS
'Start reading the run''s log: mark it watched (an open, empty log is made if it has none) and return its greatest seq (0: none) and whether it is closed. From then on every write of the log notifies channel sandbox_store_run_log with the run id; LISTEN on it before calling this, and no write is missed.';

-- RunStore.update: apply a patch of RunRecord fields (camelCase keys; a key
-- with JSON null clears its field, an absent key leaves it).  With epoch,
-- the run's driver_epoch must be epoch (SB001 otherwise).  driverEpoch in
-- the patch may clear the epoch (null), keep it (the current value) or
-- raise it above every epoch the run had (max_driver_epoch: a claim, made
-- durable); any other value could let a superseded driver write again
-- (SB001).  It takes the run's log row lock first, as run_claim and every
-- log write do, so the calls of one run always lock in one order (no two
-- deadlock, even several in one transaction), a log write in flight
-- commits before a finish or a raise of driverEpoch, and every later one
-- sees it.  False for an unknown run, true otherwise.
CREATE FUNCTION sandbox_store.run_update(
    run_id pg_catalog.text,
    patch pg_catalog.jsonb,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    bad pg_catalog.text;
    v_finished pg_catalog.float8;
    v_detached pg_catalog.float8;
    v_driver pg_catalog.int8;
    v_current pg_catalog.int8;
    v_highest pg_catalog.int8;
BEGIN
    PERFORM sandbox_store_internal._check_id('22023', run_update.run_id, 'run id', 1024);
    IF jsonb_typeof(run_update.patch) IS DISTINCT FROM 'object' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid run patch',
            format('A patch is a JSON object; the value given is %s.',
                   COALESCE(jsonb_typeof(run_update.patch), 'missing')));
    END IF;
    SELECT k INTO bad FROM jsonb_object_keys(run_update.patch) k
     WHERE k OPERATOR(pg_catalog.<>) ALL (ARRAY['status', 'finishedAt', 'error', 'usage', 'sandboxKey',
                                               'detachedSince', 'cancelRequested', 'driverEpoch'])
     ORDER BY k COLLATE "C" LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('22023', format('invalid patch key %s', to_jsonb(bad)),
            'A patch has the keys status, finishedAt, error, usage, sandboxKey, detachedSince, cancelRequested and driverEpoch.');
    END IF;
    IF run_update.patch ? 'status'
       AND (jsonb_typeof(run_update.patch -> 'status') IS DISTINCT FROM 'string'
            OR (run_update.patch ->> 'status' NOT IN ('running', 'interrupted')
                AND NOT sandbox_store_internal._run_finished(run_update.patch ->> 'status'))) THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid patch key status',
            format('A status is running, interrupted, completed, failed or aborted, and cannot be cleared; the value given is %s.',
                   run_update.patch -> 'status'));
    END IF;
    IF run_update.patch ? 'finishedAt' THEN
        v_finished := sandbox_store_internal._run_patch_number(run_update.patch, 'finishedAt');
    END IF;
    IF run_update.patch ? 'detachedSince' THEN
        v_detached := sandbox_store_internal._run_patch_number(run_update.patch, 'detachedSince');
    END IF;
    SELECT k INTO bad FROM (VALUES ('error'), ('usage')) v(k)
     WHERE run_update.patch ? k AND jsonb_typeof(run_update.patch -> k) NOT IN ('object', 'null')
     LIMIT 1;
    IF bad IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('22023', format('invalid patch key %s', bad),
            format('%s is a JSON object or null; the value given is %s.', bad, run_update.patch -> bad));
    END IF;
    IF run_update.patch ? 'sandboxKey' AND jsonb_typeof(run_update.patch -> 'sandboxKey') NOT IN ('string', 'null') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid patch key sandboxKey',
            format('sandboxKey is a string or null; the value given is %s.', run_update.patch -> 'sandboxKey'));
    END IF;
    IF run_update.patch ? 'cancelRequested' AND jsonb_typeof(run_update.patch -> 'cancelRequested') NOT IN ('boolean', 'null') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid patch key cancelRequested',
            format('cancelRequested is true, false or null; the value given is %s.', run_update.patch -> 'cancelRequested'));
    END IF;
    IF run_update.patch ? 'driverEpoch' AND jsonb_typeof(run_update.patch -> 'driverEpoch') <> 'null' THEN
        -- (at most 2^53 - 1: the client holds an epoch in a JavaScript number)
        IF jsonb_typeof(run_update.patch -> 'driverEpoch') IS DISTINCT FROM 'number'
           OR run_update.patch ->> 'driverEpoch' !~ '^[0-9]{1,16}$'
           OR (run_update.patch ->> 'driverEpoch')::pg_catalog.int8 NOT BETWEEN 1 AND 9007199254740991 THEN
            PERFORM sandbox_store_internal._raise('22023', 'invalid patch key driverEpoch',
                format('driverEpoch is a whole number from 1 to 9007199254740991; the value given is %s.', run_update.patch -> 'driverEpoch'));
        END IF;
        v_driver := (run_update.patch ->> 'driverEpoch')::pg_catalog.int8;
    END IF;
    IF run_update.epoch IS NOT NULL AND run_update.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_update.epoch));
    END IF;

    -- The log row's lock first, as run_claim takes it (only when the run
    -- exists: an unknown run is left alone): a patch that sets or clears
    -- driverEpoch is a claim or ends the driver's writes, and one that
    -- finishes the run ends every driver's writes, so each waits for the
    -- log write in flight; any other patch takes it too, so that the locks
    -- of one run are always taken log row first.
    -- (Those that end writes write a new version of the log row, as
    -- run_claim does: a log writer at REPEATABLE READ whose snapshot
    -- predates their commit then fails its upsert of the row (40001)
    -- instead of reading the runs row as its snapshot has it.  The others
    -- take a row lock of the log row when it exists, no new row version;
    -- the upsert, which waits for a first append's insert in flight, when
    -- it does not.)
    IF EXISTS (
        SELECT FROM ONLY sandbox_store.runs r WHERE r.run_id OPERATOR(pg_catalog.=) run_update.run_id) THEN
        IF run_update.patch ? 'driverEpoch'
           OR sandbox_store_internal._run_finished(run_update.patch ->> 'status') THEN
            INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
            VALUES (run_update.run_id, 0, clock_timestamp())
            ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at;
        ELSE
            PERFORM FROM ONLY sandbox_store.run_logs l WHERE l.run_id OPERATOR(pg_catalog.=) run_update.run_id FOR UPDATE;
            IF NOT FOUND THEN
                INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
                VALUES (run_update.run_id, 0, clock_timestamp())
                ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE SET updated_at = l.updated_at;
            END IF;
        END IF;
    END IF;
    SELECT r.driver_epoch, r.max_driver_epoch INTO v_current, v_highest FROM ONLY sandbox_store.runs r
     WHERE r.run_id OPERATOR(pg_catalog.=) run_update.run_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF run_update.epoch IS NOT NULL AND v_current IS DISTINCT FROM run_update.epoch THEN
        PERFORM sandbox_store_internal._run_stale(run_update.run_id, run_update.epoch, v_current, v_highest, true);
    END IF;
    -- driverEpoch: null clears it (the highest is kept), the current value
    -- keeps it, a value above every epoch the run had raises it; a value at
    -- or below the highest, other than the current one, is refused.
    IF v_driver IS DISTINCT FROM v_current AND v_driver <= COALESCE(v_highest, 0) THEN
        PERFORM sandbox_store_internal._raise('SB001',
            format('the driver epoch of run %s is not current', to_jsonb(run_update.run_id)),
            format('The patch sets %s as driverEpoch, and %s: a driverEpoch other than the current one must be above every epoch the run had.  Nothing was changed.',
                   v_driver,
                   CASE WHEN v_current IS NULL
                        THEN format('the run has no current epoch (it was cleared; the highest it had is %s)', v_highest)
                        ELSE format('the current epoch is %s', v_current) END));
    END IF;
    IF v_driver > COALESCE(v_highest, 0) THEN
        PERFORM sandbox_store_internal._run_durable();
    END IF;

    UPDATE ONLY sandbox_store.runs r SET
        status = CASE WHEN run_update.patch ? 'status' THEN run_update.patch ->> 'status' ELSE r.status END,
        finished_at = CASE WHEN run_update.patch ? 'finishedAt' THEN v_finished ELSE r.finished_at END,
        error = CASE WHEN run_update.patch ? 'error'
                     THEN NULLIF(run_update.patch -> 'error', 'null'::pg_catalog.jsonb) ELSE r.error END,
        usage = CASE WHEN run_update.patch ? 'usage'
                     THEN NULLIF(run_update.patch -> 'usage', 'null'::pg_catalog.jsonb) ELSE r.usage END,
        sandbox_key = CASE WHEN run_update.patch ? 'sandboxKey' THEN run_update.patch ->> 'sandboxKey' ELSE r.sandbox_key END,
        detached_since = CASE WHEN run_update.patch ? 'detachedSince' THEN v_detached ELSE r.detached_since END,
        cancel_requested = CASE WHEN run_update.patch ? 'cancelRequested'
                                THEN (run_update.patch ->> 'cancelRequested')::pg_catalog.bool ELSE r.cancel_requested END,
        driver_epoch = CASE WHEN run_update.patch ? 'driverEpoch' THEN v_driver ELSE r.driver_epoch END,
        max_driver_epoch = GREATEST(r.max_driver_epoch, v_driver)
     WHERE r.run_id OPERATOR(pg_catalog.=) run_update.run_id;
    RETURN true;
END
$$;

COMMENT ON FUNCTION sandbox_store.run_update(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8) IS
'Apply a patch of RunRecord fields to the run (status, finishedAt, error, usage, sandboxKey, detachedSince, cancelRequested, driverEpoch; a key with null clears its field, except status): false for an unknown run, true otherwise. With epoch: refused (SB001, nothing changed) unless it is the run''s current driver epoch. A driverEpoch in the patch may clear the epoch (null), keep it, or raise it above every epoch the run had; any other value is refused (SB001).';


-- The SQL edition's run_log_append (the C edition's is C: src/run_log.c,
-- the same checks, order and messages; its comment is in comments.sql).
-- The hot path: append chunks to the log of run_id as its next entries, in
-- few statements: the log row's upsert (which locks it: appenders of one
-- run are serialized and commit in seq order) returning the seq before them
-- and whether a reader watches the log, the fence (a plain read of the runs
-- row), one INSERT ... SELECT of the entries, and a notification if so
-- and notify is true (1.7.0; false: the caller wakes the readers with
-- run_log_wake after the commit).  src/sql/build.sh makes the form
-- without notify from this text (part sql-edition/run_log.run_log_append-3):
-- keep the notify argument's lines as they are, or its build fails.
CREATE FUNCTION sandbox_store.run_log_append(
    run_id pg_catalog.text,
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8,
    notify pg_catalog.bool)
RETURNS pg_catalog.int8[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    n pg_catalog.int8;
    v_last pg_catalog.int8;
    v_closed pg_catalog.timestamptz;
    v_status pg_catalog.text;
    v_watched pg_catalog.bool;
    v_seqs pg_catalog.int8[];
BEGIN
    -- (the checks are simple expressions, which PL/pgSQL evaluates without
    -- running a query)
    IF run_log_append.run_id IS NULL OR octet_length(run_log_append.run_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._check_id('22023', run_log_append.run_id, 'run id', 1024);
    END IF;
    IF jsonb_typeof(run_log_append.chunks) IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            format('chunks is a JSON array of JSON objects; the value given is %s.',
                   COALESCE(jsonb_typeof(run_log_append.chunks), 'missing')));
    END IF;
    -- (strict: in lax mode a nested array is unwrapped, and its elements
    -- would be checked instead of the array itself)
    IF jsonb_path_exists(run_log_append.chunks, 'strict $[*] ? (@.type() != "object")') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            'chunks is a JSON array of JSON objects; an element is not an object.');
    END IF;
    IF run_log_append.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_append.epoch));
    END IF;
    IF run_log_append.notify IS NULL THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid notify',
            'notify is true (a watched log''s append notifies when it commits) or false (the caller wakes the readers with run_log_wake after the commit); the value given is missing.');
    END IF;
    n := jsonb_array_length(run_log_append.chunks);
    IF n = 0 THEN
        PERFORM sandbox_store_internal._run_fence(run_log_append.run_id, run_log_append.epoch);
        RETURN '{}'::pg_catalog.int8[];
    END IF;

    -- The log row, locked, its tail moved past the new entries (appenders
    -- of one run are serialized here, and so is run_claim, which takes
    -- this lock before it raises the epoch).
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_append.run_id, n, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE
       SET last_seq = l.last_seq OPERATOR(pg_catalog.+) EXCLUDED.last_seq, updated_at = EXCLUDED.updated_at
    RETURNING l.last_seq OPERATOR(pg_catalog.-) n, l.closed_at, l.watched INTO v_last, v_closed, v_watched;

    -- The fence, read after the lock: a claim committed before it is seen,
    -- one after it waited for this transaction.
    v_status := sandbox_store_internal._run_fence(run_log_append.run_id, run_log_append.epoch);
    IF v_closed IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('the log of run %s is closed', to_jsonb(run_log_append.run_id)),
            'A closed log takes no more entries.  Nothing was changed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_log_append.run_id)),
            format('Its status is %s: its log takes no more entries.  Nothing was changed.', v_status));
    END IF;
    IF v_last > 9007199254740991 - n THEN
        PERFORM sandbox_store_internal._run_log_full(run_log_append.run_id, v_last, n);
    END IF;

    -- The entries; their seqs, the result, are counted (cheaper than
    -- returning them from the insert and aggregating them).
    INSERT INTO sandbox_store.run_log_entries (run_id, seq, chunk)
    SELECT run_log_append.run_id, v_last OPERATOR(pg_catalog.+) x.i, x.c
      FROM jsonb_array_elements(run_log_append.chunks) WITH ORDINALITY x(c, i);
    v_seqs := '{}';
    FOR i IN 1 .. n LOOP
        v_seqs[i] := v_last + i;
    END LOOP;
    IF v_watched AND run_log_append.notify THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_append.run_id);
    END IF;
    RETURN v_seqs;
END
$$;

-- The SQL edition's run_log_append without notify (before 1.7.0 its
-- only form), made by src/sql/build.sh from
-- sql-edition/run_log.run_log_append.sql: the form with notify, with
-- notify true (a watched log's append notifies at its commit).  Its
-- comment is in shared/comments.sql.
CREATE FUNCTION sandbox_store.run_log_append(
    run_id pg_catalog.text,
    chunks pg_catalog.jsonb,
    epoch pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.int8[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET row_security = off
SET enable_seqscan = off
SET enable_indexscan = on
AS $$
DECLARE
    n pg_catalog.int8;
    v_last pg_catalog.int8;
    v_closed pg_catalog.timestamptz;
    v_status pg_catalog.text;
    v_watched pg_catalog.bool;
    v_seqs pg_catalog.int8[];
BEGIN
    -- (the checks are simple expressions, which PL/pgSQL evaluates without
    -- running a query)
    IF run_log_append.run_id IS NULL OR octet_length(run_log_append.run_id) NOT BETWEEN 1 AND 1024 THEN
        PERFORM sandbox_store_internal._check_id('22023', run_log_append.run_id, 'run id', 1024);
    END IF;
    IF jsonb_typeof(run_log_append.chunks) IS DISTINCT FROM 'array' THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            format('chunks is a JSON array of JSON objects; the value given is %s.',
                   COALESCE(jsonb_typeof(run_log_append.chunks), 'missing')));
    END IF;
    -- (strict: in lax mode a nested array is unwrapped, and its elements
    -- would be checked instead of the array itself)
    IF jsonb_path_exists(run_log_append.chunks, 'strict $[*] ? (@.type() != "object")') THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid chunks',
            'chunks is a JSON array of JSON objects; an element is not an object.');
    END IF;
    IF run_log_append.epoch < 1 THEN
        PERFORM sandbox_store_internal._raise('22023', 'invalid epoch',
            format('An epoch is 1 or more (run_claim returns it); the value given is %s.', run_log_append.epoch));
    END IF;
    n := jsonb_array_length(run_log_append.chunks);
    IF n = 0 THEN
        PERFORM sandbox_store_internal._run_fence(run_log_append.run_id, run_log_append.epoch);
        RETURN '{}'::pg_catalog.int8[];
    END IF;

    -- The log row, locked, its tail moved past the new entries (appenders
    -- of one run are serialized here, and so is run_claim, which takes
    -- this lock before it raises the epoch).
    INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)
    VALUES (run_log_append.run_id, n, clock_timestamp())
    ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE
       SET last_seq = l.last_seq OPERATOR(pg_catalog.+) EXCLUDED.last_seq, updated_at = EXCLUDED.updated_at
    RETURNING l.last_seq OPERATOR(pg_catalog.-) n, l.closed_at, l.watched INTO v_last, v_closed, v_watched;

    -- The fence, read after the lock: a claim committed before it is seen,
    -- one after it waited for this transaction.
    v_status := sandbox_store_internal._run_fence(run_log_append.run_id, run_log_append.epoch);
    IF v_closed IS NOT NULL THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('the log of run %s is closed', to_jsonb(run_log_append.run_id)),
            'A closed log takes no more entries.  Nothing was changed.');
    END IF;
    IF sandbox_store_internal._run_finished(v_status) THEN
        PERFORM sandbox_store_internal._raise('SBR02', format('run %s is finished', to_jsonb(run_log_append.run_id)),
            format('Its status is %s: its log takes no more entries.  Nothing was changed.', v_status));
    END IF;
    IF v_last > 9007199254740991 - n THEN
        PERFORM sandbox_store_internal._run_log_full(run_log_append.run_id, v_last, n);
    END IF;

    -- The entries; their seqs, the result, are counted (cheaper than
    -- returning them from the insert and aggregating them).
    INSERT INTO sandbox_store.run_log_entries (run_id, seq, chunk)
    SELECT run_log_append.run_id, v_last OPERATOR(pg_catalog.+) x.i, x.c
      FROM jsonb_array_elements(run_log_append.chunks) WITH ORDINALITY x(c, i);
    v_seqs := '{}';
    FOR i IN 1 .. n LOOP
        v_seqs[i] := v_last + i;
    END LOOP;
    IF v_watched THEN
        PERFORM pg_notify('sandbox_store_run_log', run_log_append.run_id);
    END IF;
    RETURN v_seqs;
END
$$;

-- Comments of the interface functions (both editions).

COMMENT ON FUNCTION sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8) IS
'Insert or fully replace the record of key; optional fields passed as NULL (or omitted) clear what was stored. With fence: refused (SB001, nothing changed) if the key has been claimed with a newer fence. Returns the stored record.';

COMMENT ON FUNCTION sandbox_store.sandbox_upsert_release(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz) IS
'The claim holder''s last write: sandbox_upsert with fence, which also ends the claim the fence was given with, in the same transaction. Refused (SB001, nothing changed) if the key has been claimed with a newer fence. Returns the stored record.';

COMMENT ON FUNCTION sandbox_store.sandbox_get(pg_catalog.text) IS
'The record of key: one row, or none when there is no record.';

COMMENT ON FUNCTION sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8) IS
'Delete the record of key under the key''s lock (waits for an ensure or a claim in flight). With fence: the claim holder''s delete, refused (SB001) if the key has been claimed with a newer fence. True if a record was removed, false if there was none.';

COMMENT ON FUNCTION sandbox_store.sandbox_list(pg_catalog.text) IS
'The records of a thread, most recently updated first.';

COMMENT ON FUNCTION sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take the key (wait: NULL = as lock_timeout allows, 0 = no wait, else at most that long; 55P03 if not obtained), then return one row: create (no record), resume (fresh record, stamped with run_id and now()) or recreate (the old record: older than max_age or of another provider). Lock mode (lease NULL): the key''s lock is held until the transaction ends. Lease mode: the row also carries a claim (fence, owner_token, lease_expires_at) that holds the key until released or expired.';

COMMENT ON FUNCTION sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval) IS
'Take the key''s lock until the transaction ends (the lock sandbox_ensure takes). wait as for sandbox_ensure; 55P03 if not obtained.';

COMMENT ON FUNCTION sandbox_store.sandbox_try_lock(pg_catalog.text) IS
'Take the key''s lock until the transaction ends if it is free now: true if taken (or already held), false if another transaction holds it.';

COMMENT ON FUNCTION sandbox_store.sandbox_lock_id(pg_catalog.text) IS
'The 64-bit id of the key''s lock (FNV-1a of its bytes; stable forever): lock_id of the view key_locks, which lists who holds and who waits for each key''s lock. pg_locks shows it as classid (high 32 bits) and objid (low 32 bits) of an advisory lock.';

COMMENT ON FUNCTION sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'Take a claim on key for lease, and nothing else (lease mode''s lock for any critical section): waits for the key like sandbox_ensure (wait; 55P03 if not obtained) and returns fence, owner_token and lease_expires_at.';

COMMENT ON FUNCTION sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval) IS
'Extend the claim of owner_token on key to now + lease (server clock) and return the new expiry; SB001 if the claim was released or taken over.';

COMMENT ON FUNCTION sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid) IS
'End the claim of owner_token on key: true if it held the key''s claim, false for a stale token (which never ends its successor''s claim).';

COMMENT ON FUNCTION sandbox_store.sandbox_reap(pg_catalog.interval, pg_catalog.int4) IS
'Delete and return, oldest first, at most max_rows records idle longer than idle_for whose key is neither locked nor claimed (busy keys are skipped, never waited for; concurrent reapers never return the same record). The app destroys the returned sandboxes.';

COMMENT ON FUNCTION sandbox_store.sandbox_lock_holder(pg_catalog.text) IS
'The pid of the backend whose transaction holds the key''s lock, or NULL. Claims have no backend: see the view sandbox_store.claims.';

COMMENT ON FUNCTION sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8) IS
'Append chunks (a JSON array of JSON objects) to the run''s log as its next entries and return their seqs, in order; the log is created by its first write. Fenced like every log write (SB001 for a stale epoch, or none once a driver claimed the run); SBR02 if the log is closed or the run finished. Notifies channel sandbox_store_run_log with the run id if a reader watches the log (run_log_watch).';

COMMENT ON FUNCTION sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8, pg_catalog.bool) IS
'run_log_append with notify: true, as without it; false, a watched log''s append does not notify when it commits, and the caller wakes its readers with run_log_wake after the commit (a notifying commit waits for every other one in the server, its WAL flush included). NULL is refused (22023).';

-- On citus: distribute the sandbox tables by key and the run tables by run
-- id, all colocated, and send every single-key and single-run function to
-- the node that holds its shard.  Run once, on the coordinator, as a
-- superuser; running it again distributes what is not distributed yet (the
-- run tables of a cluster that an older distribute() left local) and
-- changes nothing else.
--
-- The run tables go by run id, not by thread: every run function but the
-- listings names a run and no thread, so a run id is what routes a call.
-- A table's rows are moved to its shards when it is distributed; the run
-- functions that write a run's log notify on the node they run on, so the
-- ones that notify at commit (the 3-argument run_log_append, run_log_close,
-- run_log_upsert) are not delegated: their notification reaches readers
-- connected to the node that was called.
CREATE FUNCTION sandbox_store.distribute()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn pg_catalog.regprocedure;
    rel pg_catalog.regclass;
    failed pg_catalog.text;
    local_runs pg_catalog.regclass[];
    key_to_text constant pg_catalog.text :=
        'ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE pg_catalog.text,'
        ' ADD CONSTRAINT instances_key_length'
        ' CHECK (pg_catalog.octet_length(key) OPERATOR(pg_catalog.>=) 1'
        ' AND pg_catalog.octet_length(key) OPERATOR(pg_catalog.<=) 1024)';
    -- (on a worker: only where it has not been done, for a worker keeps it
    -- when a later step fails and the coordinator rolls back)
    key_to_text_once constant pg_catalog.text :=
        'DO $do$ BEGIN IF (SELECT atttypid FROM pg_catalog.pg_attribute'
        ' WHERE attrelid OPERATOR(pg_catalog.=) ''sandbox_store.instances''::pg_catalog.regclass'
        ' AND attname OPERATOR(pg_catalog.=) ''key'') OPERATOR(pg_catalog.<>) ''pg_catalog.text''::pg_catalog.regtype'
        ' THEN ' || key_to_text || '; END IF; END $do$';
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'feature_not_supported',
            MESSAGE = 'citus is not installed in this database',
            DETAIL = 'sandbox_store.distribute() distributes the tables of sandbox_store with citus.',
            HINT = 'Put citus in shared_preload_libraries on every node, run CREATE EXTENSION citus and add the workers, then call it again.';
    END IF;
    IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) CURRENT_USER) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'insufficient_privilege',
            MESSAGE = 'permission denied to distribute the tables of sandbox_store',
            DETAIL = 'Only a superuser may distribute them.',
            HINT = 'Run sandbox_store.distribute() as a superuser, on the coordinator.';
    END IF;
    -- A worker's own run tables, before they are distributed, hold what was
    -- written through that worker (older versions left the run tables
    -- local); distributing would hide those rows, so refuse while a worker
    -- has any, before anything changes.
    SELECT pg_catalog.array_agg(t.rel) INTO local_runs
      FROM pg_catalog.unnest(ARRAY['sandbox_store.runs', 'sandbox_store.run_logs',
                                   'sandbox_store.run_log_entries']::pg_catalog.regclass[]) t(rel)
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
                        WHERE p.logicalrelid OPERATOR(pg_catalog.=) t.rel);
    IF local_runs IS NOT NULL THEN
        SELECT pg_catalog.string_agg(r.nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) r.nodeport
                                     OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) r.result
                                     OPERATOR(pg_catalog.||) ' rows', '; ')
          INTO failed
          FROM pg_catalog.run_command_on_workers(
                   (SELECT 'SELECT ' OPERATOR(pg_catalog.||)
                           pg_catalog.string_agg(pg_catalog.format('(SELECT count(*) FROM ONLY %s)', t.rel), ' + ')
                      FROM pg_catalog.unnest(local_runs) t(rel))) r
         WHERE r.success AND r.result OPERATOR(pg_catalog.<>) '0';
        IF failed IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = 'a worker holds runs of its own in the run tables of sandbox_store',
                DETAIL = 'Runs and run logs written through a worker before the run tables were distributed stay in that worker''s own tables, which distributing them would hide: ' || failed || '.  Nothing was changed.',
                HINT = 'Copy those rows into the same tables on the coordinator and delete them on the worker (docs/operations.md, section 9), then call it again.';
        END IF;
    END IF;
    -- citus cannot prune shards by a domain-typed key (it coerces the key
    -- to the column's type as a constant, which a domain's check is not), so
    -- instances.key goes back from bounded_text to text with the same
    -- 1..1024-byte check, on every node (each has the extension's tables).
    -- No rewrite: the types are binary-compatible.  citus's functions are
    -- called by name at run time: this extension does not depend on citus.
    IF (SELECT atttypid FROM pg_catalog.pg_attribute
         WHERE attrelid OPERATOR(pg_catalog.=) 'sandbox_store.instances'::pg_catalog.regclass
           AND attname OPERATOR(pg_catalog.=) 'key') OPERATOR(pg_catalog.<>) 'pg_catalog.text'::pg_catalog.regtype THEN
        EXECUTE key_to_text;
        SELECT pg_catalog.string_agg(r.nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) r.nodeport
                                     OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) r.result, '; ')
          INTO failed
          FROM pg_catalog.run_command_on_workers(key_to_text_once) r WHERE NOT r.success;
        IF failed IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = 'could not change sandbox_store.instances.key to text on every worker',
                DETAIL = failed,
                HINT = 'Install sandbox_store on every worker (CREATE EXTENSION on the coordinator after adding them does that), then call it again.';
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid OPERATOR(pg_catalog.=) 'sandbox_store.instances'::pg_catalog.regclass) THEN
        PERFORM pg_catalog.create_distributed_table('sandbox_store.instances', 'key');
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid OPERATOR(pg_catalog.=) 'sandbox_store.leases'::pg_catalog.regclass) THEN
        PERFORM pg_catalog.create_distributed_table('sandbox_store.leases', 'key',
                                                    colocate_with => 'sandbox_store.instances');
    END IF;
    FOREACH rel IN ARRAY ARRAY['sandbox_store.runs', 'sandbox_store.run_logs',
                               'sandbox_store.run_log_entries']::pg_catalog.regclass[]
    LOOP
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                        WHERE logicalrelid OPERATOR(pg_catalog.=) rel) THEN
            PERFORM pg_catalog.create_distributed_table(rel, 'run_id',
                                                        colocate_with => 'sandbox_store.instances');
            -- (its rows were copied to the shards; the coordinator's own
            -- copy is no longer read)
            PERFORM pg_catalog.truncate_local_data_after_distributing_table(rel);
        END IF;
    END LOOP;
    FOREACH fn IN ARRAY ARRAY[
        'sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8)',
        'sandbox_store.sandbox_upsert_release(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz)',
        'sandbox_store.sandbox_get(pg_catalog.text)',
        'sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8)',
        'sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval)',
        'sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval)',
        'sandbox_store.sandbox_try_lock(pg_catalog.text)',
        'sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval)',
        'sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval)',
        'sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid)',
        'sandbox_store.sandbox_lock_holder(pg_catalog.text)']::pg_catalog.regprocedure[]
    LOOP
        PERFORM pg_catalog.create_distributed_function(fn, 'key', colocate_with => 'sandbox_store.instances',
                                                       force_delegation => true);
    END LOOP;
    FOREACH fn IN ARRAY ARRAY[
        'sandbox_store.run_create_or_resume(pg_catalog.text, pg_catalog.text, pg_catalog.float8, pg_catalog.text)',
        'sandbox_store.run_get(pg_catalog.text)',
        'sandbox_store.run_claim(pg_catalog.text)',
        'sandbox_store.run_update(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8)',
        'sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8, pg_catalog.bool)',
        'sandbox_store.run_log_read(pg_catalog.text, pg_catalog.int8, pg_catalog.int4)',
        'sandbox_store.run_log_status(pg_catalog.text)',
        'sandbox_store.run_log_watch(pg_catalog.text)']::pg_catalog.regprocedure[]
    LOOP
        PERFORM pg_catalog.create_distributed_function(fn, 'run_id', colocate_with => 'sandbox_store.runs',
                                                       force_delegation => true);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sandbox_store.distribute() IS
'On citus: distribute instances and leases by key and runs, run_logs and run_log_entries by run id, all colocated, and run every single-key function and the single-run functions that do not notify at commit on the node holding the shard. Once, on the coordinator, as a superuser; running it again distributes only what is not distributed yet.';

-- The guard (1.4).  pg_dump writes only the data and grants of the
-- extension's tables; a restore makes the tables with CREATE EXTENSION, as
-- this script does.  A column an admin added, dropped, renamed or retyped,
-- or a relation renamed or moved, would make the restore's COPY fail and
-- lose every record (a plain psql restore even exits 0).  So such changes
-- are refused: the event trigger sandbox_store_guard checks the relations
-- after every ALTER that touched one of them (or a parent it inherits
-- from), and rolls the change back.  Commands run by the extension's own
-- scripts pass (in_extension), and so does distribute()'s retype of
-- instances.key to text, which the check allows.

-- What differs in the extension's relations from what its scripts made:
-- one line per difference, none when they are as made.  Members are found
-- through pg_depend, never by name alone.  Constraints, indexes, defaults,
-- statistics targets, storage parameters and comments are not compared.
CREATE FUNCTION sandbox_store.unsupported_changes()
RETURNS SETOF pg_catalog.text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
WITH ext AS (
    SELECT e.oid, e.extnamespace
      FROM pg_catalog.pg_extension e
     WHERE e.extname OPERATOR(pg_catalog.=) 'sandbox_store'
), members AS (
    SELECT c.oid, c.relname, c.relkind, c.relnamespace OPERATOR(pg_catalog.=) ext.extnamespace AS in_schema
      FROM ext
      JOIN pg_catalog.pg_depend d
        ON d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
       AND d.refobjid OPERATOR(pg_catalog.=) ext.oid
       AND d.deptype OPERATOR(pg_catalog.=) 'e'
       AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
     WHERE c.relkind OPERATOR(pg_catalog.<>) 'c'
    UNION ALL
    -- The plain script's relations are no extension's members: those of
    -- its schema are.
    SELECT c.oid, c.relname, c.relkind, true
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE NOT EXISTS (SELECT FROM ext)
       AND n.nspname OPERATOR(pg_catalog.=) 'sandbox_store'
       AND c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p', 'v', 'm', 'S', 'f']::pg_catalog."char"[])
), relations (relname, relkind) AS (
    VALUES ('instances'::pg_catalog.name, 'r'::pg_catalog."char"),
           ('leases', 'r'),
           ('fence_seq', 'S'),
           ('claims', 'v'),
           ('key_locks', 'v'),
           ('checkpoints', 'r'),
           ('checkpoint_heads', 'r'),
           ('runs', 'r'),
           ('run_logs', 'r'),
           ('run_log_entries', 'r')
), columns (relname, attname, types, not_null, collated) AS (
    VALUES
    ('instances'::pg_catalog.name, 'key'::pg_catalog.name,
     -- distribute() makes it text for citus
     ARRAY['sandbox_store.bounded_text', 'pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('instances', 'provider', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], true, true),
    ('instances', 'provider_sandbox_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], true, true),
    ('instances', 'latest_snapshot_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], false, true),
    ('instances', 'thread_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], true, true),
    ('instances', 'latest_run_id', ARRAY['sandbox_store.bounded_text']::pg_catalog.regtype[], false, true),
    ('instances', 'updated_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], true, false),
    ('leases', 'key', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('leases', 'fence', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('leases', 'owner_token', ARRAY['pg_catalog.uuid']::pg_catalog.regtype[], false, false),
    ('leases', 'lease_expires_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('claims', 'key', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, true),
    ('claims', 'fence', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], false, false),
    ('claims', 'owner_token', ARRAY['pg_catalog.uuid']::pg_catalog.regtype[], false, false),
    ('claims', 'lease_expires_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('key_locks', 'pid', ARRAY['pg_catalog.int4']::pg_catalog.regtype[], false, false),
    ('key_locks', 'granted', ARRAY['pg_catalog.bool']::pg_catalog.regtype[], false, false),
    ('key_locks', 'lock_id', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], false, false),
    ('key_locks', 'mode', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, false),
    ('key_locks', 'virtualtransaction', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, false),
    ('key_locks', 'waitstart', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('checkpoints', 'id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoints', 'thread_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoints', 'parent_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, true),
    ('checkpoints', 'created_at', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('checkpoints', 'checkpoint', ARRAY['pg_catalog.jsonb']::pg_catalog.regtype[], true, false),
    ('checkpoints', 'blob_keys', ARRAY['pg_catalog.text[]']::pg_catalog.regtype[], true, true),
    ('checkpoint_heads', 'thread_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('checkpoint_heads', 'head_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('runs', 'run_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('runs', 'thread_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('runs', 'status', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('runs', 'started_at', ARRAY['pg_catalog.float8']::pg_catalog.regtype[], true, false),
    ('runs', 'finished_at', ARRAY['pg_catalog.float8']::pg_catalog.regtype[], false, false),
    ('runs', 'error', ARRAY['pg_catalog.jsonb']::pg_catalog.regtype[], false, false),
    ('runs', 'usage', ARRAY['pg_catalog.jsonb']::pg_catalog.regtype[], false, false),
    ('runs', 'sandbox_key', ARRAY['pg_catalog.text']::pg_catalog.regtype[], false, true),
    ('runs', 'detached_since', ARRAY['pg_catalog.float8']::pg_catalog.regtype[], false, false),
    ('runs', 'cancel_requested', ARRAY['pg_catalog.bool']::pg_catalog.regtype[], false, false),
    ('runs', 'driver_epoch', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], false, false),
    ('runs', 'max_driver_epoch', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], false, false),
    ('run_logs', 'run_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('run_logs', 'last_seq', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('run_logs', 'closed_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], false, false),
    ('run_logs', 'updated_at', ARRAY['pg_catalog.timestamptz']::pg_catalog.regtype[], true, false),
    ('run_logs', 'watched', ARRAY['pg_catalog.bool']::pg_catalog.regtype[], true, false),
    ('run_log_entries', 'run_id', ARRAY['pg_catalog.text']::pg_catalog.regtype[], true, true),
    ('run_log_entries', 'seq', ARRAY['pg_catalog.int8']::pg_catalog.regtype[], true, false),
    ('run_log_entries', 'chunk', ARRAY['pg_catalog.jsonb']::pg_catalog.regtype[], true, false)
), found AS (
    SELECT r.relname, r.relkind, m.oid
      FROM relations r
      JOIN members m ON m.relname OPERATOR(pg_catalog.=) r.relname
                    AND m.relkind OPERATOR(pg_catalog.=) r.relkind
                    AND m.in_schema
), actual AS (
    SELECT f.relname, a.attname, a.atttypid, a.attnotnull, a.attcollation
      FROM found f
      JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) f.oid
     WHERE a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
       AND f.relkind OPERATOR(pg_catalog.<>) 'S'
)
SELECT pg_catalog.format('relation sandbox_store.%s is missing (renamed, moved to another schema, or taken out of the extension)',
                         r.relname)
  FROM relations r
 WHERE NOT EXISTS (SELECT FROM found f WHERE f.relname OPERATOR(pg_catalog.=) r.relname)
UNION ALL
SELECT pg_catalog.format('relation %s of the extension has a name or schema the extension did not give it',
                         m.oid::pg_catalog.regclass)
  FROM members m
 WHERE NOT EXISTS (SELECT FROM found f WHERE f.oid OPERATOR(pg_catalog.=) m.oid)
UNION ALL
SELECT pg_catalog.format('sandbox_store.%s inherits from %s', f.relname, i.inhparent::pg_catalog.regclass)
  FROM found f
  JOIN pg_catalog.pg_inherits i ON i.inhrelid OPERATOR(pg_catalog.=) f.oid
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s was added or renamed', a.attname, a.relname)
  FROM actual a
 WHERE NOT EXISTS (SELECT FROM columns c
                    WHERE c.relname OPERATOR(pg_catalog.=) a.relname
                      AND c.attname OPERATOR(pg_catalog.=) a.attname)
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s was dropped or renamed', c.attname, c.relname)
  FROM columns c
 WHERE EXISTS (SELECT FROM found f WHERE f.relname OPERATOR(pg_catalog.=) c.relname)
   AND NOT EXISTS (SELECT FROM actual a
                    WHERE a.relname OPERATOR(pg_catalog.=) c.relname
                      AND a.attname OPERATOR(pg_catalog.=) c.attname)
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s has type %s instead of %s',
                         c.attname, c.relname, a.atttypid::pg_catalog.regtype, c.types[1])
  FROM columns c
  JOIN actual a ON a.relname OPERATOR(pg_catalog.=) c.relname AND a.attname OPERATOR(pg_catalog.=) c.attname
 WHERE NOT a.atttypid::pg_catalog.regtype OPERATOR(pg_catalog.=) ANY (c.types)
UNION ALL
SELECT pg_catalog.format('column %I of sandbox_store.%s has collation %s instead of the default',
                         c.attname, c.relname, a.attcollation::pg_catalog.regcollation)
  FROM columns c
  JOIN actual a ON a.relname OPERATOR(pg_catalog.=) c.relname AND a.attname OPERATOR(pg_catalog.=) c.attname
 WHERE c.collated
   AND a.atttypid::pg_catalog.regtype OPERATOR(pg_catalog.=) ANY (c.types)
   AND a.attcollation OPERATOR(pg_catalog.<>) 'pg_catalog.default'::pg_catalog.regcollation
UNION ALL
SELECT pg_catalog.format(CASE WHEN c.not_null THEN 'column %I of sandbox_store.%s is no longer NOT NULL'
                              ELSE 'column %I of sandbox_store.%s was made NOT NULL' END,
                         c.attname, c.relname)
  FROM columns c
  JOIN actual a ON a.relname OPERATOR(pg_catalog.=) c.relname AND a.attname OPERATOR(pg_catalog.=) c.attname
 WHERE c.relname OPERATOR(pg_catalog.<>) ALL (ARRAY['claims', 'key_locks']::pg_catalog.name[])
   AND a.attnotnull OPERATOR(pg_catalog.<>) c.not_null
$$;

COMMENT ON FUNCTION sandbox_store.unsupported_changes() IS
'What differs in the relations of sandbox_store from what the extension made (columns, their types, collations and NOT NULL, relation names, schema, inheritance), one line per difference; none when they are as made. pg_dump cannot carry such changes.';

-- Nothing for PUBLIC: an admin grants USAGE on the schema and EXECUTE on the
-- functions to the app role (see README).  The parts that make functions
-- grant and revoke nothing themselves, so that an update script can make
-- them again (CREATE OR REPLACE) without touching the grants an admin gave:
-- a REVOKE run by an update script would record the admin's grants as the
-- extension's initial privileges, which pg_dump leaves out.
REVOKE ALL ON FUNCTION
    sandbox_store.sandbox_upsert(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8),
    sandbox_store.sandbox_upsert_release(pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz),
    sandbox_store.sandbox_get(pg_catalog.text),
    sandbox_store.sandbox_delete(pg_catalog.text, pg_catalog.int8),
    sandbox_store.sandbox_list(pg_catalog.text),
    sandbox_store.sandbox_ensure(pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval),
    sandbox_store.sandbox_lock(pg_catalog.text, pg_catalog.interval),
    sandbox_store.sandbox_try_lock(pg_catalog.text),
    sandbox_store.sandbox_lock_id(pg_catalog.text),
    sandbox_store.sandbox_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.interval),
    sandbox_store.sandbox_renew(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval),
    sandbox_store.sandbox_release(pg_catalog.text, pg_catalog.uuid),
    sandbox_store.sandbox_reap(pg_catalog.interval, pg_catalog.int4),
    sandbox_store.sandbox_lock_holder(pg_catalog.text),
    sandbox_store.checkpoint_acquire_writer(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store.checkpoint_renew_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store.checkpoint_release_writer(pg_catalog.text, pg_catalog.uuid, pg_catalog.int8),
    sandbox_store.checkpoint_append(pg_catalog.jsonb, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store.checkpoint_delete_head(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store.checkpoint_fork(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text, pg_catalog.uuid, pg_catalog.int8, pg_catalog.timestamptz),
    sandbox_store.checkpoint_get(pg_catalog.text),
    sandbox_store.checkpoint_list(pg_catalog.text),
    sandbox_store.checkpoint_head(pg_catalog.text),
    sandbox_store.checkpoint_blob_references(),
    sandbox_store.run_create_or_resume(pg_catalog.text, pg_catalog.text, pg_catalog.float8, pg_catalog.text),
    sandbox_store.run_get(pg_catalog.text),
    sandbox_store.run_update(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8),
    sandbox_store.run_list_by_thread(pg_catalog.text),
    sandbox_store.run_list_reclaimable(pg_catalog.float8, pg_catalog.float8),
    sandbox_store.run_find_active(pg_catalog.text),
    sandbox_store.run_claim(pg_catalog.text),
    sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8),
    sandbox_store.run_log_append(pg_catalog.text, pg_catalog.jsonb, pg_catalog.int8, pg_catalog.bool),
    sandbox_store.run_log_upsert(pg_catalog.text, pg_catalog.int8[], pg_catalog.jsonb, pg_catalog.int8),
    sandbox_store.run_log_close(pg_catalog.text, pg_catalog.int8),
    sandbox_store.run_log_read(pg_catalog.text, pg_catalog.int8, pg_catalog.int4),
    sandbox_store.run_log_status(pg_catalog.text),
    sandbox_store.run_log_watch(pg_catalog.text),
    sandbox_store.run_log_wake(pg_catalog.text[]),
    sandbox_store.run_log_prune(pg_catalog.interval, pg_catalog.int4),
    sandbox_store.unsupported_changes(),
    sandbox_store.edition()
FROM PUBLIC;
REVOKE ALL ON TABLE sandbox_store.instances, sandbox_store.leases, sandbox_store.claims,
    sandbox_store.key_locks FROM PUBLIC;
REVOKE ALL ON SEQUENCE sandbox_store.fence_seq FROM PUBLIC;
REVOKE ALL ON FUNCTION sandbox_store.distribute() FROM PUBLIC;

-- The internal helpers: nobody but the owner (an update script runs this
-- too, for the helpers it makes).
REVOKE ALL ON SCHEMA sandbox_store_internal FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store_internal FROM PUBLIC;

COMMIT;

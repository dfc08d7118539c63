--
-- schema_squat: the extension's schema cannot be taken over.
--
-- 1. A role with CREATE on the database makes schema sandbox_store before
--    the extension is installed: CREATE EXTENSION refuses it (42501).  Or
--    it makes schema sandbox_store_internal, the helpers' schema: refused
--    too (42P06), since the install script makes that schema itself.
-- 2. The extension's schema is renamed and another schema sandbox_store
--    with look-alike tables takes its name: every call is refused (55000)
--    and nothing is read from or written to the look-alikes.  Renamed back,
--    everything works and the records are intact.
--
\i sql/include/fresh.sql
-- (The plain script makes no extension: there, CREATE EXTENSION says the
-- extension is not available, with the server's control file path in its
-- detail, which is left out.)
\if :sb_plain
\set sb_verbosity terse
\else
\set sb_verbosity default
\endif
SELECT key FROM sandbox_store.sandbox_upsert('sq-1', 'e2b', 'sbx-real', 'sq-t');
DROP EXTENSION sandbox_store;
DROP SCHEMA IF EXISTS sandbox_store;

CREATE ROLE sq_mallory;
-- (So that SET ROLE works for a non-superuser too: the SQL edition's suites
-- run as one with CREATEROLE.)
GRANT sq_mallory TO CURRENT_USER;
DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO sq_mallory', current_database()); END $$;
SET ROLE sq_mallory;
CREATE SCHEMA sandbox_store;
RESET ROLE;
\set VERBOSITY sqlstate
CREATE EXTENSION sandbox_store;
\set VERBOSITY :sb_verbosity
CREATE EXTENSION sandbox_store;
SELECT count(*) AS extensions FROM pg_extension WHERE extname = 'sandbox_store';
DROP SCHEMA sandbox_store;
SET ROLE sq_mallory;
CREATE SCHEMA sandbox_store_internal;
RESET ROLE;
\set VERBOSITY sqlstate
CREATE EXTENSION sandbox_store;
\set VERBOSITY :sb_verbosity
SELECT count(*) AS extensions FROM pg_extension WHERE extname = 'sandbox_store';
DROP SCHEMA sandbox_store_internal;
DROP SCHEMA IF EXISTS sandbox_store;
DO $$ BEGIN EXECUTE format('REVOKE CREATE ON DATABASE %I FROM sq_mallory', current_database()); END $$;
DROP ROLE sq_mallory;

-- A schema a superuser made beforehand is fine.
CREATE SCHEMA sandbox_store;
\set VERBOSITY :sb_verbosity
CREATE EXTENSION sandbox_store;
SELECT key FROM sandbox_store.sandbox_upsert('sq-1', 'e2b', 'sbx-real', 'sq-t');

-- 2. Renamed, and a look-alike in its place.
ALTER SCHEMA sandbox_store RENAME TO sq_real;
CREATE SCHEMA sandbox_store;
CREATE TABLE sandbox_store.instances (LIKE sq_real.instances INCLUDING ALL);
INSERT INTO sandbox_store.instances
  SELECT 'sq-1', 'evil', 'sbx-evil', NULL, 'sq-t', NULL, now();
\set VERBOSITY sqlstate
SELECT key, provider_sandbox_id FROM sq_real.sandbox_get('sq-1');
SELECT key FROM sq_real.sandbox_upsert('sq-2', 'e2b', 'sbx-new', 'sq-t');
SELECT action FROM sq_real.sandbox_ensure('sq-1', 'run-1');
SELECT key FROM sq_real.sandbox_list('sq-t');
\set VERBOSITY :sb_verbosity
SELECT (sq_real.sandbox_get('sq-1')).provider_sandbox_id;
SELECT key, provider_sandbox_id FROM sandbox_store.instances ORDER BY key;
DROP SCHEMA sandbox_store CASCADE;
ALTER SCHEMA sq_real RENAME TO sandbox_store;
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('sq-1');
SELECT sandbox_store.sandbox_delete('sq-1');

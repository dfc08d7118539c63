--
-- guard: changes to the extension's relations that pg_dump cannot carry
-- are refused.
--
-- pg_dump writes only the data (and grants) of the extension's tables; a
-- restore makes them with CREATE EXTENSION, as the extension's script says.
-- An added, dropped, renamed or retyped column, or a renamed or moved
-- relation, would make the restore's COPY fail and lose every record (a
-- plain psql restore even exits 0).  So the event trigger
-- sandbox_store_guard refuses them (0A000), and the change is rolled back.
-- What leaves the relations as the extension made them passes: DDL on other
-- tables, indexes, comments, distribute()'s retype of instances.key to text.
--
\i sql/include/fresh.sql
SELECT key FROM sandbox_store.sandbox_upsert('gd-1', 'e2b', 'sbx-1', 'gd-t', 'snap-1', 'run-1');
SELECT evtname, evtevent, evtenabled, evttags
  FROM pg_event_trigger WHERE evtname = 'sandbox_store_guard';

-- Refused, with the whole message once.
ALTER TABLE sandbox_store.instances ADD COLUMN region text;
\set VERBOSITY sqlstate
ALTER TABLE sandbox_store.instances ADD COLUMN region text;
ALTER TABLE sandbox_store.instances DROP COLUMN latest_run_id;
ALTER TABLE sandbox_store.instances RENAME COLUMN provider TO prov;
ALTER TABLE sandbox_store.instances ALTER COLUMN thread_id TYPE text;
ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE sandbox_store.bounded_text COLLATE "C";
ALTER TABLE sandbox_store.instances ALTER COLUMN latest_run_id SET NOT NULL;
ALTER TABLE sandbox_store.leases ALTER COLUMN fence DROP NOT NULL;
ALTER TABLE sandbox_store.instances RENAME TO gd_instances;
ALTER INDEX sandbox_store.instances RENAME TO gd_instances;
CREATE SCHEMA gd_elsewhere;
ALTER TABLE sandbox_store.instances SET SCHEMA gd_elsewhere;
ALTER TABLE sandbox_store.leases ADD COLUMN note text;
ALTER TABLE sandbox_store.leases RENAME TO gd_leases;
ALTER TABLE sandbox_store.leases SET SCHEMA gd_elsewhere;
ALTER TABLE sandbox_store.leases ALTER COLUMN fence TYPE numeric;
ALTER SEQUENCE sandbox_store.fence_seq RENAME TO gd_seq;
ALTER SEQUENCE sandbox_store.fence_seq SET SCHEMA gd_elsewhere;
ALTER VIEW sandbox_store.claims RENAME TO gd_claims;
ALTER VIEW sandbox_store.claims RENAME COLUMN fence TO f;
-- Inherited columns would arrive with a change to the parent.
CREATE TABLE gd_elsewhere.parent (key sandbox_store.bounded_text);
ALTER TABLE sandbox_store.instances INHERIT gd_elsewhere.parent;
-- Several changes in one statement are refused together.
ALTER TABLE sandbox_store.instances ADD COLUMN a text, ADD COLUMN b text;
\set VERBOSITY default

-- Nothing was changed.
SELECT attname, atttypid::regtype, attcollation::regcollation
  FROM pg_attribute
 WHERE attrelid = 'sandbox_store.instances'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;
SELECT c.relname, c.relnamespace::regnamespace AS schema, c.relkind
  FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
 WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sandbox_store')
   AND d.deptype = 'e'
 ORDER BY 1;
SELECT count(*) AS parents FROM pg_inherits WHERE inhrelid = 'sandbox_store.instances'::regclass;
SELECT key FROM sandbox_store.sandbox_get('gd-1');

-- Allowed: what leaves the relations as the extension made them.
CREATE TABLE gd_elsewhere.own (key text PRIMARY KEY, region text);
ALTER TABLE gd_elsewhere.own ADD COLUMN note text;
ALTER TABLE gd_elsewhere.own RENAME COLUMN note TO remark;
ALTER TABLE gd_elsewhere.own RENAME TO own2;
CREATE INDEX gd_updated_at ON sandbox_store.instances (updated_at);
ALTER INDEX sandbox_store.gd_updated_at RENAME TO gd_updated_at2;
DROP INDEX sandbox_store.gd_updated_at2;
COMMENT ON COLUMN sandbox_store.instances.provider IS 'the provider';
ALTER TABLE sandbox_store.instances ALTER COLUMN provider SET STATISTICS 200;
ALTER TABLE sandbox_store.instances SET (fillfactor = 80);
ALTER SEQUENCE sandbox_store.fence_seq CACHE 1;
-- distribute() retypes instances.key to text (Citus cannot prune shards by
-- a domain-typed key), and the key may be made bounded_text again.
ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE pg_catalog.text;
ALTER TABLE sandbox_store.instances ALTER COLUMN key TYPE sandbox_store.bounded_text;
SELECT key FROM sandbox_store.sandbox_get('gd-1');

-- A superuser can disable the guard; a restore of a dump would then lose
-- the records, as the detail says.  The guard's next check looks at the
-- relations as they are: with a column still extra, a change elsewhere is
-- refused until the column is gone.
ALTER EVENT TRIGGER sandbox_store_guard DISABLE;
ALTER TABLE sandbox_store.instances ADD COLUMN region text;
ALTER EVENT TRIGGER sandbox_store_guard ENABLE;
\set VERBOSITY sqlstate
ALTER TABLE sandbox_store.leases SET (fillfactor = 80);
\set VERBOSITY default
ALTER TABLE sandbox_store.instances DROP COLUMN region;
ALTER TABLE sandbox_store.leases SET (fillfactor = 80);

-- The function behind the trigger cannot be called by anyone.
SELECT pg_temp.err('SELECT sandbox_store.guard()') AS direct_call;
DROP TABLE gd_elsewhere.parent;
DROP SCHEMA gd_elsewhere CASCADE;

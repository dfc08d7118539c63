\set ECHO none
-- sql/include/fresh.sql: what every regression test starts from, run
-- by its first line (\i sql/include/fresh.sql; pg_regress runs psql in
-- the top directory).  Not echoed, so a test's output shows only its own
-- statements.
--
--   * a fresh extension at the default version (tests that need another
--     state make it themselves), so no test depends on the ones before it
--     (the edition SB_EDITION names: c when unset, pg_tle, or plain);
--   * no CONTEXT lines in error messages (the SQL edition's errors have
--     PL/pgSQL ones; PostgreSQL 16 and later print the statement of an
--     extension script where 15 prints only the PL/pgSQL line);
--   * pg_temp.err(q): run q, return 'ok' or 'SQLSTATE: message';
--   * pg_temp.my_sb_locks: this backend's locks of the extension (mode,
--     granted, lock id), and pg_temp.sb_lock_count(): every backend's;
--   * pg_temp.sb_key_lock_class(): the objsubid pg_locks shows for a key's
--     lock in the installed edition (tests use key_locks, not the number).
\i sql/include/reinstall.sql
\set SHOW_CONTEXT never

CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- (Through functions, whose bodies record no dependency: a test may drop
-- the extension.)
CREATE FUNCTION pg_temp.my_sb_locks() RETURNS TABLE (mode text, granted bool, lock_id int8)
LANGUAGE sql AS $$
  SELECT mode, granted, lock_id FROM sandbox_store.key_locks WHERE pid = pg_backend_pid()
$$;
CREATE TEMP VIEW my_sb_locks AS SELECT * FROM pg_temp.my_sb_locks();

CREATE FUNCTION pg_temp.sb_lock_count() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM sandbox_store.key_locks
$$;

-- The C edition's own class, SB_LOCK_CLASS of src/sandbox_store.h (0x5342,
-- ASCII "SB"); the SQL edition's is pg_advisory_xact_lock(bigint)'s.
CREATE FUNCTION pg_temp.sb_key_lock_class() RETURNS int LANGUAGE sql AS $$
  SELECT CASE WHEN edition = 'c' THEN 21314 ELSE 1 END FROM sandbox_store.edition()
$$;
\set ECHO all

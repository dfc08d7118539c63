--
-- lock_scope: how long a lock-mode sandbox_ensure's lock lasts where it is
-- called from, and the WARNING that says when it ends with the statement.
-- (A call while its transaction ends is refused: specs/lock-scope.spec.)
--
\i sql/include/fresh.sql

-- The caller's view: the answer, and whether this backend holds the key.
CREATE FUNCTION pg_temp.ensure_and_show(k text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  a text;
BEGIN
  SELECT action INTO a FROM sandbox_store.sandbox_ensure(k, 'run-1');
  RETURN a || ', held: ' || (SELECT count(*) FROM my_sb_locks WHERE lock_id = sandbox_store.sandbox_lock_id(k));
END $$;

-- Autocommit, through a function: the lock ends with the statement the
-- client sent, so create still warns.
SELECT pg_temp.ensure_and_show('s-func');

-- A procedure (CALL outside a transaction block) holds the lock until its
-- own COMMIT: it can upsert under it.  No WARNING, with or without COMMIT.
CREATE PROCEDURE pg_temp.create_and_commit(k text) LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE '%', pg_temp.ensure_and_show(k);
  PERFORM key FROM sandbox_store.sandbox_upsert(k, 'prov', 'sbx-' || k, 'thread-s');
  RAISE NOTICE 'before COMMIT, held: %', (SELECT count(*) FROM my_sb_locks);
  COMMIT;
  RAISE NOTICE 'after COMMIT, held: %', (SELECT count(*) FROM my_sb_locks);
END $$;
CALL pg_temp.create_and_commit('s-proc');
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_get('s-proc');

CREATE PROCEDURE pg_temp.create_no_commit(k text) LANGUAGE plpgsql AS $$
DECLARE
  a text;
BEGIN
  SELECT action INTO a FROM sandbox_store.sandbox_ensure(k, 'run-1');
  RAISE NOTICE '%, held: %', a, (SELECT count(*) FROM my_sb_locks);
END $$;
CALL pg_temp.create_no_commit('s-proc-2');

-- Called directly in the procedure, in a function it calls (above), or
-- inside an EXCEPTION block (a subtransaction) of a procedure: the same.
CREATE PROCEDURE pg_temp.create_in_block(k text) LANGUAGE plpgsql AS $$
DECLARE
  a text;
BEGIN
  BEGIN
    SELECT action INTO a FROM sandbox_store.sandbox_ensure(k, 'run-1');
  EXCEPTION WHEN division_by_zero THEN
    NULL;
  END;
  RAISE NOTICE '%, held: %', a, (SELECT count(*) FROM my_sb_locks);
  COMMIT;
END $$;
CALL pg_temp.create_in_block('s-proc-3');

-- A procedure's cursor loop over keys that decides on each key in the
-- loop's body and commits: each call runs in a transaction of its own,
-- under its lock until that COMMIT (only a call inside the loop's own query
-- would run at the COMMIT: specs/lock-scope.spec).
CREATE PROCEDURE pg_temp.each_key() LANGUAGE plpgsql AS $$
DECLARE
  r record;
  a text;
BEGIN
  FOR r IN SELECT k FROM unnest(ARRAY['s-loop-1', 's-loop-2']) AS k LOOP
    SELECT action INTO a FROM sandbox_store.sandbox_ensure(r.k, 'run-1');
    PERFORM key FROM sandbox_store.sandbox_upsert(r.k, 'prov', 'sbx-' || r.k, 'thread-s');
    RAISE NOTICE '%: %, held: %', r.k, a, (SELECT count(*) FROM my_sb_locks);
    COMMIT;
  END LOOP;
END $$;
CALL pg_temp.each_key();
SELECT key, provider_sandbox_id FROM sandbox_store.sandbox_list('thread-s') ORDER BY key;

-- A DO block is run like a procedure.
DO $$
BEGIN
  RAISE NOTICE '%', pg_temp.ensure_and_show('s-do');
END $$;

-- Inside a transaction block, CALL and DO are atomic; the lock is held
-- until COMMIT, no WARNING.
BEGIN;
CALL pg_temp.create_no_commit('s-proc-4');
SELECT count(*) AS held FROM my_sb_locks;
COMMIT;

SELECT count(*) AS locks_left FROM my_sb_locks;

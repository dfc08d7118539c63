\i sql/include/fresh.sql
-- conforming_strings: with standard_conforming_strings off in the session
-- (a setting any role may change), every function reads its own literals
-- as written: a backslash in a regular expression, a replacement or a
-- message stays one.
-- The session sets it before its first call, which is when PL/pgSQL (the
-- SQL edition, the checkpoint store) parses the statements of a function.
-- (PostgreSQL 19 no longer has the setting's off: conforming_strings_1.out,
-- where the rest runs with it on.)
\c
SET standard_conforming_strings = off;
CREATE FUNCTION pg_temp.cp(id text, parent text, path text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'threadId', 't-scs', 'parentCheckpointId', parent,
                            'createdAt', 1000, 'reason', 'automatic', 'conversation', '[]'::jsonb,
                            'files', jsonb_build_array(jsonb_build_object('path', path, 'kind', 'file', 'size', 1,
                                                                          'blobKey', 'sandbox-files/sha256/' || repeat('a', 64))),
                            'artifacts', '[]'::jsonb)
$$;
SELECT owner_token, fence FROM sandbox_store.checkpoint_acquire_writer('t-scs', 600000) \gset
-- The path checks: a path of short segments is a path; '..' is not.
SELECT sandbox_store.checkpoint_append(pg_temp.cp('c1', NULL, 'ab/c.txt'), NULL, 't-scs', :'owner_token', :fence) IS NOT NULL AS appended;
\set VERBOSITY default
SELECT sandbox_store.checkpoint_append(pg_temp.cp('c2', 'c1', 'ab/../c.txt'), 'c1', 't-scs', :'owner_token', :fence);
-- A reserved key's detail names it as E'\x01' (chr(1): no backslash in this file's literals).
SELECT * FROM sandbox_store.sandbox_get(chr(1) || 'k');
-- The create warning outside a transaction block, and none in a DO block.
SELECT action FROM sandbox_store.sandbox_ensure('scs-1', 'run-1');
DO $$ BEGIN PERFORM sandbox_store.sandbox_ensure('scs-2', 'run-1'); END $$;
-- The size limit written with the unit B (read back with a backreference).
SET sandbox_store.max_checkpoint_bytes = '100B';
SELECT sandbox_store.checkpoint_append(pg_temp.cp('c3', 'c1', 'ab/d.txt'), 'c1', 't-scs', :'owner_token', :fence);
RESET sandbox_store.max_checkpoint_bytes;

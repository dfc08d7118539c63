\i sql/include/fresh.sql
-- checkpoints: the checkpoint store (docs/reference.md, "Sandbox
-- checkpoints").  Single-session behaviour: the writer lease (conflict,
-- renew, stale release, expiry and takeover, driven by the at clock instead
-- of sleeping), append's checks in their order, immutability, ordering by
-- createdAt then id as UTF-8 bytes, reference counts of shared blobs,
-- delete_head transitions, fork.  Races between writers are the isolation
-- spec checkpoint-writers'; crashes, TAP 015_checkpoint_crash.
SET client_min_messages = warning;
\set t0 '''2026-01-01 00:00:00+00'''
-- pg_temp.cp(id, thread, parent, created, files, artifacts): a checkpoint.
CREATE FUNCTION pg_temp.cp(id text, thread text, parent text, created int8,
                           files jsonb DEFAULT '[]', artifacts jsonb DEFAULT '[]',
                           reason text DEFAULT 'automatic')
RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'threadId', thread, 'parentCheckpointId', parent,
                            'createdAt', created, 'reason', reason, 'files', files,
                            'conversation', jsonb_build_array(jsonb_build_object('role', 'user', 'content', 'hi ' || id)),
                            'artifacts', artifacts)
$$;
CREATE FUNCTION pg_temp.blob(n int) RETURNS text LANGUAGE sql AS $$
  SELECT 'sandbox-files/sha256/' || lpad(to_hex(n), 64, '0')
$$;
CREATE TEMP TABLE w (thread text PRIMARY KEY, fence int8, token uuid);
-- pg_temp.why(q): 'ok', or the error's SQLSTATE and detail.
CREATE FUNCTION pg_temp.why(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  d text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || d;
END $$;

-- The writer: acquire never waits; a second writer is refused while the
-- first is live (SBC05), takes over once it expired, with a higher fence.
INSERT INTO w SELECT 't1', fence, owner_token
  FROM sandbox_store.checkpoint_acquire_writer('t1', 60000, at => :t0);
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_acquire_writer('t1', 60000, at => '2026-01-01 00:00:59+00')$$);
SELECT (SELECT fence FROM w) > 0 AS has_fence,
       (SELECT owner_token FROM sandbox_store.checkpoint_writers WHERE thread_id = 't1') = (SELECT token FROM w) AS is_the_writer,
       NOT EXISTS (SELECT FROM sandbox_store.leases) AS no_lease;
-- A writer live by the server's clock shows in the claims view, under its
-- thread's reserved key.
CREATE TEMP TABLE lw AS SELECT * FROM sandbox_store.checkpoint_acquire_writer('live', 60000);
SELECT c.fence = lw.fence AND c.owner_token = lw.owner_token AND c.lease_expires_at = lw.expires_at AS in_claims
  FROM lw LEFT JOIN sandbox_store.claims c ON c.key = E'\x01checkpoint-writer\x01live';
-- renew by the current writer; by anyone else: SB001, nothing changed.
SELECT sandbox_store.checkpoint_renew_writer('t1', token, fence, 60000, at => '2026-01-01 00:00:30+00')
       = '2026-01-01 00:01:30+00' AS renewed FROM w;
SELECT pg_temp.err(format($$SELECT sandbox_store.checkpoint_renew_writer('t1', gen_random_uuid(), %s, 60000, at => '2026-01-01 00:00:31+00')$$, fence)) FROM w;

-- append: the root, then a child.  Blob keys counted once per checkpoint.
SELECT sandbox_store.checkpoint_append(
         pg_temp.cp('c1', 't1', NULL, 1000,
                    jsonb_build_array(jsonb_build_object('path', 'src', 'kind', 'dir'),
                                      jsonb_build_object('path', 'src/a.ts', 'kind', 'file', 'blobKey', pg_temp.blob(1), 'size', 10),
                                      jsonb_build_object('path', 'src/b.ts', 'kind', 'file', 'blobKey', pg_temp.blob(1), 'size', 10))),
         NULL, 't1', token, fence, at => '2026-01-01 00:00:40+00') FROM w;
SELECT sandbox_store.checkpoint_append(
         pg_temp.cp('c2', 't1', 'c1', 2000,
                    jsonb_build_array(jsonb_build_object('path', 'src/a.ts', 'kind', 'file', 'blobKey', pg_temp.blob(1), 'size', 10),
                                      jsonb_build_object('path', 'b.bin', 'kind', 'file', 'blobKey', pg_temp.blob(2), 'size', 0)),
                    jsonb_build_array(jsonb_build_object('artifactId', 'a1', 'name', 'report.pdf', 'mimeType', 'application/pdf',
                                                         'size', 3, 'blobKey', 'sandbox-artifacts/a1', 'createdAt', 2000))),
         'c1', 't1', token, fence, at => '2026-01-01 00:00:41+00') FROM w;
SELECT sandbox_store.checkpoint_head('t1');
SELECT * FROM sandbox_store.checkpoint_blob_references();

-- append's checks, in their order: ids and entries, writer, duplicate id,
-- stale head, parent mismatch.  Each changes nothing.
CREATE TEMP VIEW state AS
  SELECT (SELECT sandbox_store.checkpoint_head('t1')) AS head,
         (SELECT count(*) FROM sandbox_store.checkpoint_list('t1')) AS checkpoints,
         (SELECT sum(refs) FROM sandbox_store.checkpoint_blob_references()) AS refs;
SELECT * FROM state;
SELECT pg_temp.why(format($$SELECT sandbox_store.checkpoint_append(%L, 'c2', 't1', %L, %s, at => '2026-01-01 00:00:42+00')$$,
                          c, token, fence)) AS refused
  FROM w, (VALUES
    (pg_temp.cp('', 't1', 'c2', 3000)),
    (pg_temp.cp('c3', '', 'c2', 3000)),
    (pg_temp.cp('c3', 't1', 'c2', 3000) - 'reason'),
    (pg_temp.cp('c3', 't1', 'c2', 3000, '[{"path": "/abs", "kind": "dir"}]')),
    (pg_temp.cp('c3', 't1', 'c2', 3000, '[{"path": "a/../b", "kind": "dir"}]')),
    (pg_temp.cp('c3', 't1', 'c2', 3000, '[{"path": "a/", "kind": "dir"}]')),
    (pg_temp.cp('c3', 't1', 'c2', 3000, '[{"path": "a", "kind": "dir"}, {"path": "a", "kind": "dir"}]')),
    (pg_temp.cp('c3', 't1', 'c2', 3000, jsonb_build_array(jsonb_build_object('path', 'f', 'kind', 'file', 'blobKey', pg_temp.blob(3), 'size', 1),
                                                          jsonb_build_object('path', 'f/g', 'kind', 'dir')))),
    (pg_temp.cp('c3', 't1', 'c2', 3000, '[{"path": "f", "kind": "file", "blobKey": "sandbox-files/sha256/ABC", "size": 1}]')),
    (pg_temp.cp('c3', 't1', 'c2', 3000, '[{"path": "f", "kind": "link"}]')),
    (pg_temp.cp('c3', 't1', 'c2', 3000, '[]', '[{"artifactId": "a", "name": "n", "mimeType": "m", "size": 1, "blobKey": "elsewhere/a", "createdAt": 1}]')),
    (jsonb_set(pg_temp.cp('c3', 't1', 'c2', 3000), '{createdAt}', '30.5')),
    (pg_temp.cp('c1', 't1', 'c2', 3000)),
    (pg_temp.cp('c3', 't1', 'c1', 3000))) v(c);
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_append(pg_temp.cp('c3', 't1', 'c1', 3000), 'c1', 't1', token, fence, at => '2026-01-01 00:00:42+00') FROM w$$) AS stale_head;
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_append(pg_temp.cp('c3', 't2', 'c2', 3000), 'c2', 't1', token, fence, at => '2026-01-01 00:00:42+00') FROM w$$) AS other_thread;
SELECT * FROM state;

-- Immutable: what get returns is what was appended, also after more appends.
SELECT sandbox_store.checkpoint_get('c1') = pg_temp.cp('c1', 't1', NULL, 1000,
         jsonb_build_array(jsonb_build_object('path', 'src', 'kind', 'dir'),
                           jsonb_build_object('path', 'src/a.ts', 'kind', 'file', 'blobKey', pg_temp.blob(1), 'size', 10),
                           jsonb_build_object('path', 'src/b.ts', 'kind', 'file', 'blobKey', pg_temp.blob(1), 'size', 10))) AS unchanged;
SELECT sandbox_store.checkpoint_get('nope') IS NULL AS missing;

-- Ordering: createdAt, then id as UTF-8 bytes (not the collation's order).
INSERT INTO w SELECT 'order', fence, owner_token FROM sandbox_store.checkpoint_acquire_writer('order', 60000, at => :t0);
DO $$
DECLARE
  wr record;
  prev text;
  c record;
BEGIN
  SELECT * INTO wr FROM w WHERE thread = 'order';
  FOR c IN SELECT * FROM (VALUES (1, 'b', 5), (2, 'é', 5), (3, 'B', 5), (4, 'a', 7), (5, 'z', 1), (6, '日本', 5), (7, 'ab', 5)) v(ord, id, created) ORDER BY ord LOOP
    prev := sandbox_store.checkpoint_append(pg_temp.cp(c.id, 'order', prev, c.created), prev, 'order', wr.token, wr.fence, at => '2026-01-01 00:00:00+00');
  END LOOP;
END $$;
SELECT string_agg(c ->> 'id', ' ' ) AS listed FROM sandbox_store.checkpoint_list('order') c;

-- delete_head: only the head; the head moves to the parent; references
-- drop and keys at zero disappear.
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_delete_head('t1', 'c1', 't1', token, fence, at => '2026-01-01 00:00:43+00') FROM w$$) AS not_head;
SELECT sandbox_store.checkpoint_delete_head('t1', 'c2', 't1', token, fence, at => '2026-01-01 00:00:43+00') AS new_head FROM w WHERE thread = 't1';
SELECT * FROM sandbox_store.checkpoint_blob_references();
SELECT sandbox_store.checkpoint_get('c2') IS NULL AS deleted;
SELECT sandbox_store.checkpoint_delete_head('t1', 'c1', 't1', token, fence, at => '2026-01-01 00:00:44+00') IS NULL AS no_head FROM w WHERE thread = 't1';
SELECT * FROM state;
SELECT * FROM sandbox_store.checkpoint_blob_references();

-- An id is unique over all threads: one stored in another thread is
-- refused (SBC03); a deleted one is free again, in any thread.
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_append(pg_temp.cp('b', 't1', NULL, 3000), NULL, 't1', token, fence, at => '2026-01-01 00:00:45+00') FROM w WHERE thread = 't1'$$) AS id_of_another_thread;
SELECT sandbox_store.checkpoint_append(pg_temp.cp('c2', 'order', 'ab', 8), 'ab', 'order', token, fence, at => '2026-01-01 00:00:45+00') AS reused FROM w WHERE thread = 'order';
SELECT sandbox_store.checkpoint_get('c2') ->> 'threadId' AS reused_in;

-- Expiry and takeover: after 00:01:30 the lease is over.  The old writer's
-- append is refused (SB001); a new writer takes over with a higher fence;
-- the old writer's release does not end it.
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_append(pg_temp.cp('c9', 't1', NULL, 9000), NULL, 't1', token, fence, at => '2026-01-01 00:01:30+00') FROM w WHERE thread = 't1'$$) AS expired;
CREATE TEMP TABLE w2 AS SELECT fence, owner_token AS token
  FROM sandbox_store.checkpoint_acquire_writer('t1', 60000, at => '2026-01-01 00:01:31+00');
SELECT (SELECT fence FROM w2) > (SELECT fence FROM w WHERE thread = 't1') AS higher_fence;
SELECT sandbox_store.checkpoint_release_writer('t1', token, fence) AS stale_release FROM w WHERE thread = 't1';
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_append(pg_temp.cp('c9', 't1', NULL, 9000), NULL, 't1', token, fence, at => '2026-01-01 00:01:32+00') FROM w WHERE thread = 't1'$$) AS stale_writer;
SELECT sandbox_store.checkpoint_append(pg_temp.cp('c9', 't1', NULL, 9000), NULL, 't1', token, fence, at => '2026-01-01 00:01:32+00') FROM w2;
-- The writer's token with a fence it was not given ends nothing: the
-- release below still finds the writer.
SELECT sandbox_store.checkpoint_release_writer('t1', token, fence + 1) AS wrong_fence_release FROM w2;
SELECT sandbox_store.checkpoint_release_writer('t1', token, fence) AS released FROM w2;
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_renew_writer('t1', token, fence, 60000, at => '2026-01-01 00:01:33+00') FROM w2$$) AS renew_after_release;

-- fork: a copy as the fork-root of an empty thread, atomically, under the
-- destination's writer; references bumped.
INSERT INTO w SELECT 'f1', fence, owner_token FROM sandbox_store.checkpoint_acquire_writer('f1', 60000, at => :t0);
SELECT sandbox_store.checkpoint_fork('t1', 'c9', 'f1', 'f1-root', 9500, 'f1', token, fence, at => :t0) FROM w WHERE thread = 'f1';
SELECT c ->> 'id' AS id, c ->> 'threadId' AS thread, c -> 'parentCheckpointId' AS parent, c -> 'createdAt' AS created, c ->> 'reason' AS reason,
       c -> 'conversation' = sandbox_store.checkpoint_get('c9') -> 'conversation' AS same_conversation
  FROM sandbox_store.checkpoint_get('f1-root') c;
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_fork('t1', 'c9', 'f1', 'f1-again', 9600, 'f1', token, fence, at => '2026-01-01 00:00:00+00') FROM w WHERE thread = 'f1'$$) AS not_empty;
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_fork('t1', 'nope', 'f2', 'f2-root', 9600, 'f1', token, fence, at => '2026-01-01 00:00:00+00') FROM w WHERE thread = 'f1'$$) AS wrong_writer;
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_fork('t1', 'c1', 'f1', 'f1-again', 9600, 'f1', token, fence, at => '2026-01-01 00:00:00+00') FROM w WHERE thread = 'f1'$$) AS source_gone;

-- A NULL owner token or fence is no writer: refused like a wrong one.
SELECT pg_temp.err(format($$SELECT sandbox_store.checkpoint_append(pg_temp.cp('n1', 'f1', 'f1-root', 9700), 'f1-root', 'f1', NULL, %s)$$, fence)) AS null_token,
       pg_temp.err(format($$SELECT sandbox_store.checkpoint_append(pg_temp.cp('n1', 'f1', 'f1-root', 9700), 'f1-root', 'f1', %L, NULL)$$, token)) AS null_fence,
       pg_temp.err(format($$SELECT sandbox_store.checkpoint_renew_writer('f1', NULL, %s)$$, fence)) AS renew_null_token,
       pg_temp.err(format($$SELECT sandbox_store.checkpoint_delete_head('f1', 'f1-root', 'f1', %L, NULL)$$, token)) AS delete_null_fence
  FROM w WHERE thread = 'f1';
SELECT sandbox_store.checkpoint_head('f1') AS head_unchanged;
-- A fork's source must be a checkpoint of the source thread, and another
-- thread than the destination.
INSERT INTO w SELECT 'f3', fence, owner_token FROM sandbox_store.checkpoint_acquire_writer('f3', 60000, at => :t0);
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_fork('order', 'c9', 'f3', 'f3-root', 9600, 'f3', token, fence, at => '2026-01-01 00:00:00+00') FROM w WHERE thread = 'f3'$$) AS other_thread,
       pg_temp.err($$SELECT sandbox_store.checkpoint_fork('f1', 'f1-root', 'f1', 'f1-x', 9600, 'f1', token, fence, at => '2026-01-01 00:00:00+00') FROM w WHERE thread = 'f1'$$) AS same_thread,
       pg_temp.err($$SELECT sandbox_store.checkpoint_fork('t1', 'c9', 'f3', 'c2', 9600, 'f3', token, fence, at => '2026-01-01 00:00:00+00') FROM w WHERE thread = 'f3'$$) AS id_of_another_thread;
-- More entries upstream refuses: file fields on a directory, a drive prefix.
SELECT pg_temp.why(format($$SELECT sandbox_store.checkpoint_append(%L, 'f1-root', 'f1', %L, %s)$$, c, token, fence)) AS refused
  FROM w, (VALUES
    (pg_temp.cp('n2', 'f1', 'f1-root', 9800, '[{"path": "d", "kind": "dir", "size": 0}]')),
    (pg_temp.cp('n2', 'f1', 'f1-root', 9800, '[{"path": "C:/x", "kind": "dir"}]'))) v(c)
 WHERE thread = 'f1';

-- Bad arguments: a clear error, nothing changed.
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_acquire_writer('', 1000)$$);
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_acquire_writer(repeat('x', 1001), 1000)$$);
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_acquire_writer('t9', 0)$$);
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_list(NULL)$$);
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_append('[1]', NULL, 't1', gen_random_uuid(), 1)$$);

-- checkpoint_ids holds exactly the stored checkpoints' ids and threads, and
-- the writers are rows of checkpoint_writers, none a claim in leases.
SELECT (SELECT array_agg(ROW(i.id, i.thread_id) ORDER BY i.id COLLATE "C") FROM sandbox_store.checkpoint_ids i)
     = (SELECT array_agg(ROW(c.id, c.thread_id) ORDER BY c.id COLLATE "C") FROM sandbox_store.checkpoints c) AS ids_match,
       (SELECT count(*) FROM sandbox_store.checkpoint_ids) AS ids,
       (SELECT string_agg(thread_id, ' ' ORDER BY thread_id) FROM sandbox_store.checkpoint_writers) AS writers,
       NOT EXISTS (SELECT FROM sandbox_store.leases) AS no_lease;
RESET client_min_messages;

\i sql/include/fresh.sql
-- checkpoint_input: input the checkpoint functions refuse with their
-- documented SQLSTATEs (docs/reference.md, "Sandbox checkpoints"), before
-- anything changes: a createdAt written with a fraction (SBC08, even when
-- the fraction is zero), an artifact blob key too long to index (SBC08), a
-- lease_ms that takes the expiry past the latest timestamp and an infinite
-- at (22023).  Each refusal leaves the writers, checkpoints and blob
-- references as they were.
SET client_min_messages = warning;
CREATE FUNCTION pg_temp.cp(id text, parent text, created jsonb DEFAULT '1000', artifacts jsonb DEFAULT '[]')
RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'threadId', 't1', 'parentCheckpointId', parent,
                            'createdAt', created, 'reason', 'automatic', 'files', '[]'::jsonb,
                            'conversation', '[]'::jsonb, 'artifacts', artifacts)
$$;
CREATE FUNCTION pg_temp.art(blob_key text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_array(jsonb_build_object('artifactId', 'a1', 'name', 'n', 'mimeType', 'text/plain',
                                              'size', 1, 'blobKey', blob_key, 'createdAt', 1))
$$;
-- pg_temp.key(n): an artifact blob key of n bytes that does not compress.
CREATE FUNCTION pg_temp.key(n int) RETURNS text LANGUAGE sql AS $$
  SELECT 'sandbox-artifacts/' || left(string_agg(md5(i::text), '' ORDER BY i), n - 18)
    FROM generate_series(1, n / 32 + 1) i
$$;
-- pg_temp.state(): everything the refused calls could have changed.
CREATE FUNCTION pg_temp.state() RETURNS text LANGUAGE sql AS $$
  SELECT format('writers %s; checkpoints %s; blobs %s',
                (SELECT string_agg(thread_id || ' ' || fence || ' ' || COALESCE(lease_expires_at::text, 'released'), ', ' ORDER BY thread_id)
                   FROM sandbox_store.checkpoint_writers),
                (SELECT string_agg(c ->> 'id', ' ') FROM sandbox_store.checkpoint_list('t1') c),
                (SELECT string_agg(left(key, 20) || '… (' || octet_length(key) || ' bytes)=' || refs, ' ') FROM sandbox_store.checkpoint_blob_references()))
$$;
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
SET TIME ZONE 'UTC';
CREATE TEMP TABLE w AS SELECT fence, owner_token AS token
  FROM sandbox_store.checkpoint_acquire_writer('t1', 60000, at => '2026-01-01 00:00:00+00');
SELECT sandbox_store.checkpoint_append(pg_temp.cp('c1', NULL), NULL, 't1', token, fence, at => '2026-01-01 00:00:01+00') FROM w;
SELECT pg_temp.state() AS before;

-- createdAt: a whole number written as one; 1.0 and 100.00 are refused as
-- entries (SBC08), not left to fail where they are stored.  (1e3 is jsonb's
-- 1000: appended.)
SELECT pg_temp.why(format($$SELECT sandbox_store.checkpoint_append(%L, 'c1', 't1', %L, %s, at => '2026-01-01 00:00:02+00')$$,
                          pg_temp.cp('c2-' || created::text, 'c1', created), token, fence)) AS created_at, created
  FROM w, (VALUES ('1.0'::jsonb), ('100.00'), ('-0.0'), ('1e3')) v(created);
SELECT pg_temp.state() AS after_created_at;

-- An artifact's blob key: at most 1024 bytes (it is a key of the blob
-- references); a longer one is an invalid entry, not an index error.  (The
-- last, of 1024 bytes, is appended.)
SELECT octet_length(k) AS blob_key_bytes,
       pg_temp.why(format($$SELECT sandbox_store.checkpoint_append(%L, 'c2-1000', 't1', %L, %s, at => '2026-01-01 00:00:03+00')$$,
                          pg_temp.cp('c3-' || octet_length(k), 'c2-1000', '1000', pg_temp.art(k)), token, fence)) AS artifact
  FROM w, (VALUES (pg_temp.key(3800)), ('sandbox-artifacts/' || repeat('é', 504)),
                  (pg_temp.key(1025)), (pg_temp.key(1024))) v(k);
SELECT pg_temp.state() AS after_blob_keys;

-- lease_ms past the latest timestamp: 22023, as for a lease that is too
-- long; the writer stays as it was.
SELECT pg_temp.err(q) AS lease_ms FROM w, LATERAL (VALUES
  ($$SELECT sandbox_store.checkpoint_acquire_writer('t2', 9223372036854775807)$$),
  ($$SELECT sandbox_store.checkpoint_acquire_writer('t2', 2000, at => '294276-12-31 23:59:59+00')$$),
  (format($$SELECT sandbox_store.checkpoint_renew_writer('t1', %L, %s, 9223372036854775807, at => '2026-01-01 00:00:04+00')$$, token, fence)),
  (format($$SELECT sandbox_store.checkpoint_renew_writer('t1', %L, %s, 9223372036854775, at => '2026-01-01 00:00:04+00')$$, token, fence)),
  (format($$SELECT sandbox_store.checkpoint_renew_writer('t1', %L, %s, 2000, at => '294276-12-31 23:59:59+00')$$, token, fence))) v(q);
SELECT pg_temp.state() AS after_lease_ms;

-- at: a finite timestamp (an infinite one would make a writer that never
-- expires, or one that is always expired).
SELECT pg_temp.err(q) AS at FROM w, LATERAL (VALUES
  ($$SELECT sandbox_store.checkpoint_acquire_writer('t2', 1000, at => 'infinity')$$),
  ($$SELECT sandbox_store.checkpoint_acquire_writer('t2', 1000, at => '-infinity')$$),
  (format($$SELECT sandbox_store.checkpoint_renew_writer('t1', %L, %s, 1000, at => 'infinity')$$, token, fence)),
  (format($$SELECT sandbox_store.checkpoint_append(%L, 'c3-1024', 't1', %L, %s, at => '-infinity')$$, pg_temp.cp('c4', 'c3-1024'), token, fence)),
  (format($$SELECT sandbox_store.checkpoint_delete_head('t1', 'c3-1024', 't1', %L, %s, at => 'infinity')$$, token, fence)),
  (format($$SELECT sandbox_store.checkpoint_fork('t1', 'c1', 't3', 'c5', 1000, 't3', %L, %s, at => '-infinity')$$, token, fence))) v(q);
SELECT pg_temp.state() AS after_at;

-- The writer is still live, and its writes go through.
SELECT pg_temp.err($$SELECT sandbox_store.checkpoint_acquire_writer('t1', 1000, at => '2026-01-01 00:00:30+00')$$) AS live_writer;
SELECT sandbox_store.checkpoint_append(pg_temp.cp('c9', sandbox_store.checkpoint_head('t1'), '2000'), sandbox_store.checkpoint_head('t1'),
                                       't1', token, fence, at => '2026-01-01 00:00:31+00') AS appended FROM w;
SELECT pg_temp.state() AS after_all;

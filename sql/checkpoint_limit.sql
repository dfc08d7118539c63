\i sql/include/fresh.sql
-- checkpoint_limit: sandbox_store.max_checkpoint_bytes (docs/reference.md,
-- "Memory and sandbox_store.max_checkpoint_bytes").  A checkpoint larger
-- than the setting is refused with SBC08 before anything else is done with
-- it, by checkpoint_append (the checkpoint given) and checkpoint_fork (the
-- stored source), and changes nothing; one at or under it is appended; unset,
-- RESET or 0 means no limit.  The setting is read the same way in both
-- editions (in the C edition it is the library's setting, in bytes; in the
-- SQL edition a placeholder).
SET client_min_messages = warning;
SET TIME ZONE 'UTC';
-- pg_temp.cp(id, parent, n): a checkpoint whose label holds n bytes that do
-- not compress.
CREATE FUNCTION pg_temp.cp(id text, parent text, n int) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'threadId', 't1', 'parentCheckpointId', parent,
                            'createdAt', 1000, 'reason', 'named', 'files', '[]'::jsonb,
                            'conversation', '[]'::jsonb, 'artifacts', '[]'::jsonb,
                            'label', (SELECT left(string_agg(md5(i::text), '' ORDER BY i), n)
                                        FROM generate_series(1, n / 32 + 1) i))
$$;
-- pg_temp.why(q): 'ok', or the error's SQLSTATE and detail (the checkpoint's size as N).
CREATE FUNCTION pg_temp.why(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  d text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || regexp_replace(d, 'is [0-9]+ bytes', 'is N bytes');
END $$;
CREATE FUNCTION pg_temp.state() RETURNS text LANGUAGE sql AS $$
  SELECT format('head %s; t1 %s; t2 %s', (SELECT sandbox_store.checkpoint_head('t1')),
                (SELECT count(*) FROM sandbox_store.checkpoint_list('t1')),
                (SELECT count(*) FROM sandbox_store.checkpoint_list('t2')))
$$;
CREATE TEMP TABLE w AS SELECT fence, owner_token AS token
  FROM sandbox_store.checkpoint_acquire_writer('t1', 600000);
CREATE TEMP TABLE w2 AS SELECT fence, owner_token AS token
  FROM sandbox_store.checkpoint_acquire_writer('t2', 600000);
CREATE FUNCTION pg_temp.append(id text, parent text, n int) RETURNS text LANGUAGE sql AS $$
  SELECT pg_temp.why(format($q$SELECT sandbox_store.checkpoint_append(%L, %L, 't1', %L, %s)$q$,
                            pg_temp.cp(id, parent, n), parent, token, fence))
    FROM w
$$;

-- Unset: no limit.
SELECT current_setting('sandbox_store.max_checkpoint_bytes', true) IN ('0', '0B') OR
       current_setting('sandbox_store.max_checkpoint_bytes', true) IS NULL AS unset;
SELECT pg_temp.append('c1', NULL, 20000) AS big_unlimited;

-- 4kB: a checkpoint of about 2 kB is appended, one of about 6 kB refused
-- before it is looked at, and nothing changes.
SET sandbox_store.max_checkpoint_bytes = '4kB';
SELECT current_setting('sandbox_store.max_checkpoint_bytes', true) AS setting;
SELECT pg_temp.append('c2', 'c1', 2000) AS under;
SELECT pg_temp.append('c3', 'c2', 6000) AS over;
SELECT pg_temp.state() AS after_over;
-- Refused before the entries are checked: an over-size checkpoint that is
-- also invalid gets the size's detail.
SELECT pg_temp.why(format($q$SELECT sandbox_store.checkpoint_append(%L, 'c2', 't1', %L, %s)$q$,
                          pg_temp.cp('c3', 'c2', 6000) - 'conversation', token, fence)) AS over_and_invalid
  FROM w;

-- In bytes, without a unit.
SET sandbox_store.max_checkpoint_bytes = 100000;
SELECT pg_temp.append('c3', 'c2', 6000) AS under_bytes;
SET sandbox_store.max_checkpoint_bytes = 5000;
SELECT pg_temp.append('c4', 'c3', 6000) AS over_bytes;

-- A fork: the stored source's size counts (c1 holds 20000 bytes that do not
-- compress).
SELECT pg_temp.why(format($q$SELECT sandbox_store.checkpoint_fork('t1', 'c1', 't2', 'f1', 2000, 't2', %L, %s)$q$,
                          token, fence)) AS fork_over
  FROM w2;
SELECT pg_temp.state() AS after_fork_over;
SELECT pg_temp.why(format($q$SELECT sandbox_store.checkpoint_fork('t1', 'c2', 't2', 'f1', 2000, 't2', %L, %s)$q$,
                          token, fence)) AS fork_under
  FROM w2;

-- 0 and RESET: no limit.
SET sandbox_store.max_checkpoint_bytes = 0;
SELECT pg_temp.append('c4', 'c3', 20000) AS zero_unlimited;
SET sandbox_store.max_checkpoint_bytes = '1kB';
RESET sandbox_store.max_checkpoint_bytes;
SELECT pg_temp.append('c5', 'c4', 20000) AS reset_unlimited;
SELECT pg_temp.state() AS final;

-- The boundary: a checkpoint of exactly the setting's size is appended (at
-- or under it), one a byte larger is refused.
SELECT pg_column_size(pg_temp.cp('c6', 'c5', 3000)) AS c6_bytes,
       pg_column_size(pg_temp.cp('c6', 'c5', 3000)) - 1 AS c6_bytes_less_one \gset
SET sandbox_store.max_checkpoint_bytes = :c6_bytes_less_one;
SELECT pg_temp.append('c6', 'c5', 3000) AS one_byte_over;
SET sandbox_store.max_checkpoint_bytes = :c6_bytes;
SELECT pg_temp.append('c6', 'c5', 3000) AS exactly_the_setting;
SELECT pg_temp.state() AS after_boundary;

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


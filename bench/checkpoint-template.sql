-- bench/checkpoint-template.sql: the checkpoint bench/checkpoints.sh and
-- bench/profile-checkpoints.sh write in every call (its id, thread and
-- parent set per call): 200 conversation messages of about 500 bytes each
-- and 50 file entries, about 110 kB of JSON that TOAST compresses; and its
-- blob keys, each once, by bytes (what the bare insert stores, computed
-- once here).
CREATE TABLE template (c jsonb, keys text[]);
INSERT INTO template (c) SELECT jsonb_build_object(
  'id', 'x', 'threadId', 'x', 'parentCheckpointId', NULL, 'createdAt', 1700000000000, 'reason', 'automatic',
  'conversation', (SELECT jsonb_agg(jsonb_build_object('role', CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END,
                                                       'content', repeat(md5(i::text), 15)))
                     FROM generate_series(1, 200) i),
  'files', (SELECT jsonb_agg(jsonb_build_object('path', 'src/file' || i || '.ts', 'kind', 'file', 'size', 1000 + i,
                                                'blobKey', 'sandbox-files/sha256/' || encode(sha256(i::text::bytea), 'hex')))
              FROM generate_series(1, 50) i),
  'artifacts', '[]'::jsonb);
UPDATE template SET keys = ARRAY(SELECT DISTINCT e ->> 'blobKey' COLLATE "C" FROM jsonb_array_elements(c -> 'files') e
                                  WHERE e ? 'blobKey' ORDER BY 1);

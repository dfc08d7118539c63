\i sql/include/fresh.sql
-- checkpoint_limit_role (C edition): sandbox_store.max_checkpoint_bytes is
-- a superuser setting (PGC_SUSET, docs/reference.md "Settings"), so an app
-- role granted the README's two lines must not be able to lift it for
-- itself.  A new session has not loaded the library until it calls a C
-- function; the checkpoint functions are PL/pgSQL, so there the name is only
-- a placeholder that any role may SET, and current_setting() reads that.
-- The checkpoint functions read it through a C function, which loads the
-- library: the app role's earlier value is dropped with a WARNING, and the
-- over-size append is refused with SBC08.
SELECT current_user AS sb_super \gset
SET client_min_messages = warning;
CREATE ROLE regress_sb_limit_app LOGIN;
GRANT USAGE ON SCHEMA sandbox_store TO regress_sb_limit_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO regress_sb_limit_app;
ALTER DATABASE :"DBNAME" SET sandbox_store.max_checkpoint_bytes = '4kB';
CREATE TABLE public.regress_sb_limit_writer AS
  SELECT fence, owner_token FROM sandbox_store.checkpoint_acquire_writer('lim-t', 600000);
GRANT SELECT ON public.regress_sb_limit_writer TO regress_sb_limit_app;

-- A new session of the app role, which has loaded no library yet.
\c - regress_sb_limit_app
SET client_min_messages = error;
DO $$ BEGIN
  PERFORM set_config('sandbox_store.max_checkpoint_bytes', '0', false);
EXCEPTION WHEN OTHERS THEN NULL;
END $$;
SET client_min_messages = notice;
DO $$
DECLARE
  w record;
  big jsonb := jsonb_build_object('id', 'lim-c1', 'threadId', 'lim-t', 'parentCheckpointId', NULL,
                 'createdAt', 1000, 'reason', 'named', 'files', '[]'::jsonb,
                 'conversation', '[]'::jsonb, 'artifacts', '[]'::jsonb,
                 'label', (SELECT string_agg(md5(i::text), '' ORDER BY i) FROM generate_series(1, 400) i));
BEGIN
  SELECT * INTO w FROM public.regress_sb_limit_writer;
  PERFORM sandbox_store.checkpoint_append(big, NULL, 'lim-t', w.owner_token, w.fence);
  RAISE NOTICE 'appended: the limit was bypassed';
EXCEPTION WHEN SQLSTATE 'SBC08' THEN
  RAISE NOTICE 'refused: %', SQLSTATE;
END $$;

\c - :sb_super
SET client_min_messages = warning;
SELECT count(*) AS stored FROM sandbox_store.checkpoints;
ALTER DATABASE :"DBNAME" RESET sandbox_store.max_checkpoint_bytes;
DROP TABLE public.regress_sb_limit_writer;
REVOKE ALL ON SCHEMA sandbox_store FROM regress_sb_limit_app;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store FROM regress_sb_limit_app;
DROP ROLE regress_sb_limit_app;

-- sql/include/reinstall.sql: drop sandbox_store and install it again, in
-- the edition SB_EDITION names (c when unset, pg_tle, or plain; set by
-- test/scripts/with-sql-edition.sh).  The plain script is run with psql;
-- the C edition and the SQL edition through pg_tle are extensions.  Used by
-- fresh.sql, and by tests that put the extension back as it was.
SET client_min_messages = warning;
\getenv sb_edition SB_EDITION
\if :{?sb_edition}
\else
\set sb_edition c
\endif
SELECT :'sb_edition' OPERATOR(pg_catalog.=) 'plain' AS sb_plain \gset
\if :sb_plain
\getenv sb_plain_script SB_PLAIN_SCRIPT
DROP SCHEMA IF EXISTS sandbox_store, sandbox_store_internal CASCADE;
\i :sb_plain_script
\else
DROP EXTENSION IF EXISTS sandbox_store CASCADE;
CREATE EXTENSION sandbox_store;
\endif
RESET client_min_messages;

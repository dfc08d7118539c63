-- The schema of the internal helper functions (the names that start with an
-- underscore).  No role but its owner, the role that installed
-- sandbox_store, has USAGE on it, and nobody is granted its functions: the
-- interface functions call them as their owner.  An app role that was
-- granted every function of schema sandbox_store (GRANT EXECUTE ON ALL
-- FUNCTIONS IN SCHEMA sandbox_store) can call the documented interface and
-- nothing else.  The install script makes it (CREATE SCHEMA fails if a
-- schema of that name exists: nobody can lay one out beforehand), and
-- DROP EXTENSION drops it with the extension.
CREATE SCHEMA sandbox_store_internal;
COMMENT ON SCHEMA sandbox_store_internal IS
'Internal helper functions of sandbox_store: no role but the owner may use them.';

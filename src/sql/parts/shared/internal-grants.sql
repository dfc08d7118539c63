-- The internal helpers: nobody but the owner (an update script runs this
-- too, for the helpers it makes).
REVOKE ALL ON SCHEMA sandbox_store_internal FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sandbox_store_internal FROM PUBLIC;

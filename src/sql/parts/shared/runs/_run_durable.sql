-- A claim of a run (run_claim, or run_update raising driverEpoch) commits
-- durably whatever the session's synchronous_commit: off is raised to
-- local for the rest of the transaction, so a claim whose commit the
-- caller saw is never lost in a crash (another claim would then be given
-- the same number by run_update's patch, or the previous driver would go
-- on while the caller believes it drives the run).
CREATE FUNCTION sandbox_store_internal._run_durable()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'local', true);
    END IF;
END
$$;

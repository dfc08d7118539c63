-- SB001 for a write of run_id that carried epoch given (NULL: none) while
-- the run's driver_epoch is current_epoch (NULL: none) and the highest
-- epoch it ever had is highest (NULL: never claimed; has_record: whether
-- the run has a runs row).
CREATE FUNCTION sandbox_store_internal._run_stale(run_id pg_catalog.text, given pg_catalog.int8,
                                                 current_epoch pg_catalog.int8, highest pg_catalog.int8,
                                                 has_record pg_catalog.bool)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sandbox_store_internal._raise('SB001',
        format('the driver epoch of run %s is not current', to_jsonb(_run_stale.run_id)),
        CASE WHEN given IS NULL AND current_epoch IS NOT NULL
             THEN format('The write carried no epoch, and a driver has claimed the run: its current epoch is %s.  Nothing was changed.',
                         current_epoch)
             WHEN given IS NULL
             THEN format('The write carried no epoch, and a driver has claimed the run: its epoch was cleared (the highest it had is %s).  Nothing was changed.',
                         highest)
             WHEN NOT has_record
             THEN format('The write carried epoch %s, and the run has no record: it was never claimed (no current epoch).  Nothing was changed.',
                         given)
             WHEN current_epoch IS NULL AND highest IS NOT NULL
             THEN format('The write carried epoch %s, and the run has no current epoch: it was cleared (the highest it had is %s).  Nothing was changed.',
                         given, highest)
             WHEN current_epoch IS NULL
             THEN format('The write carried epoch %s, and the run was never claimed (no current epoch).  Nothing was changed.',
                         given)
             ELSE format('The write carried epoch %s; the current epoch is %s.  Nothing was changed.', given, current_epoch) END);
END
$$;

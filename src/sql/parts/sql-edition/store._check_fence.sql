-- A fenced write goes through only with the fence of the key's current
-- claim: the key's newest fence, its claim still set.  SB001 otherwise.
CREATE FUNCTION sandbox_store_internal._check_fence(k pg_catalog.text, f pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    newest pg_catalog.int8;
    is_claimed boolean;
BEGIN
    SELECT l.fence, l.owner_token IS NOT NULL INTO newest, is_claimed
      FROM ONLY sandbox_store.leases l
     WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
    IF NOT FOUND THEN
        -- (REPEATABLE READ: a claim committed after the snapshot is 40001.)
        IF sandbox_store_internal._snapshot_isolation() THEN
            PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
        END IF;
        newest := 0;
        is_claimed := false;
    END IF;
    IF newest > f THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'old', f, newest);
    ELSIF newest <> f THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'foreign', f, newest);
    ELSIF NOT is_claimed THEN
        PERFORM sandbox_store_internal._claim_lost(k, 'ended', f, newest);
    END IF;
END
$$;

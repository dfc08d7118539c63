-- Retire the key's expired claim (a lock-mode caller took the key over): a
-- new fence, no token.  False if the claim was renewed or released since it
-- was seen.
CREATE FUNCTION sandbox_store_internal._retire(k pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE plpgsql
AS $$
DECLARE
    newest pg_catalog.int8;
    is_claimed boolean;
BEGIN
    BEGIN
        SELECT l.fence, l.owner_token IS NOT NULL INTO newest, is_claimed
          FROM ONLY sandbox_store.leases l
         WHERE l.key OPERATOR(pg_catalog.=) k FOR SHARE;
    EXCEPTION WHEN serialization_failure THEN
        PERFORM sandbox_store_internal._changed(k, 'claim');
    END;
    IF is_claimed THEN
        UPDATE ONLY sandbox_store.leases l
           SET fence = GREATEST(l.fence + 1, sandbox_store_internal._draw_fence(newest)),
               owner_token = NULL, lease_expires_at = NULL
         WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL
           AND l.lease_expires_at OPERATOR(pg_catalog.<=) clock_timestamp();
        IF FOUND THEN
            RETURN true;
        END IF;
    END IF;
    IF sandbox_store_internal._snapshot_isolation() THEN
        PERFORM sandbox_store_internal._changed(k, 'claim');
    END IF;
    RETURN false;
END
$$;

-- Take the key's lock if it is free now (no other transaction's lock, no
-- live claim; an expired claim is retired).  False leaves nothing held.
CREATE FUNCTION sandbox_store_internal._try_take(k pg_catalog.text, lock_id pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql
AS $$
DECLARE
    c_fence pg_catalog.int8;
    c_live boolean;
BEGIN
    IF pg_is_in_recovery() THEN
        PERFORM sandbox_store_internal._refuse_on_standby(k);
    END IF;
    LOOP
        c_fence := NULL;
        BEGIN
            IF NOT pg_try_advisory_xact_lock(lock_id) THEN
                RETURN false;
            END IF;
            IF sandbox_store_internal._snapshot_isolation() THEN
                PERFORM sandbox_store_internal._probe_hidden(k, 'claim');
            END IF;
            SELECT l.fence, l.lease_expires_at OPERATOR(pg_catalog.>) clock_timestamp()
              INTO c_fence, c_live
              FROM ONLY sandbox_store.leases l
             WHERE l.key OPERATOR(pg_catalog.=) k AND l.owner_token IS NOT NULL;
            IF c_live THEN
                RAISE EXCEPTION USING ERRCODE = 'SBW01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'SBW01' THEN
            RETURN false;
        END;
        IF c_fence IS NULL OR sandbox_store_internal._retire(k) THEN
            RETURN true;
        END IF;
    END LOOP;
END
$$;

-- SB001, the ways a claim is lost.
CREATE FUNCTION sandbox_store_internal._claim_lost(k pg_catalog.text, how pg_catalog.text,
                                          f pg_catalog.int8, newest pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF how = 'token' THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = 'The owner token does not hold the key''s claim: it was released, or its lease expired and the key was taken over.  Nothing was changed.',
            HINT = 'Take a new claim with sandbox_claim or sandbox_ensure.';
    ELSIF how = 'old' THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The write is fenced with %s, but the key has fence %s since it was claimed or taken over again.  Nothing was changed.', f, newest),
            HINT = 'Stop writing for this key.';
    ELSIF how = 'foreign' AND newest = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The write is fenced with %s, but the key was never claimed.  Nothing was changed.', f),
            HINT = 'Fence a write with the fence of a claim on the same key.';
    ELSIF how = 'foreign' THEN
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The write is fenced with %s, which was never given for this key (its fence is %s).  Nothing was changed.', f, newest),
            HINT = 'Fence a write with the fence of a claim on the same key.';
    ELSE
        RAISE EXCEPTION USING ERRCODE = 'SB001',
            MESSAGE = format('claim on sandbox key "%s" was lost', k),
            DETAIL = format('The claim that was given fence %s has ended: it was released.  Nothing was changed.', f),
            HINT = 'If this retries a write whose acknowledgement was lost, read the record with sandbox_get to see whether the first attempt landed.  Otherwise take a new claim.';
    END IF;
END
$$;

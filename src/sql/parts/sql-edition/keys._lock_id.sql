-- The key's lock id: FNV-1a over the key's bytes in the database encoding,
-- as the C edition computes it, on two 32-bit halves (bigint arithmetic
-- must not overflow).  The prime is 2^40 + 435.
CREATE FUNCTION sandbox_store_internal._lock_id(k pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    b pg_catalog.bytea := pg_catalog.convert_to(k, pg_catalog.getdatabaseencoding());
    -- the hash, its halves hi and lo in one bigint: hi << 32 | lo (<< wraps
    -- into the sign bit; >> keeps the sign, hence the mask)
    h pg_catalog.int8 := (3421674724::pg_catalog.int8 << 32) | 2216829733;
    t pg_catalog.int8;    -- lo xor the byte; (t << 8) is t * 2^40 in hi (mod 2^32)
BEGIN
    FOR i IN 0 .. pg_catalog.length(b) - 1 LOOP
        t := (h & 4294967295) # pg_catalog.get_byte(b, i);
        h := ((((h >> 32) & 4294967295) * 435 + ((t * 435) >> 32) + (t << 8)) << 32) | ((t * 435) & 4294967295);
    END LOOP;
    RETURN h;
END
$$;

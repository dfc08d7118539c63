-- The key's lock id: FNV-1a over the key's bytes in the database encoding,
-- as the C edition computes it, in one statement a byte.  y is the hash
-- xor the byte, its multiplication by the prime (2^40 + 435) still to do:
-- it starts at the offset basis divided by the prime (mod 2^64), and a 0
-- byte after the key's does the last multiplication.  The product is made
-- of y's 32-bit halves (bigint arithmetic must not overflow; << wraps into
-- the sign bit, >> keeps it, hence the masks).
CREATE FUNCTION sandbox_store_internal._lock_id(k pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    b pg_catalog.bytea := pg_catalog.convert_to(k, pg_catalog.getdatabaseencoding()) || E'\\x00'::pg_catalog.bytea;
    y pg_catalog.int8 := 2094230015291517895;
BEGIN
    FOR i IN 0 .. pg_catalog.octet_length(k) LOOP
        y := ((((y >> 32) * 435 + (((y & 4294967295) * 435) >> 32) + ((y & 4294967295) << 8)) << 32)
              | (((y & 4294967295) * 435) & 4294967295)) # pg_catalog.get_byte(b, i);
    END LOOP;
    RETURN y;
END
$$;

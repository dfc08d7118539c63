-- The value of key in a run_update patch that must be a finite number (a
-- JSON number that a float8 holds) or null (returned as NULL); 22023
-- otherwise.
CREATE FUNCTION sandbox_store_internal._run_patch_number(patch pg_catalog.jsonb, key pg_catalog.text)
RETURNS pg_catalog.float8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v pg_catalog.jsonb := patch -> key;
BEGIN
    IF jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) = 'number' THEN
        BEGIN
            RETURN (patch ->> key)::pg_catalog.float8;
        EXCEPTION WHEN numeric_value_out_of_range THEN
            NULL;
        END;
    END IF;
    PERFORM sandbox_store_internal._raise('22023', format('invalid patch key %s', key),
        format('%s is a number of milliseconds (a finite JavaScript number) or null; the value given is %s.', key,
               CASE WHEN jsonb_typeof(v) OPERATOR(pg_catalog.=) 'number' THEN 'a number out of range' ELSE v::pg_catalog.text END));
    RETURN NULL;
END
$$;

-- sandbox_store.max_checkpoint_bytes in bytes (0: not set, or no limit).
-- Without a library it is a placeholder: a text that any role may set,
-- read here as a size with or without a unit (kB, MB, GB).
CREATE FUNCTION sandbox_store_internal._max_checkpoint_bytes()
RETURNS pg_catalog.int8
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting pg_catalog.text := btrim(current_setting('sandbox_store.max_checkpoint_bytes', true));
BEGIN
    IF setting IS NULL OR setting = '' THEN
        RETURN 0;
    END IF;
    -- (a block with an exception handler only when there is a value to read)
    BEGIN
        RETURN pg_size_bytes(regexp_replace(setting, '^([0-9]+) *B$', E'\\1 bytes'));
    EXCEPTION WHEN invalid_parameter_value OR numeric_value_out_of_range THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('invalid value for sandbox_store.max_checkpoint_bytes: %s', to_jsonb(setting)),
            DETAIL = 'It is a size in bytes, with or without a unit (kB, MB, GB), such as 104857600 or 100MB; 0 means no limit.',
            HINT = 'Set it to a valid size, or RESET it.';
    END;
END
$$;

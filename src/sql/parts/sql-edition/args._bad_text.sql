-- A text argument that is NULL (when required), empty or over @MAX_TEXT_BYTES@ bytes; a
-- key that is reserved (starts with E'\x01': the extension's own claims, such
-- as a thread's checkpoint writer on E'\x01checkpoint-writer\x01' || thread).
CREATE FUNCTION sandbox_store_internal._bad_text(v pg_catalog.text, arg pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF v IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = format('%s must not be null', arg);
    END IF;
    IF octet_length(v) = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('%s must not be empty', arg);
    END IF;
    IF arg = 'key' AND octet_length(v) <= @MAX_TEXT_BYTES@ AND starts_with(v, E'\x01') THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'key is reserved',
            DETAIL = E'Keys that start with E''\\x01'' are reserved for the extension''s own claims, such as the checkpoint writers''.',
            HINT = 'Use a key that does not start with the byte 0x01.';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'string_data_right_truncation',
        MESSAGE = format('%s is too long', arg),
        DETAIL = format('The value has %s bytes; at most @MAX_TEXT_BYTES@ are allowed.', octet_length(v));
END
$$;

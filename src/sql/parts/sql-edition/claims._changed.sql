-- 40001 in our words, at REPEATABLE READ or SERIALIZABLE.
CREATE FUNCTION sandbox_store_internal._changed(k pg_catalog.text, what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'serialization_failure',
        MESSAGE = format('could not serialize access to sandbox key "%s"', k),
        DETAIL = format('The key''s %s was changed by a transaction that committed after this transaction''s snapshot was taken.', what),
        HINT = 'Retry the transaction, or run it at READ COMMITTED.';
END
$$;

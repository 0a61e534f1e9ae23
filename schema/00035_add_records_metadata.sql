-- +goose Up
-- records.metadata: the producer's own string-to-string map of an intent
-- (order id, tenant, campaign tags), returned with the notification and in
-- its status callbacks. NULL when the intent carries none, so that intents
-- without metadata store nothing more than before. Package intake holds
-- the budget (32 keys of 1-64 characters of [A-Za-z0-9_.:-], values of at
-- most 512 bytes, 4 KiB in all); the check below repeats its shape, with
-- room, for whatever writes the table directly: an object of 1 to 32
-- strings whose text stays small.
ALTER TABLE herald.records
    ADD COLUMN metadata jsonb,
    ADD CONSTRAINT records_metadata_check CHECK (metadata IS NULL OR (
        jsonb_typeof(metadata) = 'object'
        AND octet_length(metadata::text) <= 8192
        AND jsonb_array_length(jsonb_path_query_array(metadata, '$.*')) BETWEEN 1 AND 32
        AND NOT jsonb_path_exists(metadata, '$.* ? (@.type() != "string")')));
COMMENT ON COLUMN herald.records.metadata IS
    'The producer''s metadata of the intent: an object of string values, returned with the notification and in its status callbacks. NULL when the intent carried none.';

-- +goose Down
ALTER TABLE herald.records DROP COLUMN metadata;

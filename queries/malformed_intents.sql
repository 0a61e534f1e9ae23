-- name: MalformedIntentInsertMany :exec
-- Records the intake entries the validator refused, one statement per batch.
-- stream_entry_id is "intake:<id>" of the intake row; the intake's identity
-- never repeats a value, so the primary key cannot conflict.
INSERT INTO herald.malformed_intents (
    stream_entry_id, notification_type, producer, idempotency_key,
    failure_code, failure_message, raw_fields, recorded_at
)
SELECT
    unnest(@stream_entry_ids::text[]),
    unnest(@notification_types::text[]),
    unnest(@producers::text[]),
    unnest(@idempotency_keys::text[]),
    unnest(@failure_codes::text[]),
    unnest(@failure_messages::text[]),
    unnest(@raw_fields::jsonb[]),
    coalesce(sqlc.narg('now')::timestamptz, now());

-- name: MalformedIntentGet :one
-- One malformed entry by its stream entry id.
SELECT *
FROM herald.malformed_intents
WHERE stream_entry_id = @stream_entry_id;

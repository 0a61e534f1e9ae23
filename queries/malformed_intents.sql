-- Queries of herald.malformed_intents: the intake entries the validator or
-- the database refused, kept for an operator (`herald malformed`) until
-- malformed-intent retention deletes them.

-- name: MalformedIntentInsertMany :exec
-- Records the intake entries the validator refused, one statement per batch.
-- stream_entry_id is "intake:<id>" of the intake row; the intake's identity
-- never repeats a value, so the primary key cannot conflict. submitted_by is
-- the login that inserted the entry (herald.intake.submitted_by), by which a
-- producer's login reads its own refusals; omitted (a nil array), it is '',
-- the column's default, as for rows recorded before the intake kept it.
INSERT INTO herald.malformed_intents (
    stream_entry_id, notification_type, producer, idempotency_key,
    failure_code, failure_message, raw_fields, submitted_by, recorded_at
)
SELECT
    e.stream_entry_id, e.notification_type, e.producer, e.idempotency_key,
    e.failure_code, e.failure_message, e.raw_fields, coalesce(e.submitted_by, ''),
    coalesce(sqlc.narg('now')::timestamptz, now())
FROM (
    -- Arrays unnested side by side run in step; a shorter (or NULL) one is
    -- padded with NULLs.
    SELECT
        unnest(@entry_refs::text[]) AS stream_entry_id,
        unnest(@notification_types::text[]) AS notification_type,
        unnest(@producers::text[]) AS producer,
        unnest(@idempotency_keys::text[]) AS idempotency_key,
        unnest(@failure_codes::text[]) AS failure_code,
        unnest(@failure_messages::text[]) AS failure_message,
        unnest(@raw_fields::jsonb[]) AS raw_fields,
        unnest(@submitted_bys::text[]) AS submitted_by
) AS e;

-- name: MalformedIntentGet :one
-- One malformed entry by its intake entry's reference, "intake:<id>".
SELECT *
FROM herald.malformed_intents
WHERE stream_entry_id = @entry_ref;

-- name: MalformedIntentList :many
-- One page of malformed intake entries, newest first, along
-- malformed_intents_listing_idx, with a keyset cursor (after_*).
SELECT
    m.stream_entry_id, m.recorded_at, m.failure_code, m.failure_message,
    m.producer, m.notification_type, m.idempotency_key
FROM herald.malformed_intents m
WHERE (sqlc.narg('producer')::text IS NULL OR m.producer = sqlc.narg('producer')::text)
    AND (sqlc.narg('failure_code')::text IS NULL OR m.failure_code = sqlc.narg('failure_code')::text)
    AND (sqlc.narg('since')::timestamptz IS NULL OR m.recorded_at >= sqlc.narg('since')::timestamptz)
    AND (sqlc.narg('after_recorded_at')::timestamptz IS NULL
        OR (m.recorded_at, m.stream_entry_id)
            < (sqlc.narg('after_recorded_at')::timestamptz, sqlc.narg('after_entry_ref')::text))
ORDER BY m.recorded_at DESC, m.stream_entry_id DESC
LIMIT @max::integer;

-- name: MalformedIntentDeleteBefore :execrows
-- Malformed-intent retention: deletes up to @batch_size malformed intents
-- recorded before @recorded_before, oldest first along
-- malformed_intents_listing_idx.
DELETE FROM herald.malformed_intents m
WHERE m.stream_entry_id IN (
    SELECT stream_entry_id
    FROM herald.malformed_intents
    WHERE recorded_at < @recorded_before::timestamptz
    ORDER BY recorded_at
    LIMIT @batch_size::integer
    FOR UPDATE SKIP LOCKED
);

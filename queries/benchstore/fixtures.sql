-- Statements tests use to set the scene or read it back, which the engine
-- itself never runs.

-- name: IntakeInsertMany :exec
-- Inserts raw entries, as a producer would; one statement, so the intake's
-- statement trigger sends one herald_intake hint.
INSERT INTO herald.intake (body)
SELECT unnest(@bodies::text[]);

-- name: RouteDeadLetterMany :execrows
-- Dead-letters the pending routes of the given records, as the dispatcher
-- would, so tests can seed thousands of dead letters in one statement.
WITH moved AS (
    UPDATE herald.routes r
    SET status = 'dead_letter',
        next_attempt_at = NULL,
        attempt_count = @attempts::integer,
        last_error_classification = @classification::text,
        last_error_message = @message::text,
        last_error_at = coalesce(sqlc.narg('now')::timestamptz, now()),
        dead_lettered_at = coalesce(sqlc.narg('now')::timestamptz, now()),
        updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
    WHERE r.notification_id = ANY(@notification_ids::text[])
        AND r.status IN ('pending', 'failed')
    RETURNING r.notification_id, r.route_id, r.channel, r.recipient_ref, r.attempt_count, r.max_attempts
)
INSERT INTO herald.dead_letters (
    notification_id, route_id, channel, recipient_ref, final_attempt_count, max_attempts,
    failure_classification, failure_message, recovery_hint, created_at
)
SELECT notification_id, route_id, channel, recipient_ref, attempt_count, max_attempts,
    @classification::text, @message::text, @recovery_hint::text,
    coalesce(sqlc.narg('now')::timestamptz, now())
FROM moved;

-- name: DeadLetterListByNotification :many
-- The dead letters of one notification, by route: reads the primary key's
-- prefix.
SELECT *
FROM herald.dead_letters
WHERE notification_id = @notification_id
ORDER BY route_id;

-- name: HeldIntentList :many
-- Held intents, oldest first, after the cursor @after_id (0: from the
-- start): what `herald held list` shows.
SELECT id, producer, idempotency_key, notification_type, rule, part, submitted_by, held_at
FROM herald.held_intents
WHERE id > @after_id::bigint
ORDER BY id
LIMIT @max::integer;

-- name: HeldIntentRelease :many
-- Releases held intents back onto the intake, reviewed, with an audit row
-- (schema function herald.held_release).
-- intake_id is 0 for a stored notification's held routes, which go back
-- into their channel's queue instead.
SELECT held_id::bigint AS held_id, coalesce(intake_id, 0)::bigint AS intake_id
FROM herald.held_release(@ids::bigint[], @actor::text, @reason::text);

-- name: HeldIntentReject :many
-- Rejects held intents into malformed_intents as content_blocked, with an
-- audit row (schema function herald.held_reject).
SELECT held_id::bigint AS held_id
FROM herald.held_reject(@ids::bigint[], @actor::text, @reason::text);

-- name: HeldIntentInsertAs :one
-- Holds an intake entry a review rule matched, for the intake worker, in
-- the name of the login that inserted it (submitted_by), so that a release
-- puts it back on the intake as that login's, and returns its id: the new
-- row's, or, when the (producer, idempotency_key) is held already (a
-- retry), the held row's. The second SELECT runs on the statement's
-- snapshot, so it sees a row held before, never the one this statement
-- inserts.
WITH ins AS (
    INSERT INTO herald.held_intents (producer, idempotency_key, notification_type, body, rule_id, rule, part, submitted_by)
    VALUES (@producer, @idempotency_key, @notification_type, @body, @rule_id, @rule, @part, @submitted_by)
    ON CONFLICT (producer, idempotency_key) DO NOTHING
    RETURNING id
)
SELECT id FROM ins
UNION ALL
SELECT h.id FROM herald.held_intents h WHERE h.producer = @producer AND h.idempotency_key = @idempotency_key
LIMIT 1;

-- name: HeldIntentInsertForNotification :one
-- Holds a stored notification whose routes the vetter moves to lane
-- '!held' (a review rule matched what a producer's login inserted), in its
-- producer's name, and returns the notification the held intent of that
-- (producer, idempotency_key) names: this one, or another's when the key
-- is held for another notification already (a producer's login can store
-- two records of one key by hand), which the vetter then refuses. An
-- intent of the same key held before it was stored (on the intake) is the
-- same intent: it comes to name the notification, so that deciding it
-- decides the routes. The second SELECT runs on the statement's snapshot,
-- so it sees a row held before, never the one this statement writes.
WITH ins AS (
    INSERT INTO herald.held_intents AS h (producer, idempotency_key, notification_type, body, rule_id, rule, part,
        submitted_by, notification_id)
    VALUES (@producer, @idempotency_key, @notification_type, @body, @rule_id, @rule, @part, @producer, @notification_id::text)
    ON CONFLICT (producer, idempotency_key) DO UPDATE SET notification_id = excluded.notification_id
    WHERE h.notification_id IS NULL
    RETURNING h.notification_id
)
SELECT ins.notification_id::text AS notification_id FROM ins
UNION ALL
SELECT coalesce(h.notification_id, '')::text FROM herald.held_intents AS h
WHERE h.producer = @producer AND h.idempotency_key = @idempotency_key
LIMIT 1;

-- name: RecordInsertMany :many
-- Accepts a batch of validated intents in ONE statement (one round trip): the
-- records, then the routes of exactly those records that were inserted, and
-- the dispatchers' wake-up hint. The UNIQUE (producer, idempotency_key)
-- constraint is the idempotency check: a record whose key exists already
-- (committed, or committed by a racing transaction this statement waited
-- for) is skipped by ON CONFLICT DO NOTHING, and so are its routes, because
-- the routes are joined to the records this statement actually inserted.
-- Routes' foreign keys are checked at the end of the statement, when their
-- records exist.
-- Returns one row per inserted record. A key that is not among them exists
-- already (committed before, or by a racing transaction this statement
-- waited for): the caller reads those with RecordGetByKeys, a second round
-- trip paid only by duplicates. Looking every key up here instead cost a
-- descent of the unique index per intent on every batch, duplicates or not.
-- The producer/idempotency_key pairs must be distinct within one call.
-- An element of the send_at / expires_at arrays that is the zero time
-- (0001-01-01 00:00:00 UTC, Go's time.Time{}) means "not set": sqlc types a
-- timestamptz[] parameter as []time.Time, which cannot carry a NULL element,
-- so nullif turns the zero time back into NULL.
WITH rec_in AS (
    -- Several set-returning functions in one select list are zipped row by
    -- row (Postgres 10+): the multi-argument unnest(a, b, ...) that sqlc
    -- cannot type.
    SELECT
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@notification_types::text[]) AS notification_type,
        unnest(@producers::text[]) AS producer,
        unnest(@audience_kinds::text[]) AS audience_kind,
        unnest(@recipient_user_ids::jsonb[]) AS recipient_user_ids,
        unnest(@payload_jsons::text[]) AS payload_json,
        unnest(@idempotency_keys::text[]) AS idempotency_key,
        unnest(@request_fingerprints::text[]) AS request_fingerprint,
        unnest(@request_ids::text[]) AS request_id,
        unnest(@trace_ids::text[]) AS trace_id,
        unnest(@occurred_ats::timestamptz[]) AS occurred_at,
        unnest(@channel_lists::text[]) AS channel_list,
        unnest(@priorities::smallint[]) AS priority,
        nullif(unnest(@send_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS send_at,
        nullif(unnest(@expires_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS expires_at
),
ins AS (
    INSERT INTO herald.records (
        notification_id, notification_type, producer, audience_kind, recipient_user_ids,
        payload_json, idempotency_key, request_fingerprint, request_id, trace_id, occurred_at,
        accepted_at, updated_at, idempotency_expires_at, channels, priority, send_at, expires_at
    )
    SELECT
        notification_id, notification_type, producer, audience_kind, recipient_user_ids,
        payload_json, idempotency_key, request_fingerprint, request_id, trace_id, occurred_at,
        coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @idempotency_window_seconds::float8),
        string_to_array(channel_list, ','),
        priority,
        send_at,
        expires_at
    FROM rec_in
    ON CONFLICT (producer, idempotency_key) DO NOTHING
    RETURNING notification_id, producer, idempotency_key, request_fingerprint, accepted_at
),
routes_ins AS (
    INSERT INTO herald.routes (
        notification_id, route_id, channel, recipient_ref, status, max_attempts, next_attempt_at,
        priority, expires_at, sms_encoding, sms_segments, created_at, updated_at
    )
    SELECT
        r.notification_id, r.route_id, r.channel, r.recipient_ref, 'pending', r.max_attempts,
        -- Due now, or at send_at (greatest ignores NULLs).
        greatest(coalesce(sqlc.narg('now')::timestamptz, now()), r.send_at),
        r.priority, r.expires_at, r.sms_encoding, r.sms_segments,
        coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now())
    FROM (
        SELECT
            unnest(@route_notification_ids::text[]) AS notification_id,
            unnest(@route_ids::text[]) AS route_id,
            unnest(@route_channels::text[]) AS channel,
            unnest(@route_recipient_refs::text[]) AS recipient_ref,
            unnest(@route_max_attempts::integer[]) AS max_attempts,
            unnest(@route_priorities::smallint[]) AS priority,
            nullif(unnest(@route_send_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS send_at,
            nullif(unnest(@route_expires_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS expires_at,
            unnest(@route_sms_encodings::text[]) AS sms_encoding,
            unnest(@route_sms_segments::smallint[]) AS sms_segments
    ) AS r
    JOIN ins USING (notification_id)
    RETURNING 1
),
wake AS (
    -- The dispatchers' wake-up hint on channel herald_routes, sent only when
    -- the caller asks (the leading edge of its debounce window; NULL means
    -- no hint). Postgres delivers it at commit, so it rides the caller's
    -- transaction, and only if a record was inserted (a batch of
    -- duplicates wakes nobody). A SELECT CTE runs only if referenced: the
    -- final SELECT joins it.
    SELECT count(pg_notify('herald_routes', sqlc.narg('notify_channel')::text)) AS hints
    FROM (
        SELECT 1 WHERE sqlc.narg('notify_channel')::text IS NOT NULL AND EXISTS (SELECT 1 FROM ins)
    ) AS asked
)
SELECT ins.notification_id, ins.producer, ins.idempotency_key, ins.request_fingerprint, ins.accepted_at
FROM ins CROSS JOIN wake;

-- name: RecordGetByKeys :many
-- The existing records for (producer, idempotency_key) pairs: what a
-- duplicate submit returns, or what an idempotency conflict names.
SELECT r.notification_id, r.producer, r.idempotency_key, r.request_fingerprint, r.accepted_at
FROM herald.records r
JOIN (
    SELECT unnest(@producers::text[]) AS producer, unnest(@idempotency_keys::text[]) AS idempotency_key
) AS k ON r.producer = k.producer AND r.idempotency_key = k.idempotency_key;

-- name: RecordGet :one
-- One record by id, for Get and Cancel.
SELECT *
FROM herald.records
WHERE notification_id = @notification_id;

-- Operator queries: what `herald dead-letters`, `malformed`, `status` and
-- `stats` read and do (internal/operator). The dead-letter filter is the same
-- in every query here (sqlc has no macros): each narg is "no filter" when
-- NULL; ids_notification/ids_route select routes by id (an empty route id
-- means every dead route of that notification); until bounds a replay to the
-- dead letters that existed when it was requested, so a replay that resumes
-- after a restart never picks up routes that died after its request.

-- name: DeadLetterList :many
-- One page of dead letters, newest first, along dead_letters_listing_idx.
-- The cursor is the last row of the previous page (after_*): keyset paging,
-- so a page costs the same however deep it is.
SELECT
    v.notification_id, v.route_id, v.notification_type, v.producer, v.recipient_ref, v.channel,
    v.attempts, v.max_attempts, v.classification, v.message, v.recovery_hint,
    v.accepted_at, v.last_failed_at::timestamptz AS last_failed_at, v.dead_lettered_at
FROM herald.dead_letter_view v
WHERE (sqlc.narg('channel')::text IS NULL OR v.channel = sqlc.narg('channel')::text)
    AND (sqlc.narg('producer')::text IS NULL OR v.producer = sqlc.narg('producer')::text)
    AND (sqlc.narg('notification_type')::text IS NULL OR v.notification_type = sqlc.narg('notification_type')::text)
    AND (sqlc.narg('classification')::text IS NULL OR v.classification = sqlc.narg('classification')::text)
    AND (sqlc.narg('since')::timestamptz IS NULL OR v.dead_lettered_at >= sqlc.narg('since')::timestamptz)
    AND (sqlc.narg('until')::timestamptz IS NULL OR v.dead_lettered_at <= sqlc.narg('until')::timestamptz)
    AND (sqlc.narg('ids_notification')::text[] IS NULL OR EXISTS (
        SELECT 1
        FROM (
            SELECT unnest(sqlc.narg('ids_notification')::text[]) AS nid,
                unnest(sqlc.narg('ids_route')::text[]) AS rid
        ) AS k
        WHERE k.nid = v.notification_id AND (k.rid = '' OR k.rid = v.route_id)
    ))
    AND (sqlc.narg('after_dead_lettered_at')::timestamptz IS NULL
        OR (v.dead_lettered_at, v.notification_id, v.route_id)
            < (sqlc.narg('after_dead_lettered_at')::timestamptz,
               sqlc.narg('after_notification_id')::text,
               sqlc.narg('after_route_id')::text))
ORDER BY v.dead_lettered_at DESC, v.notification_id DESC, v.route_id DESC
LIMIT @max::integer;

-- name: DeadLetterCount :one
-- How many dead letters match the filter: what a dry run would move, and
-- what decides whether a replay runs here or as a River job.
SELECT count(*)::bigint AS dead_letters
FROM herald.dead_letters d
JOIN herald.records rec ON rec.notification_id = d.notification_id
WHERE (sqlc.narg('channel')::text IS NULL OR d.channel = sqlc.narg('channel')::text)
    AND (sqlc.narg('producer')::text IS NULL OR rec.producer = sqlc.narg('producer')::text)
    AND (sqlc.narg('notification_type')::text IS NULL OR rec.notification_type = sqlc.narg('notification_type')::text)
    AND (sqlc.narg('classification')::text IS NULL OR d.failure_classification = sqlc.narg('classification')::text)
    AND (sqlc.narg('since')::timestamptz IS NULL OR d.created_at >= sqlc.narg('since')::timestamptz)
    AND (sqlc.narg('until')::timestamptz IS NULL OR d.created_at <= sqlc.narg('until')::timestamptz)
    AND (sqlc.narg('ids_notification')::text[] IS NULL OR EXISTS (
        SELECT 1
        FROM (
            SELECT unnest(sqlc.narg('ids_notification')::text[]) AS nid,
                unnest(sqlc.narg('ids_route')::text[]) AS rid
        ) AS k
        WHERE k.nid = d.notification_id AND (k.rid = '' OR k.rid = d.route_id)
    ));

-- name: DeadLetterGet :many
-- The dead letters of one notification, or of one of its routes when
-- route_id is given, with their notification's details.
SELECT
    v.notification_id, v.route_id, v.notification_type, v.producer, v.recipient_ref, v.channel,
    v.attempts, v.max_attempts, v.classification, v.message, v.recovery_hint,
    v.accepted_at, v.last_failed_at::timestamptz AS last_failed_at, v.dead_lettered_at
FROM herald.dead_letter_view v
WHERE v.notification_id = @notification_id
    AND (sqlc.narg('route_id')::text IS NULL OR v.route_id = sqlc.narg('route_id')::text)
ORDER BY v.route_id;

-- name: DeadLetterReplay :many
-- Replays one batch of at most @max dead letters matching the filter, in ONE
-- statement (one short transaction): each route goes back to pending with a
-- fresh attempt budget (attempt_count 0, due now), its dead_letters row is
-- deleted, and one audit row records who, why, the filter and the routes
-- moved. The route keeps its last error and dead_lettered_at (when it last
-- died), for the timeline, until its next attempts overwrite them.
--
-- Concurrency: the picked CTE locks the dead_letters rows FOR UPDATE SKIP
-- LOCKED, so two replays running at once take disjoint batches and never
-- wait on each other; a row another replay deleted after this statement's
-- snapshot is skipped when the lock finds it gone, and the UPDATE's
-- status = 'dead_letter' predicate is re-checked on the locked row. Each
-- route therefore moves exactly once. The caller repeats the statement until
-- it moves nothing. No audit row is written for an empty batch.
WITH picked AS (
    SELECT d.notification_id, d.route_id
    FROM herald.dead_letters d
    JOIN herald.records rec ON rec.notification_id = d.notification_id
    WHERE (sqlc.narg('channel')::text IS NULL OR d.channel = sqlc.narg('channel')::text)
        AND (sqlc.narg('producer')::text IS NULL OR rec.producer = sqlc.narg('producer')::text)
        AND (sqlc.narg('notification_type')::text IS NULL OR rec.notification_type = sqlc.narg('notification_type')::text)
        AND (sqlc.narg('classification')::text IS NULL OR d.failure_classification = sqlc.narg('classification')::text)
        AND (sqlc.narg('since')::timestamptz IS NULL OR d.created_at >= sqlc.narg('since')::timestamptz)
        AND (sqlc.narg('until')::timestamptz IS NULL OR d.created_at <= sqlc.narg('until')::timestamptz)
        AND (sqlc.narg('ids_notification')::text[] IS NULL OR EXISTS (
            SELECT 1
            FROM (
                SELECT unnest(sqlc.narg('ids_notification')::text[]) AS nid,
                    unnest(sqlc.narg('ids_route')::text[]) AS rid
            ) AS k
            WHERE k.nid = d.notification_id AND (k.rid = '' OR k.rid = d.route_id)
        ))
    LIMIT @max::integer
    FOR UPDATE OF d SKIP LOCKED
),
deleted AS (
    DELETE FROM herald.dead_letters d
    USING picked
    WHERE d.notification_id = picked.notification_id AND d.route_id = picked.route_id
    RETURNING d.notification_id, d.route_id
),
moved AS (
    UPDATE herald.routes r
    SET status = 'pending',
        attempt_count = 0,
        next_attempt_at = coalesce(sqlc.narg('now')::timestamptz, now()),
        updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
    FROM deleted
    WHERE r.notification_id = deleted.notification_id
        AND r.route_id = deleted.route_id
        AND r.status = 'dead_letter'
    RETURNING r.notification_id, r.route_id, r.channel
),
audited AS (
    -- The audit row, through herald.audit_append (no role may insert into
    -- audit_log directly; the row is stamped with this login), for a batch
    -- that moved something. A SELECT CTE runs only if referenced: the final
    -- SELECT joins it.
    SELECT a.id
    FROM (
        SELECT count(*)::integer AS affected,
            jsonb_agg(jsonb_build_object(
                'notification_id', moved.notification_id,
                'route_id', moved.route_id,
                'channel', moved.channel)) AS routes
        FROM moved
        HAVING count(*) > 0
    ) AS m
    CROSS JOIN LATERAL herald.audit_append(
        @actor::text,
        'dead_letter_replay',
        @reason::text,
        @filter::jsonb,
        m.affected,
        @details::jsonb || jsonb_build_object('db_user', session_user::text, 'routes', m.routes),
        sqlc.narg('now')::timestamptz) AS a
)
SELECT moved.notification_id, moved.route_id, moved.channel
FROM moved LEFT JOIN audited ON true;

-- name: AuditInsert :one
-- Writes one audit row (schema function herald.audit_append): for a replay
-- that moved nothing, or one queued as a River job.
SELECT a.id::bigint AS id, a.logged_at::timestamptz AS at
FROM herald.audit_append(
    @actor::text, @action::text, @reason::text, @filter::jsonb, @affected::integer,
    @details::jsonb || jsonb_build_object('db_user', session_user::text),
    sqlc.narg('now')::timestamptz) AS a;

-- name: ReplayJobEnqueue :one
-- Queues a bulk replay as a River job (schema function
-- herald.dead_letter_replay_enqueue) and returns the job's id.
SELECT herald.dead_letter_replay_enqueue(@args::jsonb)::bigint AS job_id;

-- name: AuditSummaryByReplay :one
-- What the audit log says one replay (all its batches, across restarts)
-- has done: the batches written and the routes they moved. No row for a
-- replay that has not written a batch yet (so first_at and last_at are
-- never NULL).
SELECT
    count(*)::bigint AS batches,
    coalesce(sum(affected), 0)::bigint AS affected,
    min(at)::timestamptz AS first_at,
    max(at)::timestamptz AS last_at
FROM herald.audit_log
WHERE action = 'dead_letter_replay'
    AND details @> jsonb_build_object('replay_id', @replay_id::text)
HAVING count(*) > 0;

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
            < (sqlc.narg('after_recorded_at')::timestamptz, sqlc.narg('after_stream_entry_id')::text))
ORDER BY m.recorded_at DESC, m.stream_entry_id DESC
LIMIT @max::integer;

-- name: RecordShow :one
-- One notification record for `herald status`.
SELECT *
FROM herald.records
WHERE notification_id = @notification_id;

-- name: NotificationTimeline :many
-- The notification's timeline (schema function herald.notification_timeline).
SELECT
    t.at::timestamptz AS at,
    t.route_id::text AS route_id,
    t.channel::text AS channel,
    t.event::text AS event,
    t.attempt::integer AS attempt,
    t.detail::text AS detail
FROM herald.notification_timeline(@notification_id::text) AS t;

-- name: StatsBacklog :many
-- The backlog per channel and status (the backlog_view's figures, with an
-- injectable clock): one scan of routes_due_idx.
SELECT
    channel,
    status,
    count(*)::bigint AS routes,
    count(*) FILTER (WHERE next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now()))::bigint AS due,
    coalesce(extract(epoch FROM greatest(
        coalesce(sqlc.narg('now')::timestamptz, now())
            - min(next_attempt_at) FILTER (WHERE next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())),
        interval '0')), 0)::float8 AS lag_seconds
FROM herald.routes
WHERE next_attempt_at IS NOT NULL
GROUP BY channel, status
ORDER BY channel, status;

-- name: StatsThroughput :many
-- Routes published per channel since @since, and how long they took from
-- acceptance (mean and worst). There is no index on published_at (it would
-- cost every completion a write), so this scans routes: an operator's
-- occasional question, not a hot path.
SELECT
    r.channel,
    count(*)::bigint AS published,
    coalesce(avg(extract(epoch FROM r.published_at - rec.accepted_at)), 0)::float8 AS mean_latency_seconds,
    coalesce(max(extract(epoch FROM r.published_at - rec.accepted_at)), 0)::float8 AS max_latency_seconds
FROM herald.routes r
JOIN herald.records rec ON rec.notification_id = r.notification_id
WHERE r.published_at >= @since::timestamptz
GROUP BY r.channel
ORDER BY r.channel;

-- name: StatsDeadLetters :many
-- Dead letters per channel and classification, with the newest of each.
SELECT
    channel,
    failure_classification AS classification,
    count(*)::bigint AS dead_letters,
    max(created_at)::timestamptz AS newest_at
FROM herald.dead_letters
GROUP BY channel, failure_classification
ORDER BY channel, failure_classification;

-- name: RouteDeadLetterMany :execrows
-- For tests and the demo: dead-letters the pending routes of the given records, as
-- the dispatcher would, so tests can seed thousands of dead letters in one
-- statement.
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

-- name: DatabaseNow :one
-- The database's clock: a replay's upper bound (until) and the stats' window
-- are taken from it, not from the operator's machine, because dead_letters
-- and routes are stamped with it.
SELECT now()::timestamptz AS now;

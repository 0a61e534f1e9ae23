-- Queries of herald.dead_letters: one row per dead route, what an operator
-- lists, reads and replays (internal/operator, `herald dead-letters`). The
-- dispatcher writes these rows inside RouteCompleteMany (queries/routes.sql),
-- in the same statement that moves the route to dead_letter.
--
-- The operator's filter: each narg is "no filter" when NULL;
-- ids_notification/ids_route select routes by id (an empty route id means
-- every dead route of that notification); until bounds a replay to the dead
-- letters that existed when it was requested, so a replay that resumes after
-- a restart never picks up routes that died after its request;
-- classification is one classification or several, comma-separated (a
-- class of outcomes, as `herald dead-letters -classification transient`
-- gives it); provider is the provider of the route's last attempt.
--
-- The filter is written out in DeadLetterList, DeadLetterCount and
-- DeadLetterReplay alike (sqlc has no macros); keep the three in step. It is
-- not a schema function because neither kind keeps the plans (checked with
-- EXPLAIN; the plans and figures are in this file's history): a
-- set-returning SQL function is inlined, but FOR UPDATE cannot lock rows
-- read through a function, so the replay would join dead_letters to itself
-- (much worse with a generic plan); and a boolean SQL function is not
-- inlined when its body has a sub-select (the ids test), so the planner
-- could neither fold away the NULL arms nor use dead_letters_listing_idx for
-- since/until.

-- name: DeadLetterList :many
-- One page of dead letters, newest first, along dead_letters_listing_idx.
-- The cursor is the last row of the previous page (after_*): keyset paging,
-- so a page costs the same however deep it is.
SELECT
    v.notification_id, v.route_id, v.notification_type, v.producer, v.recipient_ref, v.channel,
    v.attempts, v.max_attempts, v.classification, v.message, v.recovery_hint,
    v.accepted_at, v.last_failed_at::timestamptz AS last_failed_at, v.dead_lettered_at, v.provider
FROM herald.dead_letter_view v
WHERE (sqlc.narg('channel')::text IS NULL OR v.channel = sqlc.narg('channel')::text)
    AND (sqlc.narg('producer')::text IS NULL OR v.producer = sqlc.narg('producer')::text)
    AND (sqlc.narg('notification_type')::text IS NULL OR v.notification_type = sqlc.narg('notification_type')::text)
    AND (sqlc.narg('provider')::text IS NULL OR v.provider = sqlc.narg('provider')::text)
    AND (sqlc.narg('classification')::text IS NULL OR v.classification = ANY(string_to_array(sqlc.narg('classification')::text, ',')))
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
    AND (sqlc.narg('provider')::text IS NULL OR d.provider = sqlc.narg('provider')::text)
    AND (sqlc.narg('classification')::text IS NULL OR d.failure_classification = ANY(string_to_array(sqlc.narg('classification')::text, ',')))
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
    v.accepted_at, v.last_failed_at::timestamptz AS last_failed_at, v.dead_lettered_at, v.provider
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
        AND (sqlc.narg('provider')::text IS NULL OR d.provider = sqlc.narg('provider')::text)
        AND (sqlc.narg('classification')::text IS NULL OR d.failure_classification = ANY(string_to_array(sqlc.narg('classification')::text, ',')))
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
        AND r.finished_at IS NULL
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

-- name: DeadLetterReplayEnqueue :one
-- Queues a bulk replay as a River job (schema function
-- herald.dead_letter_replay_enqueue) and returns the job's id.
SELECT herald.dead_letter_replay_enqueue(@args::jsonb)::bigint AS job_id;

-- name: DeadLetterCountByClassification :many
-- Dead letters per channel and classification, with the newest of each, for
-- `herald stats`.
SELECT
    channel,
    failure_classification AS classification,
    count(*)::bigint AS dead_letters,
    max(created_at)::timestamptz AS newest_at
FROM herald.dead_letters
GROUP BY channel, failure_classification
ORDER BY channel, failure_classification;

-- name: DeadLetterCountGrouped :many
-- Dead letters matching the filter (as DeadLetterCount's, without ids),
-- counted per producer, channel, provider and classification, with the
-- newest of each: `herald dead-letters count` adds these up by what it is
-- asked to group by, and `herald stats` by producer. One row per
-- combination present, which stays small however many dead letters there
-- are.
SELECT
    rec.producer,
    d.channel,
    d.provider,
    d.failure_classification AS classification,
    count(*)::bigint AS dead_letters,
    max(d.created_at)::timestamptz AS newest_at
FROM herald.dead_letters d
JOIN herald.records rec ON rec.notification_id = d.notification_id
WHERE (sqlc.narg('channel')::text IS NULL OR d.channel = sqlc.narg('channel')::text)
    AND (sqlc.narg('producer')::text IS NULL OR rec.producer = sqlc.narg('producer')::text)
    AND (sqlc.narg('notification_type')::text IS NULL OR rec.notification_type = sqlc.narg('notification_type')::text)
    AND (sqlc.narg('provider')::text IS NULL OR d.provider = sqlc.narg('provider')::text)
    AND (sqlc.narg('classification')::text IS NULL OR d.failure_classification = ANY(string_to_array(sqlc.narg('classification')::text, ',')))
    AND (sqlc.narg('since')::timestamptz IS NULL OR d.created_at >= sqlc.narg('since')::timestamptz)
GROUP BY rec.producer, d.channel, d.provider, d.failure_classification
ORDER BY rec.producer, d.channel, d.provider, d.failure_classification;

-- name: DeadLetterListByRecipient :many
-- The newest @max dead letters to @recipient_ref (as RouteListByRecipient
-- takes it, and planned as it is), newest first: read down
-- dead_letters_recipient_idx (recipient_ref, created_at) backwards,
-- stopped at @max and the dead letters tied with the last, each one's
-- record (producer, type) by primary key in a nested loop.
SELECT
    d.notification_id, d.route_id, d.channel, d.recipient_ref,
    d.failure_classification AS classification, d.failure_message AS message,
    d.provider, d.created_at AS dead_lettered_at,
    rec.producer, rec.notification_type
FROM (
    SELECT dl.notification_id, dl.route_id, dl.channel, dl.recipient_ref,
        dl.failure_classification, dl.failure_message, dl.provider, dl.created_at
    FROM herald.dead_letters dl
    WHERE dl.recipient_ref = @recipient_ref::text
    ORDER BY dl.created_at DESC
    FETCH FIRST (@max::integer) ROWS WITH TIES
) AS d
JOIN LATERAL (
    SELECT rc.producer, rc.notification_type
    FROM herald.records rc
    WHERE rc.notification_id = d.notification_id
    LIMIT 1
) AS rec ON true
ORDER BY d.created_at DESC, d.notification_id DESC, d.route_id DESC
LIMIT @max::integer;

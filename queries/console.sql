-- Queries only the operator console (internal/console, through
-- internal/operator) runs: the login's roles, and the bounded reads its
-- pages need beyond what `herald stats`, `dead-letters` and `status`
-- already read. Each page's query is one index range or one small table:
-- the console runs them as the person signed in, every few seconds.

-- name: ConsoleLoginRoles :one
-- What the login the console connected as may do: an operator acts, an
-- auditor reads; a login that is neither (a producer) is refused by the
-- console at sign-in.
SELECT
    current_user::text AS login,
    pg_has_role(current_user, 'herald_operator', 'MEMBER')::bool AS operator,
    pg_has_role(current_user, 'herald_auditor', 'MEMBER')::bool AS auditor;

-- name: ConsoleAuditList :many
-- One page of the audit log, newest first, along its primary key (ids
-- grow with time): keyset paging from before_id (0: the newest), so a page costs the same
-- however deep. action and actor (matched against the actor given and the
-- database login) are filters when not NULL; a selective filter walks
-- further down the index, at most to the page's end.
SELECT id, at, actor, action, reason, filter::text AS filter, affected, details::text AS details, login
FROM herald.audit_log
WHERE (sqlc.narg('action')::text IS NULL OR action = sqlc.narg('action')::text)
    AND (sqlc.narg('actor')::text IS NULL OR actor = sqlc.narg('actor')::text OR login = sqlc.narg('actor')::text)
    AND (@before_id::bigint = 0 OR id < @before_id::bigint)
ORDER BY id DESC
LIMIT @max::integer;

-- name: ConsoleHeldGet :one
-- One held intent with its body and the rule that matched, for review,
-- with the rule's kind and pattern ('' when the rule has been deleted
-- since) so the page can mark what it matched.
SELECT h.id, h.producer, h.idempotency_key, h.notification_type, h.body, h.rule_id, h.rule, h.part, h.submitted_by, h.held_at,
    coalesce(cr.kind, '')::text AS rule_kind, coalesce(cr.pattern, '')::text AS rule_pattern
FROM herald.held_intents h
LEFT JOIN herald.content_rules cr ON cr.id = h.rule_id
WHERE h.id = @id::bigint;

-- name: ConsoleDeadLetterGroups :many
-- The newest @scan dead letters matching the dead-letter filter (channel,
-- producer, classification, since, until) grouped by producer, channel,
-- provider and classification, largest group first. Bounded whatever the
-- dead letters' number: a walk down dead_letters_listing_idx, each dead
-- letter's producer read from its record by primary key (the LATERAL
-- subquery with LIMIT keeps that a nested loop, never a scan of every
-- record), stopping after @scan matches.
WITH newest AS (
    SELECT rec.producer, d.channel, d.provider, d.failure_classification, d.created_at
    FROM herald.dead_letters d
    JOIN LATERAL (
        SELECT r.producer
        FROM herald.records r
        WHERE r.notification_id = d.notification_id
        LIMIT 1
    ) AS rec ON true
    WHERE (sqlc.narg('channel')::text IS NULL OR d.channel = sqlc.narg('channel')::text)
        AND (sqlc.narg('producer')::text IS NULL OR rec.producer = sqlc.narg('producer')::text)
        AND (sqlc.narg('classification')::text IS NULL OR d.failure_classification = ANY(string_to_array(sqlc.narg('classification')::text, ',')))
        AND (sqlc.narg('since')::timestamptz IS NULL OR d.created_at >= sqlc.narg('since')::timestamptz)
        AND (sqlc.narg('until')::timestamptz IS NULL OR d.created_at <= sqlc.narg('until')::timestamptz)
    ORDER BY d.created_at DESC, d.notification_id DESC, d.route_id DESC
    LIMIT @scan::integer
)
SELECT
    producer,
    channel,
    provider,
    failure_classification AS classification,
    count(*)::bigint AS dead_letters,
    max(created_at)::timestamptz AS newest_at
FROM newest
GROUP BY producer, channel, provider, failure_classification
ORDER BY dead_letters DESC, producer, channel, provider, failure_classification
LIMIT @max::integer;

-- name: ConsoleMalformedCountByCode :many
-- Malformed intake entries per failure code, with the newest of each,
-- recorded since @since: a range of malformed_intents_listing_idx.
SELECT failure_code, count(*)::bigint AS entries, max(recorded_at)::timestamptz AS newest_at
FROM herald.malformed_intents
WHERE recorded_at >= @since::timestamptz
GROUP BY failure_code
ORDER BY entries DESC, failure_code;

-- name: ConsoleProviderSeries :many
-- Each provider's outcomes over the window from @since in steps of
-- @step_seconds, with its channel: what the console draws over time.
SELECT
    h.provider,
    coalesce(p.channel, '')::text AS channel,
    date_bin(make_interval(secs => @step_seconds::integer), h.bucket, timestamptz 'epoch')::timestamptz AS at,
    sum(h.delivered)::bigint AS delivered,
    sum(h.transient)::bigint AS transient,
    sum(h.permanent)::bigint AS permanent
FROM herald.provider_health h
LEFT JOIN herald.providers p ON p.name = h.provider
WHERE h.bucket >= @since::timestamptz
GROUP BY h.provider, p.channel, 3
ORDER BY h.provider, 3;

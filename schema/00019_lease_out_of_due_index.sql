-- +goose Up
-- The claim becomes a HOT update. Until now a claim moved
-- next_attempt_at to the lease's end and a completion moved it again (to
-- NULL, or to the retry's time): both changed a column routes_due_idx
-- holds, so neither could be HOT, and each route cost an insert and two
-- non-HOT updates: five index entries (two at insert, two at claim, one at
-- completion) and the WAL of each.
--
-- Now the lease lives in a column of its own, lease_until, which no index
-- holds. A claim sets status 'claimed', counts the attempt and writes
-- lease_until; it leaves next_attempt_at, the route's place in the due
-- index, where it was. Nothing indexed changes, so with room on the page
-- (the fillfactor below) the claim is a HOT update: no index entry, less
-- WAL, and the completion that follows finds one primary key entry per
-- route instead of two.
--
-- What keeps the invariants:
--  * A claimed route stays in the due index at its old, past due time, so
--    a claim's scan meets the routes in flight before the routes to claim
--    and steps over them on one condition checked on the heap:
--    `status <> 'claimed' OR coalesce(lease_until, next_attempt_at) <= now`
--    (a route claimed before this migration has its lease in
--    next_attempt_at and no lease_until, and keeps working). They are the
--    routes in flight (a few hundred per process), at the head of the
--    index.
--  * Leases still expire by themselves: a claimed route whose lease_until
--    has passed meets that condition again and is claimed again (attempt
--    counted, new lease).
--  * The fence is unchanged in kind: a completion, release or park matches
--    status 'claimed', the claim's attempt and the claim's lease_until.
--    lease_until is read only while status is 'claimed'; another status
--    may keep a stale one (a route canceled while claimed), which nothing
--    reads.
--  * Terminal routes still leave the due index: the completion sets
--    next_attempt_at NULL (that update stays non-HOT, by necessity: it
--    takes the route out of a partial index).
--  * A producer's INSERT cannot claim a route (00012's policy requires
--    status 'pending'), so whatever lease_until it writes is never read.
ALTER TABLE herald.routes ADD COLUMN lease_until timestamptz;

-- A HOT update needs room for the new version on the route's own page.
-- At 00004's fillfactor 70 only about half the claims found it in the
-- default bench workload (48,766 HOT of 100,000: a page of routes has room
-- for a few new versions, and every route on it is claimed and completed
-- within moments of the others); at 50, 99.4% did, and the claim's WAL fell
-- from 504 to 218 bytes per route (4.65 to 2.10 records) and its buffer
-- touches from 19.3 to 12.7 (`herald bench` on one cluster with
-- pg_stat_statements, same run of both builds; the figures are in the
-- commit). The table holds fewer live routes per page, and is about as
-- large after a run (121 against 116 MiB at 100,000 routes), because the
-- claims' versions no longer spill onto new pages. New pages only: existing
-- ones keep their fill until rewritten.
ALTER TABLE herald.routes SET (fillfactor = 50);

-- backlog_view (00003) reads a claimed route's due time from its lease:
-- due when the lease has run out (its worker died), next due when it ends.
-- It now reads the heap beside routes_due_idx (status was never in the
-- index; lease_until is not either).
CREATE OR REPLACE VIEW herald.backlog_view AS
SELECT
    channel,
    status,
    count(*) AS routes,
    count(*) FILTER (WHERE due_at <= now()) AS due,
    min(due_at) FILTER (WHERE due_at <= now()) AS oldest_due_at,
    coalesce(now() - min(due_at) FILTER (WHERE due_at <= now()), interval '0') AS lag,
    min(due_at) FILTER (WHERE due_at > now()) AS next_due_at
FROM (
    SELECT channel, status,
        CASE WHEN status = 'claimed' THEN coalesce(lease_until, next_attempt_at) ELSE next_attempt_at END AS due_at
    FROM herald.routes
    WHERE next_attempt_at IS NOT NULL
) AS r
GROUP BY channel, status;

-- The timeline's "lease_ends" event and notification_callbacks'
-- next_attempt_at read the lease from its new column; the rest of both
-- functions is 00017's.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_callbacks(id text)
RETURNS TABLE (
    route_id text,
    channel text,
    event text,
    callback_id text,
    callback_route_id text,
    url text,
    status text,
    attempts integer,
    max_attempts integer,
    next_attempt_at timestamptz,
    error_classification text,
    error_message text,
    created_at timestamptz,
    updated_at timestamptz
)
LANGUAGE sql STABLE
AS $$
    SELECT r.route_id, r.channel, ev.event, cb.notification_id, cr.route_id, cr.recipient_ref, cr.status,
        cr.attempt_count, cr.max_attempts,
        CASE WHEN cr.status = 'claimed' THEN coalesce(cr.lease_until, cr.next_attempt_at) ELSE cr.next_attempt_at END, cr.last_error_classification,
        cr.last_error_message, cb.accepted_at, cr.updated_at
    FROM herald.records rec
    JOIN herald.routes r ON r.notification_id = rec.notification_id AND r.notify_producer
    -- 00012's events (routes_callback_enqueue, callback_subscriptions_events_check).
    CROSS JOIN unnest(ARRAY['published', 'delivered', 'undelivered', 'dead_lettered', 'skipped', 'canceled', 'expired'])
        AS ev(event)
    JOIN herald.records cb ON cb.producer = rec.producer
        AND cb.idempotency_key = 'callback:' || r.notification_id || ':' || r.route_id || ':' || ev.event
    JOIN herald.routes cr ON cr.notification_id = cb.notification_id
    WHERE rec.notification_id = notification_callbacks.id
    ORDER BY cb.accepted_at, r.route_id, cb.notification_id;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.notification_callbacks(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.notification_callbacks(text) TO herald_operator, herald_auditor;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_timeline(id text)
RETURNS TABLE (
    at timestamptz,
    route_id text,
    channel text,
    event text,
    attempt integer,
    detail text
)
LANGUAGE sql STABLE
AS $$
    SELECT e.at, e.route_id, e.channel, e.event, e.attempt, e.detail
    FROM (
        SELECT rec.accepted_at AS at, 0 AS ord, '' AS route_id, '' AS channel, 'accepted' AS event, 0 AS attempt,
            format('type %s from %s, channels %s, priority %s', rec.notification_type, rec.producer,
                array_to_string(rec.channels, ','), rec.priority) AS detail
        FROM herald.records rec
        WHERE rec.notification_id = notification_timeline.id
        UNION ALL
        SELECT r.created_at, 1, r.route_id, r.channel, 'routed', 0,
            format('to %s, max attempts %s', r.recipient_ref,
                CASE WHEN r.max_attempts = 0 THEN 'channel default' ELSE r.max_attempts::text END)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id
        UNION ALL
        -- The last failure, unless it is the one that dead-lettered the route
        -- (shown below with its recovery hint), and the provider that took
        -- it: the last of routes.providers, or the one before the last when
        -- a later attempt published the route.
        SELECT r.last_error_at, 2, r.route_id, r.channel, 'failed', r.attempt_count,
            concat_ws(', ',
                'via ' || r.providers[cardinality(r.providers) - CASE r.status WHEN 'published' THEN 1 ELSE 0 END],
                format('%s: %s', r.last_error_classification, r.last_error_message))
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id
            AND r.last_error_at IS NOT NULL
            AND (r.dead_lettered_at IS NULL OR r.last_error_at < r.dead_lettered_at)
        UNION ALL
        -- The provider that published it: the last of routes.providers.
        SELECT r.published_at, 3, r.route_id, r.channel, 'published', r.attempt_count,
            concat_ws(', ',
                'via ' || r.providers[cardinality(r.providers)],
                'provider id ' || nullif(r.provider_message_id, ''))
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.published_at IS NOT NULL
        UNION ALL
        -- The provider of the final attempt: dead_letters.provider ('' when
        -- none took it, as for no_route), else the last of routes.providers.
        SELECT coalesce(d.created_at, r.dead_lettered_at), 3, r.route_id, r.channel, 'dead_lettered',
            coalesce(d.final_attempt_count, r.attempt_count),
            CASE WHEN d.notification_id IS NULL
                THEN concat_ws(', ', 'via ' || r.providers[cardinality(r.providers)],
                    format('%s: %s', r.last_error_classification, r.last_error_message))
                ELSE concat_ws(', ', 'via ' || nullif(d.provider, ''),
                    format('%s: %s (hint: %s)', d.failure_classification, d.failure_message, d.recovery_hint))
            END
        FROM herald.routes r
        LEFT JOIN herald.dead_letters d ON d.notification_id = r.notification_id AND d.route_id = r.route_id
        WHERE r.notification_id = notification_timeline.id AND r.dead_lettered_at IS NOT NULL
        UNION ALL
        SELECT r.skipped_at, 3, r.route_id, r.channel, 'skipped', r.attempt_count,
            format('%s: %s', r.last_error_classification, r.last_error_message)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.skipped_at IS NOT NULL
        UNION ALL
        SELECT r.canceled_at, 3, r.route_id, r.channel, 'canceled', r.attempt_count, ''
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.canceled_at IS NOT NULL
        UNION ALL
        -- Replays and cancels name the routes they moved in details.routes.
        SELECT a.at, 4, x.route_id, x.channel, a.action, 0,
            format('by %s (login %s): %s', a.actor, a.login, a.reason)
        FROM herald.audit_log a
        CROSS JOIN LATERAL jsonb_to_recordset(a.details -> 'routes')
            AS x(notification_id text, route_id text, channel text)
        WHERE a.details @> jsonb_build_object('routes', jsonb_build_array(jsonb_build_object('notification_id', notification_timeline.id)))
            AND x.notification_id = notification_timeline.id
        UNION ALL
        -- Cancels name the notification in their filter.
        SELECT a.at, 4, '', '', a.action, 0,
            format('by %s (login %s): %s (%s routes)', a.actor, a.login, a.reason, a.affected)
        FROM herald.audit_log a
        WHERE a.filter @> jsonb_build_object('notification_id', notification_timeline.id)
        UNION ALL
        -- The delivery receipts matched to its routes (migration 00009):
        -- the provider's status as sent, what it meant, and what the
        -- matcher did with it (matched, duplicate).
        SELECT dr.received_at, 3, dr.route_id, r.channel, 'receipt', r.attempt_count,
            concat_ws(', ',
                format('%s from %s: %s', dr.status, dr.provider, coalesce(dr.delivery_status, 'unknown')),
                'error ' || nullif(dr.error_code, ''),
                dr.state)
        FROM herald.delivery_receipts dr
        JOIN herald.routes r ON r.notification_id = dr.notification_id AND r.route_id = dr.route_id
        WHERE dr.notification_id = notification_timeline.id
        UNION ALL
        -- The status callbacks herald created about its routes (00012), one
        -- per route and event (herald.notification_callbacks): the event,
        -- the callback's own status (published: the producer was told;
        -- failed: not yet, retrying; dead_letter: herald gave up), and its
        -- last error while it has not got through.
        SELECT cb.created_at, 4, cb.route_id, cb.channel, 'callback', cb.attempts,
            concat_ws(', ',
                format('%s: %s', cb.event, cb.status),
                'callback ' || cb.callback_id,
                CASE WHEN cb.status IN ('failed', 'dead_letter')
                    THEN format('%s: %s', cb.error_classification, cb.error_message) END)
        FROM herald.notification_callbacks(notification_timeline.id) AS cb
        UNION ALL
        SELECT CASE WHEN r.status = 'claimed' THEN coalesce(r.lease_until, r.next_attempt_at) ELSE r.next_attempt_at END, 5, r.route_id, r.channel,
            CASE r.status WHEN 'claimed' THEN 'lease_ends' ELSE 'next_attempt' END,
            r.attempt_count + CASE r.status WHEN 'claimed' THEN 0 ELSE 1 END, r.status
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.next_attempt_at IS NOT NULL
    ) AS e
    ORDER BY e.at, e.ord, e.route_id;
$$;
-- +goose StatementEnd

-- +goose Down
-- 00017's functions, then the column goes.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_callbacks(id text)
RETURNS TABLE (
    route_id text,
    channel text,
    event text,
    callback_id text,
    callback_route_id text,
    url text,
    status text,
    attempts integer,
    max_attempts integer,
    next_attempt_at timestamptz,
    error_classification text,
    error_message text,
    created_at timestamptz,
    updated_at timestamptz
)
LANGUAGE sql STABLE
AS $$
    SELECT r.route_id, r.channel, ev.event, cb.notification_id, cr.route_id, cr.recipient_ref, cr.status,
        cr.attempt_count, cr.max_attempts, cr.next_attempt_at, cr.last_error_classification,
        cr.last_error_message, cb.accepted_at, cr.updated_at
    FROM herald.records rec
    JOIN herald.routes r ON r.notification_id = rec.notification_id AND r.notify_producer
    -- 00012's events (routes_callback_enqueue, callback_subscriptions_events_check).
    CROSS JOIN unnest(ARRAY['published', 'delivered', 'undelivered', 'dead_lettered', 'skipped', 'canceled', 'expired'])
        AS ev(event)
    JOIN herald.records cb ON cb.producer = rec.producer
        AND cb.idempotency_key = 'callback:' || r.notification_id || ':' || r.route_id || ':' || ev.event
    JOIN herald.routes cr ON cr.notification_id = cb.notification_id
    WHERE rec.notification_id = notification_callbacks.id
    ORDER BY cb.accepted_at, r.route_id, cb.notification_id;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.notification_callbacks(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.notification_callbacks(text) TO herald_operator, herald_auditor;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_timeline(id text)
RETURNS TABLE (
    at timestamptz,
    route_id text,
    channel text,
    event text,
    attempt integer,
    detail text
)
LANGUAGE sql STABLE
AS $$
    SELECT e.at, e.route_id, e.channel, e.event, e.attempt, e.detail
    FROM (
        SELECT rec.accepted_at AS at, 0 AS ord, '' AS route_id, '' AS channel, 'accepted' AS event, 0 AS attempt,
            format('type %s from %s, channels %s, priority %s', rec.notification_type, rec.producer,
                array_to_string(rec.channels, ','), rec.priority) AS detail
        FROM herald.records rec
        WHERE rec.notification_id = notification_timeline.id
        UNION ALL
        SELECT r.created_at, 1, r.route_id, r.channel, 'routed', 0,
            format('to %s, max attempts %s', r.recipient_ref,
                CASE WHEN r.max_attempts = 0 THEN 'channel default' ELSE r.max_attempts::text END)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id
        UNION ALL
        -- The last failure, unless it is the one that dead-lettered the route
        -- (shown below with its recovery hint), and the provider that took
        -- it: the last of routes.providers, or the one before the last when
        -- a later attempt published the route.
        SELECT r.last_error_at, 2, r.route_id, r.channel, 'failed', r.attempt_count,
            concat_ws(', ',
                'via ' || r.providers[cardinality(r.providers) - CASE r.status WHEN 'published' THEN 1 ELSE 0 END],
                format('%s: %s', r.last_error_classification, r.last_error_message))
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id
            AND r.last_error_at IS NOT NULL
            AND (r.dead_lettered_at IS NULL OR r.last_error_at < r.dead_lettered_at)
        UNION ALL
        -- The provider that published it: the last of routes.providers.
        SELECT r.published_at, 3, r.route_id, r.channel, 'published', r.attempt_count,
            concat_ws(', ',
                'via ' || r.providers[cardinality(r.providers)],
                'provider id ' || nullif(r.provider_message_id, ''))
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.published_at IS NOT NULL
        UNION ALL
        -- The provider of the final attempt: dead_letters.provider ('' when
        -- none took it, as for no_route), else the last of routes.providers.
        SELECT coalesce(d.created_at, r.dead_lettered_at), 3, r.route_id, r.channel, 'dead_lettered',
            coalesce(d.final_attempt_count, r.attempt_count),
            CASE WHEN d.notification_id IS NULL
                THEN concat_ws(', ', 'via ' || r.providers[cardinality(r.providers)],
                    format('%s: %s', r.last_error_classification, r.last_error_message))
                ELSE concat_ws(', ', 'via ' || nullif(d.provider, ''),
                    format('%s: %s (hint: %s)', d.failure_classification, d.failure_message, d.recovery_hint))
            END
        FROM herald.routes r
        LEFT JOIN herald.dead_letters d ON d.notification_id = r.notification_id AND d.route_id = r.route_id
        WHERE r.notification_id = notification_timeline.id AND r.dead_lettered_at IS NOT NULL
        UNION ALL
        SELECT r.skipped_at, 3, r.route_id, r.channel, 'skipped', r.attempt_count,
            format('%s: %s', r.last_error_classification, r.last_error_message)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.skipped_at IS NOT NULL
        UNION ALL
        SELECT r.canceled_at, 3, r.route_id, r.channel, 'canceled', r.attempt_count, ''
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.canceled_at IS NOT NULL
        UNION ALL
        -- Replays and cancels name the routes they moved in details.routes.
        SELECT a.at, 4, x.route_id, x.channel, a.action, 0,
            format('by %s (login %s): %s', a.actor, a.login, a.reason)
        FROM herald.audit_log a
        CROSS JOIN LATERAL jsonb_to_recordset(a.details -> 'routes')
            AS x(notification_id text, route_id text, channel text)
        WHERE a.details @> jsonb_build_object('routes', jsonb_build_array(jsonb_build_object('notification_id', notification_timeline.id)))
            AND x.notification_id = notification_timeline.id
        UNION ALL
        -- Cancels name the notification in their filter.
        SELECT a.at, 4, '', '', a.action, 0,
            format('by %s (login %s): %s (%s routes)', a.actor, a.login, a.reason, a.affected)
        FROM herald.audit_log a
        WHERE a.filter @> jsonb_build_object('notification_id', notification_timeline.id)
        UNION ALL
        -- The delivery receipts matched to its routes (migration 00009):
        -- the provider's status as sent, what it meant, and what the
        -- matcher did with it (matched, duplicate).
        SELECT dr.received_at, 3, dr.route_id, r.channel, 'receipt', r.attempt_count,
            concat_ws(', ',
                format('%s from %s: %s', dr.status, dr.provider, coalesce(dr.delivery_status, 'unknown')),
                'error ' || nullif(dr.error_code, ''),
                dr.state)
        FROM herald.delivery_receipts dr
        JOIN herald.routes r ON r.notification_id = dr.notification_id AND r.route_id = dr.route_id
        WHERE dr.notification_id = notification_timeline.id
        UNION ALL
        -- The status callbacks herald created about its routes (00012), one
        -- per route and event (herald.notification_callbacks): the event,
        -- the callback's own status (published: the producer was told;
        -- failed: not yet, retrying; dead_letter: herald gave up), and its
        -- last error while it has not got through.
        SELECT cb.created_at, 4, cb.route_id, cb.channel, 'callback', cb.attempts,
            concat_ws(', ',
                format('%s: %s', cb.event, cb.status),
                'callback ' || cb.callback_id,
                CASE WHEN cb.status IN ('failed', 'dead_letter')
                    THEN format('%s: %s', cb.error_classification, cb.error_message) END)
        FROM herald.notification_callbacks(notification_timeline.id) AS cb
        UNION ALL
        SELECT r.next_attempt_at, 5, r.route_id, r.channel,
            CASE r.status WHEN 'claimed' THEN 'lease_ends' ELSE 'next_attempt' END,
            r.attempt_count + CASE r.status WHEN 'claimed' THEN 0 ELSE 1 END, r.status
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.next_attempt_at IS NOT NULL
    ) AS e
    ORDER BY e.at, e.ord, e.route_id;
$$;
-- +goose StatementEnd

CREATE OR REPLACE VIEW herald.backlog_view AS
SELECT
    channel,
    status,
    count(*) AS routes,
    count(*) FILTER (WHERE next_attempt_at <= now()) AS due,
    min(next_attempt_at) FILTER (WHERE next_attempt_at <= now()) AS oldest_due_at,
    coalesce(now() - min(next_attempt_at) FILTER (WHERE next_attempt_at <= now()), interval '0') AS lag,
    min(next_attempt_at) FILTER (WHERE next_attempt_at > now()) AS next_due_at
FROM herald.routes
WHERE next_attempt_at IS NOT NULL
GROUP BY channel, status;

ALTER TABLE herald.routes SET (fillfactor = 70);
ALTER TABLE herald.routes DROP COLUMN lease_until;

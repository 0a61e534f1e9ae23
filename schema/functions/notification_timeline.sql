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
        -- The delivery receipts matched to its routes:
        -- the provider's status as sent, what it meant, and what the
        -- matcher did with it (matched, duplicate).
        SELECT dr.received_at, 3, dr.route_id, r.channel, 'receipt', coalesce(dr.attempt, r.attempt_count),
            concat_ws(', ',
                format('%s from %s: %s', dr.status, dr.provider, coalesce(dr.delivery_status, 'unknown')),
                'error ' || nullif(dr.error_code, ''),
                dr.state)
        FROM herald.delivery_receipts dr
        JOIN herald.routes r ON r.notification_id = dr.notification_id AND r.route_id = dr.route_id
        WHERE dr.notification_id = notification_timeline.id
        UNION ALL
        -- The status callbacks herald created about its routes, one
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

REVOKE ALL ON FUNCTION herald.notification_timeline(id text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.notification_timeline(id text) TO herald_operator;
GRANT ALL ON FUNCTION herald.notification_timeline(id text) TO herald_auditor;

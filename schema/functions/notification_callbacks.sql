-- The timeline's callbacks, through callback_of.
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
    -- The callback events (routes_callback_enqueue, callback_subscriptions_events_check).
    CROSS JOIN unnest(ARRAY['published', 'delivered', 'undelivered', 'dead_lettered', 'skipped', 'canceled', 'expired'])
        AS ev(event)
    JOIN herald.records cb ON cb.callback_of = r.notification_id AND cb.producer = rec.producer
        AND cb.idempotency_key = 'callback:' || r.notification_id || ':' || r.route_id || ':' || ev.event
    JOIN herald.routes cr ON cr.notification_id = cb.notification_id
    WHERE rec.notification_id = notification_callbacks.id
    ORDER BY cb.accepted_at, r.route_id, cb.notification_id;
$$;

REVOKE ALL ON FUNCTION herald.notification_callbacks(id text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.notification_callbacks(id text) TO herald_operator;
GRANT ALL ON FUNCTION herald.notification_callbacks(id text) TO herald_auditor;

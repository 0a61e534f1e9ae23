-- failed_callbacks_view: the callbacks herald could not deliver, per
-- producer: the dead-lettered routes of channel callback, with the event
-- and the route they were about (read from the callback's payload), newest
-- first. A producer reads its own through dead_letters, routes and records
-- (WHERE channel = 'callback'); `herald dead-letters replay --channel
-- callback` sends them again.
CREATE OR REPLACE VIEW herald.failed_callbacks_view AS
SELECT
    rec.producer,
    p -> 'data' ->> 'event' AS event,
    p -> 'data' ->> 'notification_id' AS notification_id,
    p -> 'data' ->> 'route_id' AS route_id,
    d.notification_id AS callback_id,
    d.route_id AS callback_route_id,
    d.recipient_ref AS url,
    d.final_attempt_count AS attempts,
    d.failure_classification AS classification,
    d.failure_message AS message,
    d.recovery_hint,
    rec.accepted_at AS event_at,
    d.created_at AS dead_lettered_at
FROM herald.dead_letters d
JOIN herald.records rec ON rec.notification_id = d.notification_id
CROSS JOIN LATERAL (SELECT rec.payload_json::jsonb -> 'callback' AS p) AS payload
WHERE d.channel = 'callback'
ORDER BY d.created_at DESC, d.notification_id DESC;

GRANT SELECT ON TABLE herald.failed_callbacks_view TO herald_operator;
GRANT SELECT ON TABLE herald.failed_callbacks_view TO herald_auditor;

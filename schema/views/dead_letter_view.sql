-- dead_letter_view: the dead letters with their record and route, for an
-- operator, and the provider of the route's final attempt
-- (dead_letters.provider, '' when no provider took it, as for no_route or
-- a channel without providers).
CREATE OR REPLACE VIEW herald.dead_letter_view AS
SELECT
    d.notification_id,
    d.route_id,
    rec.notification_type,
    rec.producer,
    d.recipient_ref,
    d.channel,
    d.final_attempt_count AS attempts,
    d.max_attempts,
    d.failure_classification AS classification,
    d.failure_message AS message,
    d.recovery_hint,
    rec.accepted_at,
    coalesce(r.last_error_at, d.created_at) AS last_failed_at,
    d.created_at AS dead_lettered_at,
    d.provider
FROM herald.dead_letters d
JOIN herald.routes r ON r.notification_id = d.notification_id AND r.route_id = d.route_id
JOIN herald.records rec ON rec.notification_id = d.notification_id;

GRANT SELECT ON TABLE herald.dead_letter_view TO herald_operator;
GRANT SELECT ON TABLE herald.dead_letter_view TO herald_auditor;

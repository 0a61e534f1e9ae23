-- malformed_view: the intake entries the validator refused, newest first
-- (along malformed_intents_listing_idx).
CREATE OR REPLACE VIEW herald.malformed_view AS
SELECT
    stream_entry_id,
    recorded_at,
    failure_code,
    failure_message,
    producer,
    notification_type,
    idempotency_key,
    raw_fields
FROM herald.malformed_intents
ORDER BY recorded_at DESC, stream_entry_id DESC;

GRANT SELECT ON TABLE herald.malformed_view TO herald_operator;
GRANT SELECT ON TABLE herald.malformed_view TO herald_auditor;

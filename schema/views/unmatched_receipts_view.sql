-- Receipts an operator should look at: unmatched (no route had the id in
-- the window) and malformed ones, newest first.
CREATE OR REPLACE VIEW herald.unmatched_receipts_view AS
SELECT id, provider, provider_message_id, status, error_code, source, state, received_at, match_attempts,
    left(raw, 200) AS raw_start
FROM herald.delivery_receipts
WHERE state IN ('unmatched', 'malformed')
ORDER BY received_at DESC;

GRANT SELECT ON TABLE herald.unmatched_receipts_view TO herald_operator;
GRANT SELECT ON TABLE herald.unmatched_receipts_view TO herald_auditor;

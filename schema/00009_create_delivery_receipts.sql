-- +goose Up
-- Delivery receipts: what providers say happened after they
-- accepted a message, stored first, matched to routes later.
--
-- Every receipt is written to delivery_receipts as it arrived, before its
-- sender is answered and before anything else happens, by one of three
-- doors: serve's HTTP endpoint (per provider), the SMPP driver (deliver_sm
-- with the receipt flag, before deliver_sm_resp), or a plain INSERT. The
-- matcher (internal/receipt, batched, SKIP LOCKED) then finds each one's
-- route by (provider, provider message id) and records the route's
-- delivery status beside its scheduling state, which it never moves back:
-- published stays terminal.

CREATE TABLE herald.delivery_receipts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- As it arrived.
    provider text NOT NULL,
    provider_message_id text NOT NULL DEFAULT '',
    status text NOT NULL DEFAULT '',
    error_code text NOT NULL DEFAULT '',
    raw text NOT NULL DEFAULT '',
    source text NOT NULL DEFAULT 'sql',
    received_at timestamptz NOT NULL DEFAULT now(),
    -- The matcher's.
    --   new: not matched yet; tried again at next_match_at while its window
    --     lasts (a receipt may come before the completion that writes the
    --     provider's id);
    --   matched: it set its route's delivery status;
    --   duplicate: its route had that status already (or a final one);
    --   unmatched: no route had its id within the window; kept;
    --   malformed: no message id or status could be read; kept.
    state text NOT NULL DEFAULT 'new',
    next_match_at timestamptz NOT NULL DEFAULT now(),
    match_attempts integer NOT NULL DEFAULT 0,
    delivery_status text,
    notification_id text,
    route_id text,
    matched_at timestamptz,
    CONSTRAINT delivery_receipts_source_check CHECK (source IN ('http', 'smpp', 'sql')),
    CONSTRAINT delivery_receipts_state_check CHECK (state IN ('new', 'matched', 'duplicate', 'unmatched', 'malformed')),
    CONSTRAINT delivery_receipts_delivery_status_check CHECK (
        delivery_status IS NULL OR delivery_status IN ('delivered', 'undelivered', 'expired', 'unknown')),
    CONSTRAINT delivery_receipts_size_check CHECK (
        length(provider) <= 200 AND length(provider_message_id) <= 200 AND length(status) <= 200
        AND length(error_code) <= 200 AND length(raw) <= 65536)
);

-- The matcher's queue: receipts still to match, by when they are due.
CREATE INDEX delivery_receipts_due_idx ON herald.delivery_receipts (next_match_at) WHERE state = 'new';
-- What an operator looks for: the receipts of one message, and the ones
-- that matched nothing.
CREATE INDEX delivery_receipts_message_idx ON herald.delivery_receipts (provider, provider_message_id);
CREATE INDEX delivery_receipts_unmatched_idx ON herald.delivery_receipts (received_at DESC)
    WHERE state IN ('unmatched', 'malformed');

-- Wake the matcher, once per statement.
-- +goose StatementBegin
CREATE FUNCTION herald.delivery_receipts_notify() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pg_notify('herald_receipts', '');
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.delivery_receipts_notify() FROM PUBLIC;
CREATE TRIGGER delivery_receipts_notify AFTER INSERT ON herald.delivery_receipts
    FOR EACH STATEMENT EXECUTE FUNCTION herald.delivery_receipts_notify();

-- Routes learn what happened after publication.
--   receipt_key: "<provider> <provider message id>", written by the
--     completion only for a provider that sends receipts, so only those
--     routes pay for routes_receipt_key_idx (NULL is outside it).
--   delivery_status / delivery_status_at / delivery_error /
--     delivery_error_permanent: the receipt's verdict, beside the
--     scheduling status.
ALTER TABLE herald.routes
    ADD COLUMN receipt_key text,
    ADD COLUMN delivery_status text,
    ADD COLUMN delivery_status_at timestamptz,
    ADD COLUMN delivery_error text NOT NULL DEFAULT '',
    ADD COLUMN delivery_error_permanent boolean,
    ADD CONSTRAINT routes_delivery_status_check CHECK (
        delivery_status IS NULL OR delivery_status IN ('delivered', 'undelivered', 'expired', 'unknown'));
CREATE INDEX routes_receipt_key_idx ON herald.routes (receipt_key) WHERE receipt_key IS NOT NULL;

-- A producer's direct INSERT writes none of these (00007's policy, with
-- them added).
DROP POLICY producer_insert ON herald.routes;
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (
        herald.notification_is_mine(notification_id)
        AND herald.routes_address_ok(channel, recipient_ref)
        AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '' AND providers IS NULL
        AND receipt_key IS NULL AND delivery_status IS NULL AND delivery_status_at IS NULL
        AND delivery_error = '' AND delivery_error_permanent IS NULL);

-- Receipts an operator should look at: unmatched (no route had the id in
-- the window) and malformed ones, newest first.
CREATE VIEW herald.unmatched_receipts_view AS
SELECT id, provider, provider_message_id, status, error_code, source, state, received_at, match_attempts,
    left(raw, 200) AS raw_start
FROM herald.delivery_receipts
WHERE state IN ('unmatched', 'malformed')
ORDER BY received_at DESC;

-- Plain SQL is the third door: an operator's login (or a relay's, for a
-- gateway that forwards receipts) may INSERT the fields as they arrived;
-- the matcher's columns keep their defaults.
GRANT INSERT (provider, provider_message_id, status, error_code, raw) ON herald.delivery_receipts
    TO herald_operator, herald_relay;
GRANT SELECT ON herald.delivery_receipts, herald.unmatched_receipts_view TO herald_operator, herald_auditor;

-- +goose Down
DROP VIEW IF EXISTS herald.unmatched_receipts_view;
DROP POLICY producer_insert ON herald.routes;
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (
        herald.notification_is_mine(notification_id)
        AND herald.routes_address_ok(channel, recipient_ref)
        AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '' AND providers IS NULL);
DROP INDEX IF EXISTS herald.routes_receipt_key_idx;
ALTER TABLE herald.routes
    DROP CONSTRAINT routes_delivery_status_check,
    DROP COLUMN delivery_error_permanent,
    DROP COLUMN delivery_error,
    DROP COLUMN delivery_status_at,
    DROP COLUMN delivery_status,
    DROP COLUMN receipt_key;
DROP TABLE IF EXISTS herald.delivery_receipts;
DROP FUNCTION IF EXISTS herald.delivery_receipts_notify();

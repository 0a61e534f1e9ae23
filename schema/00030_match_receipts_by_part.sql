-- +goose Up
-- Receipts are matched to every part of a long SMS, to the route that held
-- their id when they arrived, and say which attempt they were about; a
-- provider's health says when it cannot send at all.
--
-- routes:
--   receipt_parts: for a message the provider took in several parts, the
--     receipt key ("<provider> <message id>") of every part, in part
--     order; NULL for a message of one part, whose one key is receipt_key.
--     A receipt for any part finds the route through
--     routes_receipt_parts_idx, which holds only multi-part routes, so a
--     route of one part pays nothing for it.
--   part_delivery_statuses: the delivery status each part's receipts
--     reported, in part order ('' for a part with none yet); NULL until
--     the first. The route's delivery_status follows from them: undelivered
--     when any part is, else expired when any part is, else delivered when
--     any is (every part that reported is delivered), else unknown.
--   receipt_keyed_at: when the attempt that got the provider's id(s) was
--     claimed, on the database's clock. Providers' ids are unique only for
--     a while (an SMSC's counter restarts): a receipt belongs to the most
--     recent route keyed at or before its arrival.
ALTER TABLE herald.routes
    ADD COLUMN receipt_parts text[],
    ADD COLUMN part_delivery_statuses text[],
    ADD COLUMN receipt_keyed_at timestamptz;
COMMENT ON COLUMN herald.routes.receipt_parts IS
    'The receipt key ("<provider> <message id>") of every part of a message sent in parts, in part order; NULL for one part (receipt_key).';
COMMENT ON COLUMN herald.routes.part_delivery_statuses IS
    'Per part, in part order, the delivery status its receipts reported ('''' while none). The route''s delivery_status is undelivered if any part is, else expired if any is, else delivered if any is, else unknown.';
COMMENT ON COLUMN herald.routes.receipt_keyed_at IS
    'When the attempt that got the provider''s message id(s) was claimed: a receipt belongs to the most recent route keyed at or before it arrived.';

-- Created on the parent, so every partition has it, and each week made
-- later gets it when it is attached. fastupdate off: a receipt's lookup
-- probes the index alone, never a pending list.
CREATE INDEX routes_receipt_parts_idx ON herald.routes USING gin (receipt_parts) WITH (fastupdate = off)
    WHERE receipt_parts IS NOT NULL;

-- A producer inserts routes with none of these set: a forged key would
-- take another route's receipts.
ALTER POLICY producer_insert ON herald.routes
    WITH CHECK (herald.notification_is_mine(notification_id) AND channel <> 'callback'
        AND herald.routes_address_ok(channel, recipient_ref) AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '!vet' AND providers IS NULL AND receipt_key IS NULL
        AND delivery_status IS NULL AND delivery_status_at IS NULL AND delivery_error = ''
        AND delivery_error_permanent IS NULL AND finished_at IS NULL
        AND receipt_parts IS NULL AND part_delivery_statuses IS NULL AND receipt_keyed_at IS NULL);

-- delivery_receipts.attempt: the attempt of its route the receipt was
-- matched to (the route's attempt count then); NULL until matched.
ALTER TABLE herald.delivery_receipts ADD COLUMN attempt integer;
COMMENT ON COLUMN herald.delivery_receipts.attempt IS
    'The attempt of its route the receipt was matched to; NULL until matched, and for receipts matched before migration 00030.';

-- The timeline's receipt events carry that attempt, not the route's last.
-- The function is edited in place (one expression), so that its one
-- definition stays the one written in migration 00019.
-- +goose StatementBegin
DO $$
DECLARE
    def text := pg_get_functiondef('herald.notification_timeline(text)'::regprocedure);
    edited text := replace(def, '''receipt'', r.attempt_count,', '''receipt'', coalesce(dr.attempt, r.attempt_count),');
BEGIN
    IF edited = def THEN
        RAISE EXCEPTION 'notification_timeline: the receipt event''s attempt expression was not found';
    END IF;
    EXECUTE edited;
END
$$;
-- +goose StatementEnd

-- A provider that cannot send at all (an SMPP provider with no bind up,
-- because the SMSC refuses it or cannot be reached): its routes wait
-- without spending attempts, counted here per bucket, with why.
ALTER TABLE herald.provider_health
    ADD COLUMN unavailable bigint NOT NULL DEFAULT 0,
    ADD COLUMN unavailable_reason text NOT NULL DEFAULT '';
COMMENT ON COLUMN herald.provider_health.throttled IS
    'Routes that waited for the provider''s cap, and attempts the provider answered with a request to slow down (SMPP ESME_RTHROTTLED or ESME_RMSGQFUL, HTTP 429): never counted as transient failures.';
COMMENT ON COLUMN herald.provider_health.unavailable IS
    'Health rounds (one a second per serve process) in which the provider could not send at all.';
COMMENT ON COLUMN herald.provider_health.unavailable_reason IS
    'Why the provider could not send, as last seen in the bucket (e.g. the SMSC refused the bind: ESME_RINVPASWD).';

CREATE OR REPLACE VIEW herald.provider_health_view AS
SELECT
    p.name AS provider,
    p.channel,
    p.driver,
    p.cap_per_second,
    coalesce(c.state, 'closed') AS circuit,
    c.open_until,
    coalesce(c.reason, '') AS circuit_reason,
    coalesce(sum(h.delivered), 0)::bigint AS delivered_5m,
    coalesce(sum(h.transient), 0)::bigint AS transient_5m,
    coalesce(sum(h.permanent), 0)::bigint AS permanent_5m,
    coalesce(sum(h.throttled), 0)::bigint AS throttled_5m,
    CASE WHEN coalesce(sum(h.delivered + h.transient + h.permanent), 0) = 0 THEN NULL
        ELSE round((sum(h.latency_seconds_sum) / sum(h.delivered + h.transient + h.permanent))::numeric, 4)
    END AS mean_latency_seconds_5m,
    max(h.latency_seconds_max) AS max_latency_seconds_5m,
    (SELECT max(e.at) FROM herald.provider_events e WHERE e.provider = p.name) AS last_event_at,
    coalesce(sum(h.unavailable), 0)::bigint AS unavailable_5m,
    -- The reason of the last half minute's latest bucket that had one:
    -- empty once the provider can send again.
    coalesce((SELECT u.unavailable_reason FROM herald.provider_health u
        WHERE u.provider = p.name AND u.unavailable_reason <> '' AND u.bucket >= now() - interval '30 seconds'
        ORDER BY u.bucket DESC LIMIT 1), '') AS unavailable_reason
FROM herald.providers p
LEFT JOIN herald.provider_circuits c ON c.provider = p.name
LEFT JOIN herald.provider_health h ON h.provider = p.name AND h.bucket >= now() - interval '5 minutes'
GROUP BY p.name, p.channel, p.driver, p.cap_per_second, c.state, c.open_until, c.reason;

-- +goose Down
-- CREATE OR REPLACE cannot drop a view's columns: made again, with its grants.
DROP VIEW herald.provider_health_view;
CREATE VIEW herald.provider_health_view AS
SELECT
    p.name AS provider,
    p.channel,
    p.driver,
    p.cap_per_second,
    coalesce(c.state, 'closed') AS circuit,
    c.open_until,
    coalesce(c.reason, '') AS circuit_reason,
    coalesce(sum(h.delivered), 0)::bigint AS delivered_5m,
    coalesce(sum(h.transient), 0)::bigint AS transient_5m,
    coalesce(sum(h.permanent), 0)::bigint AS permanent_5m,
    coalesce(sum(h.throttled), 0)::bigint AS throttled_5m,
    CASE WHEN coalesce(sum(h.delivered + h.transient + h.permanent), 0) = 0 THEN NULL
        ELSE round((sum(h.latency_seconds_sum) / sum(h.delivered + h.transient + h.permanent))::numeric, 4)
    END AS mean_latency_seconds_5m,
    max(h.latency_seconds_max) AS max_latency_seconds_5m,
    (SELECT max(e.at) FROM herald.provider_events e WHERE e.provider = p.name) AS last_event_at
FROM herald.providers p
LEFT JOIN herald.provider_circuits c ON c.provider = p.name
LEFT JOIN herald.provider_health h ON h.provider = p.name AND h.bucket >= now() - interval '5 minutes'
GROUP BY p.name, p.channel, p.driver, p.cap_per_second, c.state, c.open_until, c.reason;
GRANT SELECT ON herald.provider_health_view TO herald_operator, herald_auditor;
ALTER TABLE herald.provider_health DROP COLUMN unavailable, DROP COLUMN unavailable_reason;
COMMENT ON COLUMN herald.provider_health.throttled IS NULL;

-- +goose StatementBegin
DO $$
DECLARE
    def text := pg_get_functiondef('herald.notification_timeline(text)'::regprocedure);
BEGIN
    EXECUTE replace(def, '''receipt'', coalesce(dr.attempt, r.attempt_count),', '''receipt'', r.attempt_count,');
END
$$;
-- +goose StatementEnd
ALTER TABLE herald.delivery_receipts DROP COLUMN attempt;

ALTER POLICY producer_insert ON herald.routes
    WITH CHECK (herald.notification_is_mine(notification_id) AND channel <> 'callback'
        AND herald.routes_address_ok(channel, recipient_ref) AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '!vet' AND providers IS NULL AND receipt_key IS NULL
        AND delivery_status IS NULL AND delivery_status_at IS NULL AND delivery_error = ''
        AND delivery_error_permanent IS NULL AND finished_at IS NULL);
DROP INDEX herald.routes_receipt_parts_idx;
ALTER TABLE herald.routes
    DROP COLUMN receipt_parts,
    DROP COLUMN part_delivery_statuses,
    DROP COLUMN receipt_keyed_at;

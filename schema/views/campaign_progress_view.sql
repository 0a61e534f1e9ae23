-- campaign_progress_view: each campaign with its routes counted by where
-- they stand, and its state as seed 002 names them: scheduled (send_at
-- ahead, nothing out yet), sending, completed (nothing left to do),
-- canceling (a cancel is under way) and canceled. pending counts routes
-- not out yet (pending, claimed, failed); published those that went out,
-- delivered those of them a receipt says reached the recipient; dead the
-- dead letters. It runs with the caller's privileges (security_invoker):
-- a producer sees its own campaigns, operators and auditors every one.
-- Filter on producer and campaign: the filter reaches records_campaign_idx.
-- It counts every route of the campaigns it shows (for a campaign of a
-- million routes, a second or so): a question for a person, not a loop.
CREATE OR REPLACE VIEW herald.campaign_progress_view WITH (security_invoker = true) AS
SELECT
    c.producer,
    c.campaign,
    c.send_at,
    c.created_at,
    c.cancel_requested_at,
    c.canceled_by,
    c.cancel_reason,
    c.canceled_at,
    count(DISTINCT rec.notification_id)::bigint AS notifications,
    count(r.route_id)::bigint AS routes,
    count(*) FILTER (WHERE r.status IN ('pending', 'claimed', 'failed'))::bigint AS pending,
    count(*) FILTER (WHERE r.status = 'published')::bigint AS published,
    count(*) FILTER (WHERE r.delivery_status = 'delivered')::bigint AS delivered,
    count(*) FILTER (WHERE r.status = 'dead_letter')::bigint AS dead,
    count(*) FILTER (WHERE r.status = 'canceled')::bigint AS canceled,
    count(*) FILTER (WHERE r.status = 'skipped')::bigint AS skipped,
    CASE
        WHEN c.canceled_at IS NOT NULL THEN 'canceled'
        WHEN c.cancel_requested_at IS NOT NULL THEN 'canceling'
        -- Nothing left to do (with no route at all: retention removed
        -- them, the campaign having finished long ago).
        WHEN count(*) FILTER (WHERE r.status IN ('pending', 'claimed', 'failed')) = 0 THEN 'completed'
        WHEN c.send_at > now() AND count(*) FILTER (WHERE r.status IN ('published', 'dead_letter', 'skipped') OR r.attempt_count > 0) = 0
            THEN 'scheduled'
        ELSE 'sending'
    END AS state
FROM herald.campaigns c
LEFT JOIN herald.records rec ON rec.producer = c.producer AND rec.campaign = c.campaign
LEFT JOIN herald.routes r ON r.notification_id = rec.notification_id
GROUP BY c.producer, c.campaign;

GRANT SELECT ON TABLE herald.campaign_progress_view TO herald_operator;
GRANT SELECT ON TABLE herald.campaign_progress_view TO herald_auditor;
GRANT SELECT ON TABLE herald.campaign_progress_view TO herald_producer;

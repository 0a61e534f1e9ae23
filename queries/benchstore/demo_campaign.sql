-- The demo's campaign part, read back from the
-- database: what the audit log says of a campaign's cancel.

-- name: DemoCampaignCancelAudit :one
-- The audit rows a campaign's cancel wrote (one per batch that canceled
-- something) and the routes they say it canceled.
SELECT count(*)::bigint AS audit_rows, coalesce(sum(affected), 0)::bigint AS audited_routes
FROM herald.audit_log
WHERE action = 'campaign_cancel'
    AND filter = jsonb_build_object('producer', @producer::text, 'campaign', @campaign::text);

-- Queries of herald.campaigns and its progress view (migration 00020): a
-- producer's intents grouped under one campaign id, scheduled, shown and
-- canceled as one.
--
-- ---------------------------------------------------------------------------

-- name: CampaignJoin :many
-- The campaigns of an accept batch's intents, created if new (with the
-- first intent's send_at) and locked FOR SHARE until the accept commits
-- (schema function herald.campaign_join: a cancel that starts meanwhile
-- waits for this accept, and an accept after a cancel sees it). Paid only
-- by batches that name a campaign. A send_at element that is the zero time
-- means none, as in RecordInsertMany.
SELECT
    j.producer::text AS producer,
    j.campaign::text AS campaign,
    -- The zero time for none, as given.
    coalesce(j.send_at, '0001-01-01 00:00:00+00')::timestamptz AS send_at,
    j.canceled::boolean AS canceled
FROM herald.campaign_join(
    @producers::text[],
    @campaigns::text[],
    ARRAY(SELECT nullif(s, '0001-01-01 00:00:00+00') FROM unnest(@send_ats::timestamptz[]) AS s),
    sqlc.narg('now')::timestamptz) AS j;

-- name: CampaignCancelBatch :one
-- One batch of a campaign's cancel, a short transaction of its own when
-- run outside one (schema function herald.campaign_cancel_batch: routes not
-- gone out are canceled, FOR UPDATE SKIP LOCKED; routes in flight are left
-- to their dispatcher and picked up by a later sweep; one audit row per
-- batch). An unknown campaign, or another producer's, fails with
-- no_data_found.
SELECT
    b.canceled::bigint AS canceled,
    b.in_flight::bigint AS in_flight,
    b.done::boolean AS done
FROM herald.campaign_cancel_batch(@producer::text, @campaign::text, @actor::text, @reason::text,
    @batch_size::integer, sqlc.narg('now')::timestamptz) AS b;

-- name: CampaignList :many
-- The campaigns the caller may see (row-level security: a producer's own),
-- of one producer when @producer is not '', newest first, with their
-- progress (campaign_progress_view, which counts their routes).
SELECT *
FROM herald.campaign_progress_view
WHERE (@producer::text = '' OR producer = @producer::text)
ORDER BY created_at DESC, producer, campaign
LIMIT @max_rows::integer;

-- name: CampaignGet :one
-- One campaign with its progress; no rows when it does not exist or the
-- caller may not see it.
SELECT *
FROM herald.campaign_progress_view
WHERE producer = @producer::text AND campaign = @campaign::text;

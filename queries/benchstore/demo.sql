-- Queries used only by `herald demo` (internal/harness/demo): its raw intake door
-- and what it reads back to show a run's progress and outcome. None of them
-- is on the engine's path.

-- name: IntakeInsertReturning :many
-- The demo's raw door: inserts entries as any producer would with psql, in
-- one statement (one herald_intake hint), and returns their ids so the
-- demo can find the malformed ones ('intake:' || id) afterwards.
INSERT INTO herald.intake (body)
SELECT unnest(@bodies::text[])
RETURNING id;

-- name: IntakeCount :one
-- The entries waiting in the intake, for the demo's progress line.
SELECT count(*) FROM herald.intake;

-- name: RouteProgressByRequestPrefix :one
-- The demo's progress line: the routes of the notifications whose
-- request_id starts with @prefix (one demo run), by status; not the status
-- callbacks about them, which copy their request_id (DemoCallbackCounts
-- counts those). A sequential scan of records is fine for the demo's few
-- thousand rows; no index serves request_id.
SELECT
    count(*)::bigint AS total,
    count(*) FILTER (WHERE rt.status = 'pending')::bigint AS pending,
    count(*) FILTER (WHERE rt.status = 'claimed')::bigint AS claimed,
    count(*) FILTER (WHERE rt.status = 'failed')::bigint AS failed,
    count(*) FILTER (WHERE rt.status = 'published')::bigint AS published,
    count(*) FILTER (WHERE rt.status = 'dead_letter')::bigint AS dead_letter,
    count(*) FILTER (WHERE rt.status = 'skipped')::bigint AS skipped,
    count(*) FILTER (WHERE rt.status = 'canceled')::bigint AS canceled
FROM herald.records r
JOIN herald.routes rt ON rt.notification_id = r.notification_id
WHERE starts_with(r.request_id, @prefix::text) AND rt.channel <> 'callback';

-- name: RecordSummaryByRequestPrefix :one
-- The demo's summary, from the database alone: the notifications of one
-- run (request_id starting with @prefix; not the status callbacks about
-- them, which copy their request_id), their routes by outcome, the
-- routes that needed more than one attempt, and the seconds from the first
-- acceptance to the last terminal change, for the throughput (0 while
-- nothing is accepted or finished).
SELECT
    (SELECT count(*) FROM herald.records r0
        WHERE starts_with(r0.request_id, @prefix::text) AND NOT 'callback' = ANY (r0.channels))::bigint AS notifications,
    count(rt.route_id)::bigint AS routes,
    count(*) FILTER (WHERE rt.status = 'published')::bigint AS published,
    count(*) FILTER (WHERE rt.status = 'dead_letter')::bigint AS dead_lettered,
    count(*) FILTER (WHERE rt.status = 'skipped')::bigint AS skipped,
    count(*) FILTER (WHERE rt.status = 'canceled')::bigint AS canceled,
    count(*) FILTER (WHERE rt.status IN ('pending', 'claimed', 'failed'))::bigint AS unfinished,
    count(*) FILTER (WHERE rt.attempt_count > 1)::bigint AS retried,
    coalesce(sum(rt.attempt_count), 0)::bigint AS attempts,
    coalesce(extract(epoch FROM
        max(coalesce(rt.published_at, rt.dead_lettered_at, rt.skipped_at, rt.canceled_at)) - min(r.accepted_at)
    ), 0)::float8 AS seconds
FROM herald.records r
JOIN herald.routes rt ON rt.notification_id = r.notification_id
WHERE starts_with(r.request_id, @prefix::text) AND rt.channel <> 'callback';

-- name: DeadLetterCountByRequestPrefix :many
-- The demo's dead letters of one run, by channel and classification (its
-- failed status callbacks are DemoCallbackCounts').
SELECT d.channel, d.failure_classification, count(*)::bigint AS dead_letters
FROM herald.dead_letters d
JOIN herald.records r ON r.notification_id = d.notification_id
WHERE starts_with(r.request_id, @prefix::text) AND d.channel <> 'callback'
GROUP BY d.channel, d.failure_classification
ORDER BY d.channel, d.failure_classification;

-- name: MalformedIntentCountByEntryIDs :many
-- The demo's malformed intents, by failure code, among the intake entries
-- it inserted.
SELECT failure_code, count(*)::bigint AS malformed
FROM herald.malformed_intents
WHERE stream_entry_id = ANY(@entry_refs::text[])
GROUP BY failure_code
ORDER BY failure_code;

-- name: DemoProviderCounts :many
-- Per provider, the attempts routes.providers records among one run's
-- routes (request_id starting with @run_prefix), the routes it took at
-- least one attempt of, and the routes whose last attempt it took,
-- published or dead-lettered. A sequential scan of records, as the demo's
-- other reads.
SELECT
    p.provider::text AS provider,
    count(*)::bigint AS attempts,
    count(DISTINCT (rt.notification_id, rt.route_id))::bigint AS routes,
    count(*) FILTER (WHERE p.n = cardinality(rt.providers) AND rt.status = 'published')::bigint AS published,
    count(*) FILTER (WHERE p.n = cardinality(rt.providers) AND rt.status = 'dead_letter')::bigint AS dead_lettered
FROM herald.records r
JOIN herald.routes rt ON rt.notification_id = r.notification_id
CROSS JOIN LATERAL unnest(rt.providers) WITH ORDINALITY AS p(provider, n)
WHERE starts_with(r.request_id, @run_prefix::text)
GROUP BY p.provider
ORDER BY p.provider;

-- name: DemoFailovers :one
-- One run's SMS routes whose attempts went to more than one provider (and
-- those of them published), and the SMS attempts that recorded no
-- provider: made by the channel's own driver, before the engine had loaded
-- the providers (a skipped route reached no driver).
SELECT
    count(*) FILTER (WHERE f.failed_over)::bigint AS failed_over,
    count(*) FILTER (WHERE f.failed_over AND rt.status = 'published')::bigint AS failed_over_published,
    coalesce(sum(rt.attempt_count - coalesce(cardinality(rt.providers), 0))
        FILTER (WHERE rt.status <> 'skipped'), 0)::bigint AS channel_driver_attempts
FROM herald.records r
JOIN herald.routes rt ON rt.notification_id = r.notification_id
CROSS JOIN LATERAL (
    SELECT EXISTS (SELECT 1 FROM unnest(rt.providers) AS p WHERE p <> rt.providers[1]) AS failed_over
) AS f
WHERE starts_with(r.request_id, @run_prefix::text) AND rt.channel = 'sms';

-- name: DemoDeliveryStatusCounts :many
-- Per provider, one run's SMS routes whose last attempt it took: those
-- published, and the delivery status receipts gave them (none: published
-- with no receipt matched yet). A route's unknown status (ENROUTE) is
-- replaced by a final one when that comes, so each route counts once.
SELECT
    rt.providers[cardinality(rt.providers)]::text AS provider,
    count(*) FILTER (WHERE rt.status = 'published')::bigint AS published,
    count(*) FILTER (WHERE rt.delivery_status = 'delivered')::bigint AS delivered,
    count(*) FILTER (WHERE rt.delivery_status = 'undelivered')::bigint AS undelivered,
    count(*) FILTER (WHERE rt.delivery_status = 'expired')::bigint AS expired,
    count(*) FILTER (WHERE rt.delivery_status = 'unknown')::bigint AS unknown,
    count(*) FILTER (WHERE rt.status = 'published' AND rt.delivery_status IS NULL)::bigint AS no_status
FROM herald.records r
JOIN herald.routes rt ON rt.notification_id = r.notification_id
WHERE starts_with(r.request_id, @run_prefix::text) AND rt.channel = 'sms' AND cardinality(rt.providers) > 0
GROUP BY 1
ORDER BY 1;

-- name: DemoReceiptCounts :many
-- Per provider, the receipts of one run in the inbox by what the matcher
-- made of them: those matched to the run's routes (request_id starting
-- with @run_prefix), and those matched to none, received since @since from
-- one of @providers (the demo's own, which exist only while it runs).
-- Early: matched (or found duplicate) on a later try, because the receipt
-- came before the completion had written the provider's message id.
SELECT
    d.provider,
    count(*)::bigint AS received,
    count(*) FILTER (WHERE d.state = 'matched')::bigint AS matched,
    count(*) FILTER (WHERE d.state = 'duplicate')::bigint AS duplicate,
    count(*) FILTER (WHERE d.state = 'unmatched')::bigint AS unmatched,
    count(*) FILTER (WHERE d.state = 'malformed')::bigint AS malformed,
    count(*) FILTER (WHERE d.state = 'new')::bigint AS waiting,
    count(*) FILTER (WHERE d.state IN ('matched', 'duplicate') AND d.match_attempts > 1)::bigint AS early
FROM herald.delivery_receipts d
LEFT JOIN herald.records r ON r.notification_id = d.notification_id
WHERE d.provider = ANY (@providers::text[]) AND d.received_at >= @since::timestamptz
    AND (d.notification_id IS NULL OR starts_with(r.request_id, @run_prefix::text))
GROUP BY d.provider
ORDER BY d.provider;

-- name: DemoCallbackCounts :many
-- One run's status callbacks by event: the callback records the trigger
-- created about the run's routes (they copy the route's request_id; their
-- type is herald.callback.<event>), delivered (their route published),
-- failed (dead-lettered), still waiting, and retried (more than one
-- attempt: a 5xx, or a wait behind an earlier callback of the same route).
SELECT
    substr(r.notification_type, length('herald.callback.') + 1)::text AS event,
    count(*)::bigint AS created,
    count(*) FILTER (WHERE rt.status = 'published')::bigint AS delivered,
    count(*) FILTER (WHERE rt.status = 'dead_letter')::bigint AS failed,
    count(*) FILTER (WHERE rt.status IN ('pending', 'claimed', 'failed'))::bigint AS waiting,
    count(*) FILTER (WHERE rt.attempt_count > 1)::bigint AS retried
FROM herald.records r
JOIN herald.routes rt ON rt.notification_id = r.notification_id
WHERE starts_with(r.request_id, @run_prefix::text) AND rt.channel = 'callback'
GROUP BY 1
ORDER BY 1;

-- name: DemoPlaneProgress :one
-- What the demo waits for once every route of the run is terminal: the
-- receipts of @providers since @since still to match (the due index's
-- rows), and the run's status callbacks not yet delivered or failed.
SELECT
    (SELECT count(*) FROM herald.delivery_receipts d
        WHERE d.state = 'new' AND d.provider = ANY (@providers::text[]) AND d.received_at >= @since::timestamptz
    )::bigint AS receipts_waiting,
    (SELECT count(*) FROM herald.records r
        JOIN herald.routes rt ON rt.notification_id = r.notification_id
        WHERE starts_with(r.request_id, @run_prefix::text) AND rt.channel = 'callback'
            AND rt.status IN ('pending', 'claimed', 'failed')
    )::bigint AS callbacks_waiting;

-- name: DemoRouteStorage :many
-- Where one run's routes are stored (migration 00025): per partition of
-- routes (routes_live, or the finished week's routes_fYYYYMMDD), how many
-- and in which statuses, naming them.
SELECT rt.tableoid::regclass::text AS partition,
    count(*)::bigint AS routes,
    string_agg(DISTINCT rt.status, ', ' ORDER BY rt.status)::text AS statuses
FROM herald.routes rt
JOIN herald.records r ON r.notification_id = rt.notification_id
WHERE starts_with(r.request_id, @prefix::text) AND rt.channel <> 'callback'
GROUP BY 1
ORDER BY 1;

-- name: DemoRecordStorage :many
-- Where one run's records are stored (migration 00027): per partition of
-- records (the week it was accepted in, records_wYYYYMMDD), how many, and
-- how many of them hold their idempotency key in herald.idempotency_keys
-- (migration 00026).
SELECT r.tableoid::regclass::text AS partition,
    count(*)::bigint AS records,
    count(k.notification_id)::bigint AS keys
FROM herald.records r
LEFT JOIN herald.idempotency_keys k
    ON k.producer = r.producer AND k.idempotency_key = r.idempotency_key AND k.notification_id = r.notification_id
WHERE starts_with(r.request_id, @prefix::text)
GROUP BY 1
ORDER BY 1;

-- name: DemoRouteReceiptStates :many
-- The receipts matched, or left, to one route, by the matcher's state: the
-- demo's long SMS.
SELECT state, count(*)::bigint AS receipts
FROM herald.delivery_receipts
WHERE notification_id = @notification_id::text AND route_id = @route_id::text
GROUP BY state
ORDER BY state;

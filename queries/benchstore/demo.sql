-- Queries used only by `herald demo` (internal/demo): its raw intake door
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
-- request_id starts with @prefix (one demo run), by status. A sequential
-- scan of records is fine for the demo's few thousand rows; no index serves
-- request_id.
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
WHERE starts_with(r.request_id, @prefix::text);

-- name: RecordSummaryByRequestPrefix :one
-- The demo's summary, from the database alone: the notifications of one
-- run (request_id starting with @prefix), their routes by outcome, the
-- routes that needed more than one attempt, and the seconds from the first
-- acceptance to the last terminal change, for the throughput (0 while
-- nothing is accepted or finished).
SELECT
    (SELECT count(*) FROM herald.records r0 WHERE starts_with(r0.request_id, @prefix::text))::bigint AS notifications,
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
WHERE starts_with(r.request_id, @prefix::text);

-- name: DeadLetterCountByRequestPrefix :many
-- The demo's dead letters of one run, by channel and classification.
SELECT d.channel, d.failure_classification, count(*)::bigint AS dead_letters
FROM herald.dead_letters d
JOIN herald.records r ON r.notification_id = d.notification_id
WHERE starts_with(r.request_id, @prefix::text)
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

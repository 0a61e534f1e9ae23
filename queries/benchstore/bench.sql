-- Queries used only by `herald bench` (internal/harness/bench) to measure a run. They
-- read what the engine wrote; none of them is on the engine's path.

-- name: BenchRouteSummary :one
-- Accept-to-terminal latency of every route that reached a terminal state, in
-- seconds, and the moment the last one did. accepted_at is the intent's
-- commit-time clock (now() of the accepting transaction), published_at or
-- dead_lettered_at the completing one's, both from the same server clock.
SELECT
    count(*)::bigint AS routes,
    count(r.published_at)::bigint AS published,
    coalesce(percentile_cont(0.50) WITHIN GROUP (ORDER BY extract(epoch FROM r.published_at - c.accepted_at)), 0)::float8 AS p50,
    coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM r.published_at - c.accepted_at)), 0)::float8 AS p95,
    coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM r.published_at - c.accepted_at)), 0)::float8 AS p99,
    coalesce(max(coalesce(r.published_at, r.dead_lettered_at, r.skipped_at, r.canceled_at)), now())::timestamptz AS last_terminal_at,
    coalesce(min(c.accepted_at), now())::timestamptz AS first_accepted_at,
    coalesce(sum(r.attempt_count), 0)::bigint AS attempts
FROM herald.routes r
JOIN herald.records c USING (notification_id)
WHERE c.producer = @producer
    AND r.next_attempt_at IS NULL;

-- name: BenchReceiptSummary :one
-- The receipts of the bench provider's routes (the receipts mode): the
-- routes a receipt gave a delivery status, the receipt lag (acceptance of
-- the intent to the route's delivery status, in seconds), and what the
-- matcher made of every receipt in the inbox.
SELECT
    (SELECT count(*) FROM herald.delivery_receipts)::bigint AS received,
    (SELECT count(*) FROM herald.delivery_receipts WHERE state = 'matched')::bigint AS matched,
    (SELECT count(*) FROM herald.delivery_receipts WHERE state = 'duplicate')::bigint AS duplicate,
    (SELECT count(*) FROM herald.delivery_receipts WHERE state = 'unmatched')::bigint AS unmatched,
    count(r.delivery_status)::bigint AS routes_with_status,
    coalesce(percentile_cont(0.50) WITHIN GROUP (ORDER BY extract(epoch FROM r.delivery_status_at - c.accepted_at)), 0)::float8 AS lag_p50,
    coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM r.delivery_status_at - c.accepted_at)), 0)::float8 AS lag_p95
FROM herald.routes r
JOIN herald.records c USING (notification_id)
WHERE c.producer = @producer
    AND r.delivery_status IS NOT NULL;

-- name: BenchReceiptCountOpen :one
-- Receipts the matcher has not decided yet.
SELECT count(*)::bigint FROM herald.delivery_receipts WHERE state = 'new';

-- name: BenchRouteCountOpen :one
-- Routes not terminal yet. The bench polls this while the engine runs, and
-- what it costs Postgres is counted as the engine's: `finished_at IS NULL`
-- prunes the scan to routes_live, where every open route is, so the count
-- never reads the finished routes' partitions, which grow with the run.
SELECT count(*)::bigint FROM herald.routes WHERE next_attempt_at IS NOT NULL AND finished_at IS NULL;

-- name: BenchRoutePreload :execrows
-- Preloads a backlog of due routes in one statement (the scale mode): one
-- record and one route each, due one millisecond apart up to due_at, on one channel at
-- one priority. The parameters are read once in p, because sqlc mangles a
-- named parameter repeated inside INSERT ... SELECT.
WITH p AS (
    SELECT
        @id_prefix::text AS id_prefix,
        @producer::text AS producer,
        @payload_json::text AS payload_json,
        @due_at::timestamptz AS due_at,
        @channel::text AS channel,
        @priority::smallint AS priority,
        @recipient_ref::text AS recipient_ref,
        @n::integer AS n
),
rec AS (
    INSERT INTO herald.records (
        notification_id, notification_type, producer, audience_kind, payload_json,
        idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at,
        idempotency_expires_at, channels, priority
    )
    SELECT
        -- Zero-padded, so ids sort in creation order like the UUIDv7s
        -- intake assigns.
        p.id_prefix || lpad(g::text, 10, '0'), 'bench.preload', p.producer, 'addresses', p.payload_json,
        p.id_prefix || lpad(g::text, 10, '0'), 'preload', p.due_at, p.due_at, p.due_at,
        p.due_at + interval '1 day', ARRAY[p.channel], p.priority
    FROM p, generate_series(1, p.n) AS g
    RETURNING notification_id
)
INSERT INTO herald.routes (
    notification_id, route_id, channel, recipient_ref, status, max_attempts, next_attempt_at,
    priority, created_at, updated_at
)
SELECT rec.notification_id, p.channel || ':0', p.channel, p.recipient_ref, 'pending', 0,
    -- One millisecond apart, the last at due_at, as a backlog that built up
    -- over time would be (equal keys would make one huge posting list).
    p.due_at - make_interval(secs => (p.n - substr(rec.notification_id, length(p.id_prefix) + 1)::integer) / 1000.0),
    p.priority, p.due_at, p.due_at
FROM rec, p;

-- name: BenchReset :exec
-- Empties herald's notification tables (and the receipts inbox) between
-- phases and the scale mode's runs, so each starts from a table of exactly
-- what it measures.
TRUNCATE herald.dead_letters, herald.routes, herald.records, herald.idempotency_keys, herald.delivery_receipts;

-- name: BenchAnalyze :exec
-- Vacuums and analyzes after a preload, as autovacuum would have while a
-- real backlog built up, so no autovacuum of the fresh rows runs during
-- the measurement.
VACUUM (ANALYZE) herald.routes, herald.records, herald.idempotency_keys;

-- name: BenchRouteSizes :one
-- The routes table's (all its partitions') and its due index's size: what an old snapshot makes
-- grow in the xmin mode.
SELECT
    (SELECT coalesce(sum(pg_relation_size(t.relid)), 0) FROM pg_partition_tree('herald.routes'::regclass) AS t)::bigint AS routes_bytes,
    pg_relation_size('herald.routes_due_idx'::regclass)::bigint AS due_index_bytes;

-- name: BenchRouteOutcomes :many
-- Every route with its final state, for the reliability suites, which
-- compare it with what their loopback receivers counted.
SELECT notification_id, route_id, recipient_ref, status, attempt_count, last_error_classification
FROM herald.routes
ORDER BY notification_id, route_id;

-- name: BenchRouteCountClaimed :one
-- Routes leased right now: the deliveries in flight when a process dies.
SELECT count(*)::bigint FROM herald.routes WHERE status = 'claimed';

-- name: BenchRouteListClaimed :many
-- The leases held right now, each identified by the attempt it took: the
-- crash suite's exact count of the deliveries a killed process had in
-- flight.
SELECT notification_id, route_id, attempt_count
FROM herald.routes
WHERE status = 'claimed';

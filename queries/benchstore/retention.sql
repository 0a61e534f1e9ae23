-- Queries of the bench's retention mode (internal/harness/bench/retention.go): the
-- finished history it fills, and the counts its report is checked against.
-- None of them is on the engine's path.

-- name: BenchHistoryFill :exec
-- Fills history records [@from_n, @to_n) of @n in one statement: finished
-- notifications of @producer, with their idempotency keys, accepted evenly between @oldest and
-- @oldest + @span_seconds (record g of n at oldest + span * g / n), each
-- with one route per element of @route_ids (one channel, recipients
-- @recipient_refs, in which "{g}" becomes the record's number modulo a
-- million, six digits: a history of many recipients), all published a second after acceptance, except every
-- @dead_every-th record (0: none), whose routes are dead-lettered, with
-- their dead_letters rows: what a real history keeps until an operator
-- acts. Ids have a UUIDv7's shape and order (the acceptance time's
-- milliseconds, then the record's number), as intake's do, so the indexes
-- hold keys of the real width in the real order. The parameters are read
-- once in p, because sqlc mangles a named parameter repeated inside
-- INSERT ... SELECT; src is read by all three inserts, so Postgres
-- materializes it once. The dead letters' foreign key to routes is checked
-- at the end of the statement, when their routes exist.
WITH p AS (
    SELECT
        @producer::text AS producer,
        @payload_json::text AS payload_json,
        @channel::text AS channel,
        @oldest::timestamptz AS oldest,
        make_interval(secs => @span_seconds::float8) AS span,
        @n::bigint AS n,
        @dead_every::bigint AS dead_every,
        @from_n::bigint AS from_n,
        @to_n::bigint AS to_n,
        @route_ids::text[] AS route_ids,
        @recipient_refs::text[] AS recipient_refs
),
rt AS (
    -- One row per route of a record, zipped (two set-returning functions
    -- in one select list run in step).
    SELECT unnest(p.route_ids) AS route_id, unnest(p.recipient_refs) AS recipient_ref
    FROM p
),
src AS (
    SELECT
        g, t.at,
        substr(h.hex, 1, 8) || '-' || substr(h.hex, 9, 4) || '-7' || substr(h.hex, 14, 3)
            || '-8' || substr(h.hex, 18, 3) || '-' || substr(h.hex, 21, 12) AS id,
        p.dead_every > 0 AND g % p.dead_every = 0 AS dead
    FROM p, generate_series(p.from_n, p.to_n - 1) AS g,
        LATERAL (SELECT p.oldest + p.span * (g::float8 / p.n) AS at) AS t,
        LATERAL (SELECT lpad(to_hex((extract(epoch FROM t.at) * 1000)::bigint), 12, '0')
            || lpad(to_hex(g), 20, '0') AS hex) AS h
),
keys_ins AS (
    -- Their idempotency keys (migration 00026), long expired: a history
    -- whose keys no sweep has deleted yet.
    INSERT INTO herald.idempotency_keys (producer, idempotency_key, notification_id, expires_at)
    SELECT p.producer, 'history-' || s.g, s.id, s.at + interval '48 hours'
    FROM src s, p
),
rec AS (
    INSERT INTO herald.records (
        notification_id, notification_type, producer, audience_kind, payload_json,
        idempotency_key, request_fingerprint, occurred_at, accepted_at, updated_at,
        idempotency_expires_at, channels, priority
    )
    SELECT
        s.id, 'bench.history', p.producer, 'addresses', p.payload_json,
        'history-' || s.g, repeat('f', 64), s.at, s.at, s.at + interval '1 second',
        s.at + interval '48 hours', ARRAY[p.channel], 0
    FROM src s, p
),
routes_ins AS (
    INSERT INTO herald.routes (
        notification_id, route_id, channel, recipient_ref, status, attempt_count, max_attempts,
        next_attempt_at, created_at, updated_at, published_at, dead_lettered_at,
        last_error_classification, last_error_message, last_error_at, finished_at
    )
    SELECT
        s.id, r.route_id, p.channel, replace(r.recipient_ref, '{g}', lpad((s.g % 1000000)::text, 6, '0')),
        CASE WHEN s.dead THEN 'dead_letter' ELSE 'published' END,
        1, 5, NULL, s.at, s.at + interval '1 second',
        CASE WHEN NOT s.dead THEN s.at + interval '1 second' END,
        CASE WHEN s.dead THEN s.at + interval '1 second' END,
        CASE WHEN s.dead THEN 'permanent' ELSE '' END,
        CASE WHEN s.dead THEN 'HTTP 410 Gone' ELSE '' END,
        CASE WHEN s.dead THEN s.at + interval '1 second' END,
        -- Published routes in their finished week's partition (migration
        -- 00025), which the caller has made; dead letters in routes_live.
        CASE WHEN NOT s.dead THEN s.at + interval '1 second' END
    FROM src s
    CROSS JOIN p
    CROSS JOIN rt r
)
INSERT INTO herald.dead_letters (
    notification_id, route_id, channel, recipient_ref, final_attempt_count, max_attempts,
    failure_classification, failure_message, recovery_hint, created_at
)
SELECT s.id, r.route_id, p.channel, replace(r.recipient_ref, '{g}', lpad((s.g % 1000000)::text, 6, '0')), 1, 5,
    'permanent', 'HTTP 410 Gone', 'the endpoint is gone: fix the destination and replay', s.at + interval '1 second'
FROM src s
CROSS JOIN p
CROSS JOIN rt r
WHERE s.dead;

-- name: BenchHistoryCount :one
-- The history's rows as they are: the records of @producer, their
-- idempotency keys (an index-only scan of the keys' primary key), the
-- routes created before @created_before (the history's, the live
-- workload's are newer), those of them published, and all dead letters.
-- What the retention mode's report gives before and after retention, and
-- its test checks.
SELECT
    (SELECT count(*) FROM herald.records WHERE producer = @producer::text)::bigint AS records,
    (SELECT count(*) FROM herald.idempotency_keys WHERE producer = @producer::text)::bigint AS keys,
    count(*)::bigint AS routes,
    count(*) FILTER (WHERE status = 'published')::bigint AS published,
    (SELECT count(*) FROM herald.dead_letters)::bigint AS dead_letters
FROM herald.routes
WHERE created_at < @created_before::timestamptz;

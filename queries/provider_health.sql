-- Queries of herald.provider_health: recent outcomes per provider, in
-- two-second buckets, that every serve process adds its own counts to.

-- name: ProviderHealthAdd :exec
-- Adds one process's counts since its last flush, one row per provider,
-- into the current bucket: one statement a flush, not a write per attempt.
INSERT INTO herald.provider_health AS h (
    provider, bucket, delivered, transient, permanent, throttled, latency_seconds_sum, latency_seconds_max,
    unavailable, unavailable_reason, failovers
)
SELECT
    unnest(@providers::text[]),
    date_bin('2 seconds', coalesce(sqlc.narg('now')::timestamptz, now()), timestamptz 'epoch'),
    unnest(@delivered::bigint[]),
    unnest(@transient::bigint[]),
    unnest(@permanent::bigint[]),
    unnest(@throttled::bigint[]),
    unnest(@latency_sums::float8[]),
    unnest(@latency_maxes::float8[]),
    unnest(@unavailable::bigint[]),
    unnest(@unavailable_reasons::text[]),
    unnest(@failovers::jsonb[])
ON CONFLICT (provider, bucket) DO UPDATE
SET delivered = h.delivered + excluded.delivered,
    transient = h.transient + excluded.transient,
    permanent = h.permanent + excluded.permanent,
    throttled = h.throttled + excluded.throttled,
    latency_seconds_sum = h.latency_seconds_sum + excluded.latency_seconds_sum,
    latency_seconds_max = greatest(h.latency_seconds_max, excluded.latency_seconds_max),
    unavailable = h.unavailable + excluded.unavailable,
    unavailable_reason = CASE WHEN excluded.unavailable_reason <> '' THEN excluded.unavailable_reason
        ELSE h.unavailable_reason END,
    -- Failovers are counted per provider sent to: the two maps added key
    -- by key (rare: only buckets in which routes failed over).
    failovers = CASE WHEN excluded.failovers = '{}' THEN h.failovers
        WHEN h.failovers = '{}' THEN excluded.failovers
        ELSE (SELECT jsonb_object_agg(e.k, e.n) FROM (
            SELECT a.k, sum(a.v::bigint) AS n
            FROM (SELECT x.k, x.v FROM jsonb_each_text(h.failovers) AS x(k, v)
                UNION ALL SELECT y.k, y.v FROM jsonb_each_text(excluded.failovers) AS y(k, v)) AS a
            GROUP BY a.k) AS e) END;

-- name: ProviderHealthDeleteBefore :execrows
-- Forgets buckets older than @before (a day, by default).
DELETE FROM herald.provider_health WHERE bucket < @before::timestamptz;

-- name: ProviderHealthViewList :many
-- Every provider's circuit, cap and last five minutes' outcomes, as
-- herald.provider_health_view gives them, for herald stats. The view's
-- latencies are NULL when the provider made no attempt in those five
-- minutes; they read 0 here (the counts say there was no attempt).
SELECT
    v.provider, v.channel, v.driver, v.cap_per_second, v.circuit, v.open_until, v.circuit_reason,
    v.delivered_5m, v.transient_5m, v.permanent_5m, v.throttled_5m,
    coalesce(v.mean_latency_seconds_5m, 0)::float8 AS mean_latency_seconds_5m,
    coalesce(v.max_latency_seconds_5m, 0)::float8 AS max_latency_seconds_5m,
    v.unavailable_5m, v.unavailable_reason::text AS unavailable_reason
FROM herald.provider_health_view v
ORDER BY v.provider;

-- name: ProviderHealthOver :many
-- Every provider's state, circuit and outcomes over the window since
-- @since (from the two-second buckets, whatever its length), beside the
-- last five minutes' that herald.provider_health_view gives psql, for
-- herald stats -window and herald providers health.
--
-- The circuit is told as it behaves: open while its cool-down lasts;
-- half-open once the cool-down is over and until the provider delivers
-- again (routing sends it attempts again, but nothing says it recovered):
-- an open row past its open_until that no serve closed yet, or a closed
-- circuit whose latest event is its closing with no delivery since.
--
-- failing_since is the start of the current failing streak: the first
-- bucket with a transient failure, or a round in which the provider could
-- not send, after its last bucket with a delivery (within the buckets
-- kept, a day); failing is false (and failing_since the epoch) when none
-- followed its last delivery, last_delivered_at (the epoch for none).
-- Both lookups
-- walk the provider's buckets along the primary key, newest first.
SELECT
    p.name AS provider, p.channel, p.driver, p.cap_per_second, p.state, p.state_reason,
    p.state_changed_at,
    (CASE
        WHEN c.state = 'open' AND c.open_until > coalesce(sqlc.narg('now')::timestamptz, now()) THEN 'open'
        WHEN c.state = 'open' THEN 'half-open'
        WHEN (SELECT e.event FROM herald.provider_events e WHERE e.provider = p.name
                ORDER BY e.at DESC, e.id DESC LIMIT 1) = 'circuit_closed'
            AND NOT EXISTS (SELECT 1 FROM herald.provider_health d WHERE d.provider = p.name
                AND d.bucket >= date_bin('2 seconds', c.since, timestamptz 'epoch') AND d.delivered > 0) THEN 'half-open'
        ELSE 'closed' END)::text AS circuit,
    c.open_until, coalesce(c.reason, '')::text AS circuit_reason,
    coalesce(sum(h.delivered) FILTER (WHERE h.bucket >= @since::timestamptz), 0)::bigint AS delivered,
    coalesce(sum(h.transient) FILTER (WHERE h.bucket >= @since::timestamptz), 0)::bigint AS transient,
    coalesce(sum(h.permanent) FILTER (WHERE h.bucket >= @since::timestamptz), 0)::bigint AS permanent,
    coalesce(sum(h.throttled) FILTER (WHERE h.bucket >= @since::timestamptz), 0)::bigint AS throttled,
    coalesce(sum(h.unavailable) FILTER (WHERE h.bucket >= @since::timestamptz), 0)::bigint AS unavailable,
    coalesce(sum(h.latency_seconds_sum) FILTER (WHERE h.bucket >= @since::timestamptz), 0)::float8 AS latency_seconds_sum,
    coalesce(max(h.latency_seconds_max) FILTER (WHERE h.bucket >= @since::timestamptz), 0)::float8 AS latency_seconds_max,
    coalesce(sum(h.delivered) FILTER (WHERE h.bucket >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '5 minutes'), 0)::bigint AS delivered_5m,
    coalesce(sum(h.transient) FILTER (WHERE h.bucket >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '5 minutes'), 0)::bigint AS transient_5m,
    coalesce(sum(h.permanent) FILTER (WHERE h.bucket >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '5 minutes'), 0)::bigint AS permanent_5m,
    coalesce(sum(h.throttled) FILTER (WHERE h.bucket >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '5 minutes'), 0)::bigint AS throttled_5m,
    coalesce(sum(h.unavailable) FILTER (WHERE h.bucket >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '5 minutes'), 0)::bigint AS unavailable_5m,
    coalesce(sum(h.latency_seconds_sum) FILTER (WHERE h.bucket >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '5 minutes'), 0)::float8 AS latency_seconds_sum_5m,
    coalesce(max(h.latency_seconds_max) FILTER (WHERE h.bucket >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '5 minutes'), 0)::float8 AS latency_seconds_max_5m,
    coalesce((SELECT u.unavailable_reason FROM herald.provider_health u
        WHERE u.provider = p.name AND u.unavailable_reason <> ''
            AND u.bucket >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '30 seconds'
        ORDER BY u.bucket DESC LIMIT 1), '')::text AS unavailable_reason,
    (fs.failing_since IS NOT NULL)::boolean AS failing,
    coalesce(fs.failing_since, timestamptz 'epoch')::timestamptz AS failing_since,
    coalesce(ld.at, timestamptz 'epoch')::timestamptz AS last_delivered_at
FROM herald.providers p
LEFT JOIN herald.provider_circuits c ON c.provider = p.name
LEFT JOIN LATERAL (
    SELECT max(o.bucket) AS at
    FROM herald.provider_health o
    WHERE o.provider = p.name AND o.delivered > 0
) AS ld ON true
LEFT JOIN LATERAL (
    SELECT min(f.bucket)::timestamptz AS failing_since
    FROM herald.provider_health f
    WHERE f.provider = p.name AND (f.transient > 0 OR f.unavailable > 0)
        AND f.bucket > coalesce(ld.at, '-infinity')
) AS fs ON true
LEFT JOIN herald.provider_health h ON h.provider = p.name
    AND h.bucket >= least(@since::timestamptz, coalesce(sqlc.narg('now')::timestamptz, now()) - interval '5 minutes')
GROUP BY p.name, p.channel, p.driver, p.cap_per_second, p.state, p.state_reason, p.state_changed_at,
    c.state, c.open_until, c.reason, c.since, fs.failing_since, ld.at
ORDER BY p.name;

-- name: ProviderFailoverList :many
-- The failovers since @since, per provider that failed and provider the
-- route went on to: how many, and the start of the newest bucket that had
-- one. Most first.
SELECT h.provider AS from_provider, f.k::text AS to_provider,
    sum(f.v::bigint)::bigint AS failovers, max(h.bucket)::timestamptz AS last_at
FROM herald.provider_health h
CROSS JOIN LATERAL jsonb_each_text(h.failovers) AS f(k, v)
WHERE h.bucket >= @since::timestamptz AND h.failovers <> '{}'
GROUP BY h.provider, f.k
ORDER BY failovers DESC, from_provider, to_provider;

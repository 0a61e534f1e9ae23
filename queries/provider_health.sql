-- Queries of herald.provider_health: recent outcomes per provider, in
-- two-second buckets, that every serve process adds its own counts to.

-- name: ProviderHealthAdd :exec
-- Adds one process's counts since its last flush, one row per provider,
-- into the current bucket: one statement a flush, not a write per attempt.
INSERT INTO herald.provider_health AS h (
    provider, bucket, delivered, transient, permanent, throttled, latency_seconds_sum, latency_seconds_max,
    unavailable, unavailable_reason
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
    unnest(@unavailable_reasons::text[])
ON CONFLICT (provider, bucket) DO UPDATE
SET delivered = h.delivered + excluded.delivered,
    transient = h.transient + excluded.transient,
    permanent = h.permanent + excluded.permanent,
    throttled = h.throttled + excluded.throttled,
    latency_seconds_sum = h.latency_seconds_sum + excluded.latency_seconds_sum,
    latency_seconds_max = greatest(h.latency_seconds_max, excluded.latency_seconds_max),
    unavailable = h.unavailable + excluded.unavailable,
    unavailable_reason = CASE WHEN excluded.unavailable_reason <> '' THEN excluded.unavailable_reason
        ELSE h.unavailable_reason END;

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

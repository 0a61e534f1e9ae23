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

GRANT SELECT ON TABLE herald.provider_health_view TO herald_operator;
GRANT SELECT ON TABLE herald.provider_health_view TO herald_auditor;

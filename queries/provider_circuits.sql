-- Queries of herald.provider_circuits and herald.provider_events: each
-- provider's circuit, as every serve process sees it, and its history.

-- name: ProviderCircuitEvaluate :exec
-- Opens the circuit of every provider whose attempts since its circuit last
-- closed (whole buckets only: the bucket of the close itself is left out,
-- so the failures that opened it do not count again) reach its
-- circuit_min_attempts with transient failures at circuit_failure_ratio or
-- more, for its circuit_cooldown; closes every open circuit whose
-- cool-down has passed; and writes an event for each change. Every serve
-- runs it every second or so: the UPDATEs' WHERE state = ... is checked
-- again under the row lock, so two processes never both open (or close)
-- the same circuit.
WITH totals AS (
    SELECT c.provider, sum(h.transient) AS transient,
        sum(h.delivered + h.transient + h.permanent) AS attempts
    FROM herald.provider_circuits c
    JOIN herald.provider_health h ON h.provider = c.provider AND h.bucket >= c.since
    WHERE c.state = 'closed'
    GROUP BY c.provider
),
opened AS (
    UPDATE herald.provider_circuits AS c
    SET state = 'open',
        open_until = coalesce(sqlc.narg('now')::timestamptz, now()) + p.circuit_cooldown,
        reason = format('%s of %s attempts failed transiently (threshold %s%% of at least %s)',
            t.transient, t.attempts, round((p.circuit_failure_ratio * 100)::numeric), p.circuit_min_attempts)
    FROM totals t, herald.providers p
    WHERE c.provider = t.provider AND p.name = c.provider AND c.state = 'closed'
        AND t.attempts >= p.circuit_min_attempts
        AND t.transient >= p.circuit_failure_ratio * t.attempts
    RETURNING c.provider, c.reason, c.open_until
),
closed AS (
    UPDATE herald.provider_circuits AS c
    SET state = 'closed', open_until = NULL, reason = '',
        since = coalesce(sqlc.narg('now')::timestamptz, now())
    WHERE c.state = 'open' AND c.open_until <= coalesce(sqlc.narg('now')::timestamptz, now())
    RETURNING c.provider
)
INSERT INTO herald.provider_events (provider, at, event, detail)
SELECT provider, coalesce(sqlc.narg('now')::timestamptz, now()), 'circuit_opened',
    reason || ', open until ' || to_char(open_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
FROM opened
UNION ALL
SELECT provider, coalesce(sqlc.narg('now')::timestamptz, now()), 'circuit_closed', 'cool-down over'
FROM closed;

-- name: ProviderCircuitListOpen :many
-- The providers whose circuit is open now, and until when.
SELECT provider, open_until::timestamptz AS open_until
FROM herald.provider_circuits
WHERE state = 'open' AND open_until > coalesce(sqlc.narg('now')::timestamptz, now())
ORDER BY provider;

-- name: ProviderEventList :many
-- One provider's circuit history, newest first ('' for every provider).
SELECT id, provider, at, event, detail
FROM herald.provider_events
WHERE @provider::text = '' OR provider = @provider::text
ORDER BY at DESC, id DESC
LIMIT @max::integer;

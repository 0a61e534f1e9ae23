-- Queries of herald.delivery_receipts: the receipts inbox (migration
-- 00009). The doors write; the matcher (internal/receipt) reads its queue
-- and marks what it decided.

-- name: ReceiptInsert :one
-- Stores one receipt as it arrived, before its sender is answered.
INSERT INTO herald.delivery_receipts (provider, provider_message_id, status, error_code, raw, source, received_at)
VALUES (@provider::text, @provider_message_id::text, @status::text, @error_code::text, @raw::text, @source::text,
    coalesce(sqlc.narg('now')::timestamptz, now()))
RETURNING id;

-- name: ReceiptClaimDue :many
-- The matcher's next batch: receipts still to match whose time has come,
-- locked FOR UPDATE SKIP LOCKED so matchers in several processes never
-- take the same one; held until the caller's transaction ends (the
-- matcher's statements that follow run in it, no I/O between).
SELECT id, provider, provider_message_id, status, error_code, received_at, match_attempts
FROM herald.delivery_receipts
WHERE state = 'new' AND next_match_at <= coalesce(sqlc.narg('now')::timestamptz, now())
ORDER BY next_match_at, id
LIMIT @max::integer
FOR UPDATE SKIP LOCKED;

-- name: ReceiptMarkMany :exec
-- Records the matcher's decision for a batch: state matched, duplicate,
-- unmatched or malformed, or still new and due again after
-- retry_seconds; a matched or duplicate one records the attempt of its
-- route it was about (0: none).
UPDATE herald.delivery_receipts AS r
SET state = d.state,
    delivery_status = nullif(d.delivery_status, ''),
    notification_id = nullif(d.notification_id, ''),
    route_id = nullif(d.route_id, ''),
    matched_at = CASE WHEN d.state IN ('matched', 'duplicate') THEN coalesce(sqlc.narg('now')::timestamptz, now()) END,
    attempt = nullif(d.attempt, 0),
    match_attempts = r.match_attempts + 1,
    next_match_at = coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => d.retry_seconds)
FROM (
    SELECT
        unnest(@ids::bigint[]) AS id,
        unnest(@states::text[]) AS state,
        unnest(@delivery_statuses::text[]) AS delivery_status,
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@route_ids::text[]) AS route_id,
        unnest(@retry_seconds::float8[]) AS retry_seconds,
        unnest(@attempts::integer[]) AS attempt
) AS d
WHERE r.id = d.id;

-- name: ReceiptCountByState :many
-- Receipts per provider and state, for metrics and `herald stats`.
SELECT provider, state, count(*)::bigint AS receipts
FROM herald.delivery_receipts
GROUP BY provider, state
ORDER BY provider, state;

-- name: ReceiptStatsSince :many
-- Per provider, the receipts received since @since by what the matcher
-- made of them, the delivery statuses they set, and the receipt lag of
-- those that set one (a route's acceptance to its delivery status, p50
-- and p95). For `herald stats`: it scans the window's receipts and reads
-- each matched one's route by its key.
SELECT
    d.provider,
    count(*)::bigint AS received,
    count(*) FILTER (WHERE d.state = 'new')::bigint AS waiting,
    count(*) FILTER (WHERE d.state = 'matched')::bigint AS matched,
    count(*) FILTER (WHERE d.state = 'duplicate')::bigint AS duplicate,
    count(*) FILTER (WHERE d.state = 'unmatched')::bigint AS unmatched,
    count(*) FILTER (WHERE d.state = 'malformed')::bigint AS malformed,
    count(*) FILTER (WHERE d.state = 'matched' AND d.delivery_status = 'delivered')::bigint AS delivered,
    count(*) FILTER (WHERE d.state = 'matched' AND d.delivery_status = 'undelivered')::bigint AS undelivered,
    count(*) FILTER (WHERE d.state = 'matched' AND d.delivery_status = 'expired')::bigint AS expired,
    coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.matched_at - r.created_at))
        FILTER (WHERE d.state = 'matched'), 0)::float8 AS lag_p50_seconds,
    coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM d.matched_at - r.created_at))
        FILTER (WHERE d.state = 'matched'), 0)::float8 AS lag_p95_seconds
FROM herald.delivery_receipts d
LEFT JOIN herald.routes r ON r.notification_id = d.notification_id AND r.route_id = d.route_id
WHERE d.received_at >= @since::timestamptz
GROUP BY d.provider
ORDER BY d.provider;

-- name: ReceiptInsertMany :execrows
-- Stores a batch of receipts in one statement: the receipts endpoint's
-- group commit, where concurrent requests share one insert, one commit and
-- the statement trigger's one NOTIFY. The arrays are parallel, one element
-- per receipt (several set-returning functions in one select list are
-- zipped row by row).
INSERT INTO herald.delivery_receipts (provider, provider_message_id, status, error_code, raw, source, received_at)
SELECT
    unnest(@providers::text[]),
    unnest(@provider_message_ids::text[]),
    unnest(@statuses::text[]),
    unnest(@error_codes::text[]),
    unnest(@raws::text[]),
    unnest(@sources::text[]),
    coalesce(sqlc.narg('now')::timestamptz, now());

-- name: ReceiptClock :one
-- The time receipts stored now arrive at: the transaction's start on the
-- database's clock (the clock of routes.receipt_keyed_at, which they are
-- compared with), or the test clock given.
SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS received_at;

-- name: ReceiptInsertDecidedMany :execrows
-- Stores receipts that have just arrived with what the matcher decided in
-- the same transaction (Matcher.StoreMatched): a receipt that matched or
-- changed nothing is written once, already decided, outside
-- delivery_receipts_due_idx; one still new is due after its retry
-- seconds. The arrays are parallel, one element per receipt (zipped row
-- by row).
INSERT INTO herald.delivery_receipts (provider, provider_message_id, status, error_code, raw, source, received_at,
    state, delivery_status, notification_id, route_id, matched_at, attempt, match_attempts, next_match_at)
SELECT d.provider, d.provider_message_id, d.status, d.error_code, d.raw, d.source, d.received_at,
    d.state, nullif(d.delivery_status, ''), nullif(d.notification_id, ''), nullif(d.route_id, ''),
    CASE WHEN d.state IN ('matched', 'duplicate') THEN d.received_at END,
    nullif(d.attempt, 0), 1, d.received_at + make_interval(secs => d.retry_seconds)
FROM (
    SELECT
        unnest(@providers::text[]) AS provider,
        unnest(@provider_message_ids::text[]) AS provider_message_id,
        unnest(@statuses::text[]) AS status,
        unnest(@error_codes::text[]) AS error_code,
        unnest(@raws::text[]) AS raw,
        unnest(@sources::text[]) AS source,
        unnest(@states::text[]) AS state,
        unnest(@delivery_statuses::text[]) AS delivery_status,
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@route_ids::text[]) AS route_id,
        unnest(@retry_seconds::float8[]) AS retry_seconds,
        unnest(@attempts::integer[]) AS attempt,
        @received_at::timestamptz AS received_at
) AS d;

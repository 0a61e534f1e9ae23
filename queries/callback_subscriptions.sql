-- Queries of herald.callback_subscriptions: one producer's status callback
-- subscription (migration 00012). Producers write theirs through
-- herald.callback_subscription_set and _delete (the client's
-- SetCallbackSubscription and DeleteCallbackSubscription); the callback
-- channel reads the secret when it delivers.

-- name: CallbackSubscriptionSet :one
-- Creates or replaces the caller's subscription (for_producer: another's,
-- for the engine's login only). Exactly one of secret and bearer_token.
SELECT s.producer::text AS producer, s.created_at::timestamptz AS created_at, s.updated_at::timestamptz AS updated_at
FROM herald.callback_subscription_set(
    @url::text, @events::text[], sqlc.narg('secret')::text, sqlc.narg('bearer_token')::text,
    sqlc.narg('for_producer')::text) AS s;

-- name: CallbackSubscriptionDelete :one
-- Deletes the caller's subscription (for_producer: as for Set) and says
-- whether there was one.
SELECT herald.callback_subscription_delete(sqlc.narg('for_producer')::text)::boolean AS deleted;

-- name: CallbackSubscriptionGet :one
-- The subscription of @producer, without its secret or token: what a
-- producer's login (which sees only its own row) or an operator reads.
SELECT producer, url, events, (secret IS NOT NULL)::boolean AS signed, created_at, updated_at
FROM herald.callback_subscriptions
WHERE producer = @producer;

-- name: CallbackSubscriptionGetForDelivery :one
-- What the callback channel needs to deliver callback @notification_id (a
-- callback record): its producer's secret or bearer token (both NULL when
-- the producer has no subscription), and whether an earlier callback of the
-- same source route is still to be delivered (pending, claimed or failed),
-- with how long until that one's next attempt (zero while it is being
-- delivered). Earlier callbacks are the callbacks about the same
-- notification (records_callback_of_idx, migration 00026) whose
-- idempotency keys name the same route
-- ("callback:<notification_id>:<route_id>:<event>", one per event);
-- "earlier" is (accepted_at, notification_id) order, the order the trigger
-- created them.
-- Run by the engine's login only: the secret is readable by nobody else.
SELECT
    cb.producer,
    s.secret,
    s.bearer_token,
    coalesce(earlier.waiting, 0)::bigint AS earlier_waiting,
    coalesce(earlier.wait_seconds, 0)::float8 AS earlier_wait_seconds
FROM herald.records cb
LEFT JOIN herald.callback_subscriptions s ON s.producer = cb.producer
LEFT JOIN LATERAL (
    SELECT
        count(*) AS waiting,
        extract(epoch FROM greatest(
            min(CASE WHEN er.status = 'claimed' THEN now() ELSE er.next_attempt_at END) - now(),
            interval '0')) AS wait_seconds
    FROM herald.records e
    JOIN herald.routes er ON er.notification_id = e.notification_id
    WHERE e.callback_of = cb.callback_of
        AND e.producer = cb.producer
        AND e.idempotency_key = ANY (ARRAY(
            SELECT substring(cb.idempotency_key FROM '^(callback:.*:)[^:]*$') || ev
            FROM unnest(ARRAY['published', 'delivered', 'undelivered', 'dead_lettered', 'skipped',
                'canceled', 'expired']) AS ev))
        AND (e.accepted_at, e.notification_id) < (cb.accepted_at, cb.notification_id)
        AND er.status IN ('pending', 'claimed', 'failed')
) AS earlier ON true
WHERE cb.notification_id = @notification_id;

-- name: CallbackSubscriptionMine :one
-- The caller's own subscription (herald.callback_subscription_get), without
-- its secret or token: auth is 'secret' or 'bearer_token'. No row when the
-- producer has none.
SELECT s.producer::text AS producer, s.url::text AS url, s.events::text[] AS events, s.auth::text AS auth,
    s.created_at::timestamptz AS created_at, s.updated_at::timestamptz AS updated_at
FROM herald.callback_subscription_get() AS s;

-- name: CallbackSubscriptionProducers :many
-- Which of @producers have a callback subscription: the intake pipeline's
-- one probe of the primary key per distinct producer, run only for a batch
-- that holds an intent with a callback_url (a producer's login sees only
-- its own row, which is all it submits for).
SELECT s.producer
FROM herald.callback_subscriptions s
WHERE s.producer = ANY (@producers::text[]);

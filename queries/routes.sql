-- Route queries. The client's reads and cancel come first; the dispatcher's
-- claim and complete follow below.

-- name: RouteListByNotification :many
-- Every route of one notification, for Get and `herald status`: reads the
-- primary key's prefix.
SELECT *
FROM herald.routes
WHERE notification_id = @notification_id
ORDER BY route_id;

-- name: RouteCancelByNotification :many
-- Cancels the routes of one notification that are not terminal yet. A route
-- claimed by a dispatcher right now is canceled too: its completion is fenced
-- on status 'claimed' and finds nothing to update, though the delivery in
-- flight may still reach the recipient.
UPDATE herald.routes
SET status = 'canceled',
    next_attempt_at = NULL,
    canceled_at = coalesce(sqlc.narg('now')::timestamptz, now()),
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE notification_id = @notification_id
    AND status IN ('pending', 'claimed', 'failed')
RETURNING route_id, channel, status;

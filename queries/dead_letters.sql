-- Dead-letter queries. The dispatcher writes dead_letters rows inside
-- RouteCompleteMany (queries/routes.sql), in the same statement that moves
-- the route to dead_letter; its reads come first here, the operator's list
-- and replay queries follow below.

-- name: DeadLetterListByNotification :many
-- The dead letters of one notification, by route: reads the primary key's
-- prefix.
SELECT *
FROM herald.dead_letters
WHERE notification_id = @notification_id
ORDER BY route_id;

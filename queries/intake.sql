-- Queries of the SQL intake door (herald.intake) and of the wake-up hint the
-- accept path sends to dispatchers.

-- name: IntakeClaimBatch :many
-- Takes the oldest entries off the intake and returns them. It runs inside
-- the intake worker's transaction: the rows stay locked (FOR UPDATE) and
-- deleted only if that transaction commits, so a worker killed mid-batch
-- loses nothing, and SKIP LOCKED lets several workers drain side by side,
-- each taking entries no other holds.
DELETE FROM herald.intake
WHERE id IN (
    SELECT id
    FROM herald.intake
    ORDER BY id
    LIMIT @max_entries
    FOR UPDATE SKIP LOCKED
)
RETURNING *;

-- name: IntakeInsertMany :exec
-- Inserts raw entries, as a producer would; one statement, so the intake's
-- statement trigger sends one herald_intake hint. For tests and benchmarks.
INSERT INTO herald.intake (body)
SELECT unnest(@bodies::text[]);

-- name: IntakeCount :one
-- The entries waiting in the intake.
SELECT count(*) FROM herald.intake;

-- name: IntakeNotifyRoutes :exec
-- The trailing wake-up hint of a debounce window, on the channel
-- dispatchers LISTEN on; the payload is the channel of the new routes, or ''
-- for several.
SELECT pg_notify('herald_routes', @channel::text);

-- name: IntakeTakeByID :many
-- Takes one named entry off the intake, inside the caller's transaction: the
-- worker's way to set aside an entry the database refused. Returns nothing
-- if another worker settled it meanwhile.
DELETE FROM herald.intake
WHERE id = @id
RETURNING *;

-- Queries of herald.serve_processes: each serve process's row, written by
-- its engine's heartbeat, read by operators, deleted by maintenance once
-- stopped or silent for long.

-- name: ServeProcessRegister :exec
-- A process's row at start, or again after maintenance deleted it (a
-- process paused for longer than the retention): not stopped.
INSERT INTO herald.serve_processes
    (id, host, pid, version, started_at, heartbeat_interval, ready, not_ready_reason, parts)
VALUES (@id, @host, @pid, @version, @started_at, make_interval(secs => @interval_seconds::float8),
        @ready, @not_ready_reason, @parts)
ON CONFLICT (id) DO UPDATE SET
    heartbeat_at = now(), ready = excluded.ready, not_ready_reason = excluded.not_ready_reason,
    parts = excluded.parts, stopped_at = NULL;

-- name: ServeProcessBeat :execrows
-- One heartbeat: 0 rows when the row is gone (the caller inserts it again).
UPDATE herald.serve_processes
SET heartbeat_at = now(), ready = @ready, not_ready_reason = @not_ready_reason
WHERE id = @id AND stopped_at IS NULL;

-- name: ServeProcessStop :exec
UPDATE herald.serve_processes
SET heartbeat_at = now(), stopped_at = now(), ready = false, not_ready_reason = @reason
WHERE id = @id;

-- name: ServeProcessList :many
-- Every process's row with its heartbeat's age by the database's clock,
-- the one that stamped heartbeat_at; stale when a running process's
-- heartbeat is older than @stale_heartbeats of its intervals.
SELECT id, host, pid, version, started_at, heartbeat_at,
       extract(epoch FROM heartbeat_interval)::float8 AS interval_seconds,
       ready, not_ready_reason, parts, stopped_at,
       extract(epoch FROM now() - heartbeat_at)::float8 AS heartbeat_age_seconds,
       coalesce(stopped_at IS NULL AND now() - heartbeat_at > heartbeat_interval * sqlc.arg(stale_heartbeats)::int, false)::bool AS stale
FROM herald.serve_processes
ORDER BY stopped_at IS NOT NULL, host, started_at, pid;

-- name: ServeProcessDeleteGone :execrows
-- The rows of processes stopped, or silent, since before @before.
DELETE FROM herald.serve_processes
WHERE coalesce(stopped_at, heartbeat_at) < @before::timestamptz;

-- Queries about no herald table: the database server itself.

-- name: DatabaseNow :one
-- The database's clock: a replay's upper bound (until) and the stats' window
-- are taken from it, not from the operator's machine, because dead_letters
-- and routes are stamped with it.
SELECT now()::timestamptz AS now;

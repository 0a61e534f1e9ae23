-- Queries of routes' finished-week partitions (migration 00025), run by
-- maintenance as the tables' owner.

-- name: RouteWeeksCreate :one
-- Makes the finished-route partitions of the weeks holding @first_day
-- through @last_day that do not exist yet; returns how many it made. Each
-- lock is waited for @wait_seconds at most (55P03 past that).
SELECT herald.routes_weeks_create(@first_day::date, @last_day::date,
    make_interval(secs => @wait_seconds::float8))::integer AS made;

-- name: RouteWeeksDropOne :many
-- Drops the oldest finished-route partition if its week ended at or before
-- @before: its Monday and about how many routes it held, or no row. Its
-- lock on routes is waited for @wait_seconds at most (55P03 past that).
SELECT d.week::date AS week, d.routes::bigint AS routes
FROM herald.routes_weeks_drop(@before::timestamptz, make_interval(secs => @wait_seconds::float8)) AS d;

-- name: RouteWeeksList :many
-- The finished-route partitions, oldest first, with the planner's estimate
-- of their rows: for `herald stats` and the tests.
SELECT substr(c.relname, 9)::text AS week, greatest(c.reltuples, 0)::bigint AS routes
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'herald.routes'::regclass AND c.relname ~ '^routes_f[0-9]{8}$'
ORDER BY c.relname;

-- Queries of routes' finished-week partitions (migration 00025), run by
-- maintenance as the tables' owner.

-- name: RouteWeeksCreate :one
-- Makes the finished-route partitions of the weeks holding @first_day
-- through @last_day that do not exist yet; returns how many it made. Each
-- lock is waited for @wait_seconds at most (55P03 past that).
SELECT herald.routes_weeks_create(@first_day::date, @last_day::date,
    make_interval(secs => @wait_seconds::float8))::integer AS made;

-- name: RouteWeeksDetachOne :many
-- Detaches the oldest finished-route partition if its week ended at or
-- before @before, renaming it for PartitionsDropGone: its Monday and about
-- how many routes it held, or no row. Its lock on routes is waited for
-- @wait_seconds at most (55P03 past that).
SELECT d.week::date AS week, d.routes::bigint AS routes
FROM herald.routes_weeks_detach(@before::timestamptz, make_interval(secs => @wait_seconds::float8)) AS d;

-- name: PartitionsDropGone :one
-- Drops the partitions detached by RouteWeeksDetachOne and
-- RecordWeekSwapOne (their names end in _gone), and stale staged ones,
-- each lock waited for @wait_seconds at most; returns how many it dropped.
SELECT herald.partitions_drop_gone(make_interval(secs => @wait_seconds::float8))::integer AS dropped;

-- name: RouteWeeksList :many
-- The finished-route partitions, oldest first, with the planner's estimate
-- of their rows: for `herald stats` and the tests.
SELECT substr(c.relname, 9)::text AS week, greatest(c.reltuples, 0)::bigint AS routes
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'herald.routes'::regclass AND c.relname ~ '^routes_f[0-9]{8}$'
ORDER BY c.relname;

-- name: RecordWeeksCreate :one
-- Makes the record partitions of the weeks holding @first_day through
-- @last_day that do not exist yet (migration 00027); returns how many it
-- made. Each lock is waited for @wait_seconds at most (55P03 past that).
SELECT herald.records_weeks_create(@first_day::date, @last_day::date,
    make_interval(secs => @wait_seconds::float8))::integer AS made;

-- name: RecordWeekStageOne :many
-- Stages the retirement of the oldest week of records if it ended at or
-- before @before (herald.records_week_stage): its kept partition, made
-- and filled, not attached yet, merged with the kept partition below the
-- week when that held fewer than @merge_below rows. Its Monday, how many
-- records it held, how many it keeps, how many it merged; no row when
-- there is no week to retire. Locks are waited for @wait_seconds at most.
SELECT r.week::date AS week, r.records::bigint AS records, r.kept::bigint AS kept, r.merged::bigint AS merged
FROM herald.records_week_stage(@before::timestamptz, @merge_below::bigint,
    make_interval(secs => @wait_seconds::float8)) AS r;

-- name: RecordWeekSwapOne :many
-- Puts the oldest week's staged kept partition in its place
-- (herald.records_week_swap), renaming the week and the kept partition it
-- merged for PartitionsDropGone: the stage's figures, brought up to date;
-- no row when there is none staged. Each lock is waited for @wait_seconds
-- at most (55P03 past that: try again).
SELECT r.week::date AS week, r.records::bigint AS records, r.kept::bigint AS kept, r.merged::bigint AS merged
FROM herald.records_week_swap(make_interval(secs => @wait_seconds::float8)) AS r;

-- name: RecordPartitionsList :many
-- The records partitions (week, kept, default) with their id ranges, oldest
-- first, the planner's row estimate and size: for `herald stats`, the demo
-- and the tests.
SELECT p.partition::text AS partition, p.kind::text AS kind, coalesce(p.lo, '')::text AS lo,
    coalesce(p.hi, '')::text AS hi, p.rows_estimate::bigint AS rows_estimate, p.total_bytes::bigint AS total_bytes
FROM herald.records_partitions_view p
ORDER BY p.kind = 'default', p.lo NULLS FIRST;

-- name: RecordWeeksFloor :one
-- The least id of the weeks not retired yet (the oldest week partition's
-- lower bound), or @otherwise when there is none: the records below it
-- are those retention deletes one by one.
SELECT coalesce((SELECT min(p.lo) FROM herald.records_partitions_view p WHERE p.kind = 'week'),
    @otherwise::text)::text AS floor;

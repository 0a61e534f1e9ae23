-- name: RecordDeleteFinished :one
-- Retention of finished notifications (every statement here touches a
-- bounded number of rows: no job holds a long transaction). Deletes up to
-- @batch_size finished notifications: every route terminal (published,
-- skipped or canceled; none still pending, claimed or failed, and none
-- dead-lettered: dead letters wait for an operator or for dead-letter
-- retention), accepted before @accepted_before, no route changed since
-- @finished_before, and the idempotency window over, so a key is never freed
-- early (DESIGN.md invariant 3). The routes go in the same statement (their
-- dead letters with them, ON DELETE CASCADE; routes have no foreign key to
-- records, see migration 00005). No route can leave a terminal state the
-- candidates are in (replay only moves dead letters), so the checks cannot
-- be outrun. The candidate records are locked with SKIP LOCKED, so two runs
-- never wait on each other.
--
-- The scan walks records_listing_idx oldest first from the cursor
-- (@after_accepted_at, @after_id), exclusive; the caller passes the cursor
-- this statement returns (the last candidate) to the next batch, so
-- records that must stay (a dead letter, a pending route) are read once per
-- run, not once per batch. Start with the zero time (0001-01-01 UTC, Go's
-- time.Time{}, before every record) and ''. Returns the candidates found
-- (fewer than @batch_size: the run is over), the records deleted, and the
-- cursor to go on from: the last candidate's, or the one given when there
-- was no candidate.
WITH doomed AS (
    SELECT r.notification_id, r.accepted_at
    FROM herald.records r
    WHERE r.accepted_at < @accepted_before::timestamptz
        AND (r.accepted_at, r.notification_id) > (@after_accepted_at::timestamptz, @after_id::text)
        AND r.idempotency_expires_at <= coalesce(sqlc.narg('now')::timestamptz, now())
        AND NOT EXISTS (
            SELECT 1
            FROM herald.routes rt
            WHERE rt.notification_id = r.notification_id
                AND (rt.status NOT IN ('published', 'skipped', 'canceled')
                    OR rt.updated_at >= @finished_before::timestamptz)
        )
    ORDER BY r.accepted_at, r.notification_id
    LIMIT @batch_size::integer
    FOR UPDATE OF r SKIP LOCKED
),
deleted AS (
    -- An array of ids, so the delete reads the primary key once per id
    -- instead of hashing the whole table.
    DELETE FROM herald.records r
    WHERE r.notification_id = ANY (ARRAY(SELECT notification_id FROM doomed))
    RETURNING 1
),
routes_deleted AS (
    -- Every doomed record is deleted above (they are locked), so all their
    -- routes go. A data-modifying CTE runs whether or not it is read.
    DELETE FROM herald.routes rt
    WHERE rt.notification_id = ANY (ARRAY(SELECT notification_id FROM doomed))
)
SELECT
    (SELECT count(*) FROM doomed)::bigint AS candidates,
    (SELECT count(*) FROM deleted)::bigint AS deleted,
    coalesce(last.accepted_at, @after_accepted_at::timestamptz)::timestamptz AS last_accepted_at,
    coalesce(last.notification_id, @after_id::text)::text AS last_notification_id
FROM (SELECT 1) AS one
LEFT JOIN (
    SELECT accepted_at, notification_id
    FROM doomed
    ORDER BY accepted_at DESC, notification_id DESC
    LIMIT 1
) AS last ON true;

-- name: RecordDeleteDeadLettered :one
-- Dead-letter retention (off unless configured): deletes up to @batch_size
-- notifications that have at least one dead-lettered route, all of whose
-- routes are terminal (a replayed route is pending again and keeps its
-- record), all of whose dead letters are older than @dead_before, and whose
-- idempotency window is over. The record goes whole, with its routes and dead
-- letters, so no orphan is left for the operator views. The cursor and the
-- result are RecordDeleteFinished's.
WITH doomed AS (
    SELECT r.notification_id, r.accepted_at
    FROM herald.records r
    WHERE r.idempotency_expires_at <= coalesce(sqlc.narg('now')::timestamptz, now())
        AND r.accepted_at < @dead_before::timestamptz
        AND (r.accepted_at, r.notification_id) > (@after_accepted_at::timestamptz, @after_id::text)
        AND EXISTS (
            SELECT 1
            FROM herald.dead_letters d
            WHERE d.notification_id = r.notification_id
        )
        AND NOT EXISTS (
            SELECT 1
            FROM herald.routes rt
            WHERE rt.notification_id = r.notification_id
                AND (rt.status NOT IN ('published', 'skipped', 'canceled', 'dead_letter')
                    OR rt.updated_at >= @dead_before::timestamptz)
        )
        AND NOT EXISTS (
            SELECT 1
            FROM herald.dead_letters d
            WHERE d.notification_id = r.notification_id
                AND d.created_at >= @dead_before::timestamptz
        )
    ORDER BY r.accepted_at, r.notification_id
    LIMIT @batch_size::integer
    FOR UPDATE OF r SKIP LOCKED
),
-- A replay that committed after this statement's snapshot moved a route
-- back to pending, which the checks above cannot see. Locking the routes
-- re-reads each one's newest version (READ COMMITTED's recheck) and leaves
-- out any that is no longer terminal, or that a replay holds right now
-- (SKIP LOCKED); a record whose routes are not all locked here is kept.
locked AS (
    SELECT rt.notification_id
    FROM herald.routes rt
    WHERE rt.notification_id = ANY (ARRAY(SELECT notification_id FROM doomed))
        AND rt.status IN ('published', 'skipped', 'canceled', 'dead_letter')
    FOR UPDATE OF rt SKIP LOCKED
),
deleted AS (
    DELETE FROM herald.records r
    WHERE r.notification_id = ANY (ARRAY(SELECT notification_id FROM doomed))
        AND (SELECT count(*) FROM locked l WHERE l.notification_id = r.notification_id)
            = (SELECT count(*) FROM herald.routes rt WHERE rt.notification_id = r.notification_id)
    RETURNING r.notification_id
),
routes_deleted AS (
    -- The routes of exactly the records deleted (all locked above), with
    -- their dead letters (ON DELETE CASCADE).
    DELETE FROM herald.routes rt
    WHERE rt.notification_id = ANY (ARRAY(SELECT notification_id FROM deleted))
)
SELECT
    (SELECT count(*) FROM doomed)::bigint AS candidates,
    (SELECT count(*) FROM deleted)::bigint AS deleted,
    coalesce(last.accepted_at, @after_accepted_at::timestamptz)::timestamptz AS last_accepted_at,
    coalesce(last.notification_id, @after_id::text)::text AS last_notification_id
FROM (SELECT 1) AS one
LEFT JOIN (
    SELECT accepted_at, notification_id
    FROM doomed
    ORDER BY accepted_at DESC, notification_id DESC
    LIMIT 1
) AS last ON true;

-- name: MalformedIntentDeleteBefore :execrows
-- Malformed-intent retention: deletes up to @batch_size malformed intents
-- recorded before @recorded_before, oldest first along
-- malformed_intents_listing_idx.
DELETE FROM herald.malformed_intents m
WHERE m.stream_entry_id IN (
    SELECT stream_entry_id
    FROM herald.malformed_intents
    WHERE recorded_at < @recorded_before::timestamptz
    ORDER BY recorded_at
    LIMIT @batch_size::integer
    FOR UPDATE SKIP LOCKED
);

-- name: RouteBloatStats :one
-- What the bloat check decides on, from the statistics views only (no table
-- scan; pgstattuple is an extension that may not be installed): the routes
-- table's live and dead tuples and size, and routes_due_idx's size and the
-- number of entries the planner believes it holds (reltuples, refreshed by
-- VACUUM and ANALYZE; -1 when never analysed).
SELECT
    coalesce(s.n_live_tup, 0)::bigint AS table_live_tuples,
    coalesce(s.n_dead_tup, 0)::bigint AS table_dead_tuples,
    pg_relation_size('herald.routes'::regclass)::bigint AS table_bytes,
    pg_relation_size('herald.routes_due_idx'::regclass)::bigint AS index_bytes,
    greatest(i.reltuples, 0)::bigint AS index_tuples
FROM pg_catalog.pg_class i
LEFT JOIN pg_catalog.pg_stat_user_tables s ON s.relid = 'herald.routes'::regclass
WHERE i.oid = 'herald.routes_due_idx'::regclass;

-- name: RouteBacklogByChannel :many
-- The backlog and lag per channel for the metrics collector: one scan of
-- routes_due_idx (index-only: every column read is in the index, and only
-- scheduling candidates are in it). Lag is how late the most overdue route
-- is (0 when nothing is overdue); a claimed route's next_attempt_at is its
-- lease's end, in the future, so it adds to the backlog and not to the lag.
SELECT
    channel,
    count(*)::bigint AS backlog,
    coalesce(extract(epoch FROM
        greatest(coalesce(sqlc.narg('now')::timestamptz, now()) - min(next_attempt_at), interval '0')
    ), 0)::float8 AS lag_seconds
FROM herald.routes
WHERE next_attempt_at IS NOT NULL
GROUP BY channel
ORDER BY channel;

-- name: RouteDueIndexLeftoverList :many
-- The invalid indexes a failed REINDEX INDEX CONCURRENTLY of routes_due_idx
-- leaves behind (routes_due_idx_ccnew, _ccnew1, ...): Postgres keeps
-- updating them on every write and never drops them by itself.
SELECT c.relname::text AS index_name
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'herald.routes'::regclass
    AND NOT i.indisvalid
    AND starts_with(c.relname::text, 'routes_due_idx_ccnew')
ORDER BY 1;

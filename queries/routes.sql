-- Queries of herald.routes: one row per (notification, channel, recipient),
-- the unit the dispatcher schedules and delivers. The client's reads and
-- cancel come first, then the dispatcher's claim and complete, then what
-- metrics, `herald stats` and maintenance read.

-- name: RouteListByNotification :many
-- Every route of one notification, for Get and `herald status`: reads the
-- primary key's prefix.
SELECT *
FROM herald.routes
WHERE notification_id = @notification_id
ORDER BY route_id;

-- name: RouteCancelByNotification :many
-- Cancels the routes of one notification that are not terminal yet and
-- writes the cancel's audit row, in one statement (schema function
-- herald.notification_cancel, which producers may call for their own
-- notifications only: they hold no UPDATE on routes). A route claimed by a
-- dispatcher right now is canceled too: its completion is fenced on status
-- 'claimed' and finds nothing to update, though the delivery in flight may
-- still reach the recipient. An id the caller may not cancel fails like an
-- unknown one, with no_data_found (P0002).
SELECT c.route_id::text AS route_id, c.channel::text AS channel
FROM herald.notification_cancel(@notification_id::text, @actor::text, @reason::text, sqlc.narg('now')::timestamptz) AS c;

-- ---------------------------------------------------------------------------
-- Dispatcher (internal/dispatch): claim, complete, release, next due, and
-- the wake-up hint.
--
-- Every statement here that reads or changes routes not finished says
-- `finished_at IS NULL`: Postgres prunes it, when planning and so in a
-- generic plan too, to routes' one partition routes_live (migration
-- 00025), where routes_due_idx is, and where a tuple id names one row.
-- ---------------------------------------------------------------------------

-- name: RouteClaimDue :many
-- Claims up to @max due routes of one channel's lane ('' is the channel's
-- own queue; a capped provider's name is that provider's paced queue, see
-- migration 00007) and takes a lease on them, in
-- one statement (one short implicit transaction): status 'claimed', the
-- attempt counted now (attempt_count is the fence every completion checks),
-- and lease_until set to the lease's end, so a route whose worker dies
-- comes due again by itself.
--
-- The due CTE locks with FOR UPDATE SKIP LOCKED, so concurrent dispatchers
-- (in this process or another) never wait on each other and never claim the
-- same route. It reads routes_due_idx (channel, lane, priority, next_attempt_at) as
-- two tight range scans, one per priority (0 transactional, 1 bulk), each
-- starting at the oldest due entry and stopping at `now`: a single scan ordered
-- by (priority, next_attempt_at) with `next_attempt_at <= now` would have to
-- step over every priority-0 route scheduled for the future (leases, backoffs,
-- send_at) before reaching due priority-1 routes. UNION ALL runs the bulk branch
-- only when the transactional one did not fill the batch; the outer LIMIT stops
-- it as soon as it has (each branch is a sub-select because FOR UPDATE is not
-- allowed on a UNION's arms directly). Canceled and terminal routes have next_attempt_at NULL
-- and are not in the index.
--
-- The locked rows are found again by the tuple id (ctid) their locking
-- scan returned: one TID scan fetches each straight from its heap page, with
-- no index descent (a semi-join on the primary key cost a routes_pkey descent
-- per route, about three buffer reads). The claim holds the rows' locks from
-- the due scan to its commit, so no other statement can move them in
-- between. The one case a tid misses: FOR UPDATE locked a version a
-- concurrent update committed after this statement's snapshot was taken
-- (its tid is that newer version's, which the snapshot cannot see). That
-- route is left as it is, due, and the next claim takes it: skipped, never
-- lost. `ARRAY(SELECT ...)` is computed once per run (an InitPlan), not per
-- route. `ctid::tid` is written with its cast because sqlc's static
-- analyzer does not know system columns (sqlc-dev/sqlc#1745); lint's
-- `sqlc vet` still prepares the query on a real server.
--
-- The UPDATE reads routes only, so that its one way to routes is the TID
-- scan: joined to records in the same statement, routes_pkey's order was
-- useful to a merge join, and a generic plan made while the tables were
-- nearly empty (herald bench's rounds start on truncated tables) merged a
-- full scan of routes_pkey with a full scan of records_pkey, and kept doing
-- so as they grew: 2,000 delivered/s instead of 24,000 (auto_explain). Each
-- claimed route's record is read after the update by a LATERAL probe of
-- records_pkey (a parameterized index scan, the only plan a lateral
-- reference allows short of a sequential scan), which hands delivery what
-- it needs in the same round trip; the claim locks only routes rows.
-- `expired` says the intent expired before this claim: the route is
-- dead-lettered without delivery.
--
-- The claim leaves next_attempt_at, the route's place in routes_due_idx,
-- where it was and writes the lease's end to lease_until, a column no index
-- holds: the update is HOT (00019). The route stays at the head of the
-- index while it is in flight, and the due scans step over it on
-- `status <> 'claimed' OR coalesce(lease_until, next_attempt_at) <= now`
-- (a route claimed before 00019 has its lease in next_attempt_at and no
-- lease_until), checked on the heap (and
-- checked again by FOR UPDATE on a row a concurrent claim has just taken).
--
-- lease_until is the claim's token: completions
-- and releases are fenced on it as well as on the attempt, because it is
-- unique to this claim even where the attempt number is not (a claim lost
-- in a database crash is taken again with the same attempt number, and a
-- replay starts the count again).
--
-- The claim commits asynchronously (synchronous_commit off for this
-- transaction only, set_config's third argument): it does not wait for its
-- WAL to reach disk, which on a disk with fsync on is most of a claim's
-- time, and the dispatcher's claims run one after another. This is safe
-- because nothing outside the database acts on a claim before delivery,
-- and a claim lost in a database crash only puts its routes back as they
-- were: they are due again and delivered again (at-least-once: the repeat
-- is of a delivery that was in flight at the crash), and the lost claim's
-- completion cannot match the next claim's lease_until, so it is dropped
-- as stale. Completions, which record what reached the recipient, commit
-- synchronously as every other statement does.
WITH due AS (
    SELECT * FROM (
        SELECT ctid::tid AS route_tid
        FROM herald.routes
        WHERE channel = @channel::text
            AND lane = @lane::text
            AND priority = 0
            AND next_attempt_at IS NOT NULL
            AND finished_at IS NULL
            AND next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
            AND (status <> 'claimed' OR coalesce(lease_until, next_attempt_at) <= coalesce(sqlc.narg('now')::timestamptz, now()))
        ORDER BY next_attempt_at
        LIMIT @max::integer
        FOR UPDATE SKIP LOCKED
    ) AS p0
    UNION ALL
    SELECT * FROM (
        SELECT ctid::tid AS route_tid
        FROM herald.routes
        WHERE channel = @channel::text
            AND lane = @lane::text
            AND priority = 1
            AND next_attempt_at IS NOT NULL
            AND finished_at IS NULL
            AND next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
            AND (status <> 'claimed' OR coalesce(lease_until, next_attempt_at) <= coalesce(sqlc.narg('now')::timestamptz, now()))
        ORDER BY next_attempt_at
        LIMIT @max::integer
        FOR UPDATE SKIP LOCKED
    ) AS p1
    LIMIT @max::integer
),
claimed AS (
    UPDATE herald.routes AS r
    SET status = 'claimed',
        attempt_count = r.attempt_count + 1,
        lease_until = coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @lease_seconds::float8),
        updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
    WHERE r.ctid = ANY (ARRAY(SELECT route_tid FROM due))
        AND r.finished_at IS NULL
        AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'
    RETURNING r.notification_id, r.route_id, r.ctid::tid AS route_tid, r.recipient_ref, r.attempt_count,
        r.lease_until, r.max_attempts, r.priority, r.sms_encoding, r.sms_segments, r.providers, r.expires_at
)
SELECT
    c.notification_id, c.route_id, c.route_tid, c.recipient_ref, c.attempt_count, c.lease_until,
    c.max_attempts, rec.producer,
    c.priority, c.sms_encoding, c.sms_segments, c.providers,
    (c.expires_at IS NOT NULL AND c.expires_at <= coalesce(sqlc.narg('now')::timestamptz, now()))::boolean AS expired,
    rec.notification_type, rec.payload_json, rec.trace_id, rec.request_id, rec.accepted_at
FROM claimed AS c
CROSS JOIN LATERAL (
    SELECT x.producer, x.notification_type, x.payload_json, x.trace_id, x.request_id, x.accepted_at
    FROM herald.records AS x
    WHERE x.notification_id = c.notification_id
    LIMIT 1
) AS rec;

-- name: RouteLockDue :many
-- The first half of the claim of a channel that has a capped provider (see
-- RouteClaimLocked): locks up to @max due routes of the channel's own queue
-- (lane '') as RouteClaimDue's due CTE does, FOR UPDATE SKIP LOCKED, and
-- returns them with what delivery needs, changing nothing. The caller's
-- transaction holds the locks while it resolves recipients and routes each
-- route (in memory, no delivery), then claims or parks each in one
-- statement and commits: a route bound for a capped provider is written
-- once to reach its provider's lane, never claimed and released.
WITH due AS (
    SELECT * FROM (
        SELECT notification_id, route_id
        FROM herald.routes
        WHERE channel = @channel::text
            AND lane = ''
            AND priority = 0
            AND next_attempt_at IS NOT NULL
            AND finished_at IS NULL
            AND next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
            AND (status <> 'claimed' OR coalesce(lease_until, next_attempt_at) <= coalesce(sqlc.narg('now')::timestamptz, now()))
        ORDER BY next_attempt_at
        LIMIT @max::integer
        FOR UPDATE SKIP LOCKED
    ) AS p0
    UNION ALL
    SELECT * FROM (
        SELECT notification_id, route_id
        FROM herald.routes
        WHERE channel = @channel::text
            AND lane = ''
            AND priority = 1
            AND next_attempt_at IS NOT NULL
            AND finished_at IS NULL
            AND next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
            AND (status <> 'claimed' OR coalesce(lease_until, next_attempt_at) <= coalesce(sqlc.narg('now')::timestamptz, now()))
        ORDER BY next_attempt_at
        LIMIT @max::integer
        FOR UPDATE SKIP LOCKED
    ) AS p1
    LIMIT @max::integer
)
SELECT
    r.notification_id, r.route_id, r.recipient_ref, r.attempt_count,
    r.max_attempts, rec.producer,
    r.priority, r.sms_encoding, r.sms_segments, r.providers,
    (r.expires_at IS NOT NULL AND r.expires_at <= coalesce(sqlc.narg('now')::timestamptz, now()))::boolean AS expired,
    rec.notification_type, rec.payload_json, rec.trace_id, rec.request_id, rec.accepted_at
FROM herald.routes AS r
JOIN herald.records AS rec ON rec.notification_id = r.notification_id
WHERE (r.notification_id, r.route_id) IN (SELECT notification_id, route_id FROM due)
    AND r.finished_at IS NULL;

-- name: RouteClaimLocked :many
-- The second half of that claim: for each route locked by RouteLockDue in
-- this transaction, either claims it as RouteClaimDue does (status
-- 'claimed', the attempt counted, lease_until the lease's end) or, when
-- park is set, moves it into @lanes' lane due after delay_seconds without
-- an attempt. Commits asynchronously, as RouteClaimDue does and for the
-- same reason. Returns the claimed routes' attempt and lease end.
UPDATE herald.routes AS r
SET status = CASE WHEN d.park THEN r.status ELSE 'claimed' END,
    attempt_count = CASE WHEN d.park THEN r.attempt_count ELSE r.attempt_count + 1 END,
    lane = d.lane,
    next_attempt_at = CASE WHEN d.park
        THEN coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => d.delay_seconds)
        ELSE r.next_attempt_at END,
    lease_until = CASE WHEN d.park THEN NULL
        ELSE coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @lease_seconds::float8) END,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (
    SELECT
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@route_ids::text[]) AS route_id,
        unnest(@parks::boolean[]) AS park,
        unnest(@lanes::text[]) AS lane,
        unnest(@delay_seconds::float8[]) AS delay_seconds
) AS d
WHERE r.notification_id = d.notification_id
    AND r.route_id = d.route_id
    AND r.finished_at IS NULL
    AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'
RETURNING r.notification_id, r.route_id, r.ctid::tid AS route_tid, r.attempt_count, r.lease_until, d.park::boolean AS parked;

-- name: RouteCompleteMany :many
-- Writes a batch of attempt outcomes in ONE statement. Each element is fenced
-- (RouteCompletionsLock repeats this fence; change both together)
-- on status 'claimed', the attempt taken at its claim AND the claim's
-- lease_until: a completion whose lease expired and whose route was claimed
-- again (or canceled, or released, or whose claim was lost in a database
-- crash and taken again) matches nothing and changes nothing; the dispatcher
-- counts it as stale.
-- Only the routes actually updated are returned.
--
-- statuses: published | failed | dead_letter | skipped. A failed route is due
-- again after delay_seconds; the others leave the due index
-- (next_attempt_at NULL). The dead_lettered CTE writes the operator's
-- dead_letters row for exactly the routes this statement moved to
-- dead_letter, in the same statement, so a dead letter never exists without
-- its row (an older row from before a replay is replaced). resolved_email /
-- resolved_locale / provider_message_id keep their value when given ''.
WITH done AS (
    SELECT u.*, coalesce(u.route_tid, (
        SELECT x.ctid::tid FROM herald.routes AS x
        WHERE x.notification_id = u.notification_id AND x.route_id = u.route_id
            AND x.finished_at IS NULL)) AS tid
    FROM (SELECT
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@route_ids::text[]) AS route_id,
        unnest(@route_tids::tid[]) AS route_tid,
        unnest(@attempts::integer[]) AS attempt,
        unnest(@lease_untils::timestamptz[]) AS lease_until,
        unnest(@statuses::text[]) AS status,
        unnest(@delay_seconds::float8[]) AS delay_seconds,
        unnest(@classifications::text[]) AS classification,
        unnest(@messages::text[]) AS message,
        unnest(@recovery_hints::text[]) AS recovery_hint,
        unnest(@max_attempts::integer[]) AS max_attempts,
        unnest(@resolved_emails::text[]) AS resolved_email,
        unnest(@resolved_locales::text[]) AS resolved_locale,
        unnest(@provider_message_ids::text[]) AS provider_message_id,
        unnest(@providers::text[]) AS provider,
        unnest(@receipt_keys::text[]) AS receipt_key
    ) AS u
),
updated AS (
    UPDATE herald.routes AS r
    SET status = d.status,
        next_attempt_at = CASE WHEN d.status = 'failed'
            THEN coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => d.delay_seconds) END,
        published_at = CASE WHEN d.status = 'published'
            THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE r.published_at END,
        dead_lettered_at = CASE WHEN d.status = 'dead_letter'
            THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE r.dead_lettered_at END,
        skipped_at = CASE WHEN d.status = 'skipped'
            THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE r.skipped_at END,
        -- A route that finishes moves to its week's partition (00025).
        finished_at = CASE WHEN d.status IN ('published', 'skipped')
            THEN coalesce(sqlc.narg('now')::timestamptz, now()) END,
        last_error_classification = CASE WHEN d.status = 'published'
            THEN r.last_error_classification ELSE d.classification END,
        last_error_message = CASE WHEN d.status = 'published'
            THEN r.last_error_message ELSE d.message END,
        last_error_at = CASE WHEN d.status = 'published'
            THEN r.last_error_at ELSE coalesce(sqlc.narg('now')::timestamptz, now()) END,
        resolved_email = CASE WHEN d.resolved_email <> '' THEN d.resolved_email ELSE r.resolved_email END,
        resolved_locale = CASE WHEN d.resolved_locale <> '' THEN d.resolved_locale ELSE r.resolved_locale END,
        provider_message_id = CASE WHEN d.provider_message_id <> ''
            THEN d.provider_message_id ELSE r.provider_message_id END,
        providers = CASE WHEN d.provider <> '' THEN array_append(r.providers, d.provider) ELSE r.providers END,
        -- A message sent in parts carries every part's key, in part
        -- order, one per line: the first is receipt_key, all are
        -- receipt_parts (00030). A new key starts its parts' statuses
        -- afresh, and is dated by the claim of the attempt that got it
        -- (the claim set updated_at).
        receipt_key = CASE WHEN d.receipt_key <> '' THEN split_part(d.receipt_key, E'\n', 1) ELSE r.receipt_key END,
        receipt_parts = CASE WHEN d.receipt_key = '' THEN r.receipt_parts
            WHEN strpos(d.receipt_key, E'\n') > 0 THEN string_to_array(d.receipt_key, E'\n') END,
        part_delivery_statuses = CASE WHEN d.receipt_key = '' THEN r.part_delivery_statuses END,
        receipt_keyed_at = CASE WHEN d.receipt_key <> '' THEN r.updated_at ELSE r.receipt_keyed_at END,
        lane = '',
        lease_until = NULL,
        updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
    FROM done AS d
    -- Written for the planner. The fence is one expression ("the attempt
    -- of a claimed route") rather than "status = 'claimed' AND
    -- attempt_count = attempt": with the plain form, statistics gathered
    -- while few routes were claimed made the planner expect one claimed
    -- route and nest a scan of the batch inside a scan of routes:
    -- quadratic, 0.7 s for 1,000 completions. An array condition beside
    -- the join (`notification_id = ANY(@notification_ids)`, once meant to
    -- steer the plan) made it quadratic again in a generic plan that nests
    -- the routes scan inside the batch: Postgres sorts a scan's array again
    -- at every rescan, and under load that sort was a third of the
    -- database's CPU (perf).
    --
    -- Each completion carries the tuple id its claim's UPDATE returned
    -- (route_tid), and reaches its route by a TID scan, one heap fetch,
    -- instead of a routes_pkey descent. A completion without one (NULL:
    -- callers that hold none, and the dispatcher's second try, below) gets
    -- its route's current tid from routes_pkey in done, computed once per
    -- completion. The keys are compared on the fetched row, so a tid that
    -- now holds another row matches nothing. A route updated since its
    -- claim (canceled, its lease taken again, or only touched) has a new
    -- tid, and its completion matches nothing: the dispatcher sends those
    -- again without a tid, and they are fenced as any completion is.
    --
    -- Written so that the TID scan is the only plan: the keys are compared
    -- as `(...) IS TRUE`, which no index or merge join can use (with `=`,
    -- routes_pkey's order made a merge join over a full scan of it
    -- possible, and a generic plan made on a nearly empty table chose it),
    -- and a hash join would need a sequential scan of routes, which the
    -- engine's pool prices out.
    WHERE r.ctid = d.tid
        AND r.finished_at IS NULL
        AND (r.notification_id = d.notification_id) IS TRUE
        AND (r.route_id = d.route_id) IS TRUE
        AND CASE WHEN r.status = 'claimed' THEN r.attempt_count END = d.attempt
        AND r.lease_until = d.lease_until
    -- What dead_lettered writes comes from here, the completion that moved
    -- the route included: done is read by this UPDATE alone, so Postgres
    -- folds it into the UPDATE's scan of the batch instead of first
    -- writing every completion (16 columns) to a tuplestore and reading it
    -- back, which a CTE read by two others costs.
    RETURNING r.notification_id, r.route_id, r.channel, r.recipient_ref, r.status, r.attempt_count,
        d.max_attempts, d.classification, d.message, d.recovery_hint, d.provider
),
dead_lettered AS (
    INSERT INTO herald.dead_letters (
        notification_id, route_id, channel, recipient_ref, final_attempt_count, max_attempts,
        failure_classification, failure_message, recovery_hint, created_at, provider
    )
    SELECT u.notification_id, u.route_id, u.channel, u.recipient_ref, u.attempt_count, u.max_attempts,
        u.classification, u.message, u.recovery_hint, coalesce(sqlc.narg('now')::timestamptz, now()), u.provider
    FROM updated AS u
    WHERE u.status = 'dead_letter'
    ON CONFLICT (notification_id, route_id) DO UPDATE
    SET channel = excluded.channel,
        recipient_ref = excluded.recipient_ref,
        final_attempt_count = excluded.final_attempt_count,
        max_attempts = excluded.max_attempts,
        failure_classification = excluded.failure_classification,
        failure_message = excluded.failure_message,
        recovery_hint = excluded.recovery_hint,
        created_at = excluded.created_at,
        provider = excluded.provider
    RETURNING 1
)
SELECT notification_id, route_id FROM updated;

-- name: RouteCompletionsLock :many
-- The routes of a batch of completions that are still theirs to write
-- (unfinished, claimed, with the attempt and lease each completion names),
-- each with whether this transaction now holds its row: the rows are locked
-- FOR UPDATE SKIP LOCKED, so a row another transaction holds (a producer's
-- cancel in its own open transaction) is returned with locked false rather
-- than waited for. A completion whose route is not returned is fenced out.
-- The dispatcher runs it, and RouteCompleteMany for the locked routes, in
-- one transaction, when a completion batch waited its lock_timeout for a
-- row: the others' routes are written, the held ones set aside.
-- Its fence (unfinished, claimed, the attempt and the lease) is
-- RouteCompleteMany's: a change to one is a change to both.
WITH d AS (
    SELECT unnest(@notification_ids::text[]) AS notification_id,
        unnest(@route_ids::text[]) AS route_id,
        unnest(@attempts::integer[]) AS attempt,
        unnest(@lease_untils::timestamptz[]) AS lease_until
),
locked AS MATERIALIZED (
    SELECT r.notification_id, r.route_id
    FROM herald.routes AS r
    JOIN d ON r.notification_id = d.notification_id AND r.route_id = d.route_id
    WHERE r.finished_at IS NULL AND r.status = 'claimed'
        AND r.attempt_count = d.attempt AND r.lease_until = d.lease_until
    FOR UPDATE OF r SKIP LOCKED
)
SELECT r.notification_id, r.route_id, (l.route_id IS NOT NULL)::boolean AS locked
FROM herald.routes AS r
JOIN d ON r.notification_id = d.notification_id AND r.route_id = d.route_id
LEFT JOIN locked AS l ON l.notification_id = r.notification_id AND l.route_id = r.route_id
WHERE r.finished_at IS NULL AND r.status = 'claimed'
    AND r.attempt_count = d.attempt AND r.lease_until = d.lease_until;

-- name: RouteLockHolders :one
-- Who may hold routes' rows right now: the sessions of other logins than
-- the caller's (the engine's) that write herald.routes in an open
-- transaction, each one's login, pid and how long its transaction has been
-- open when the caller may see that, oldest first. A row's lock names no
-- session PostgreSQL shows (its xmax may be a subtransaction's, which
-- pg_locks no longer lists once it is done): the writers of the table are
-- the candidates, and the one whose transaction has been open for long is
-- the holder. What the dispatcher says when it sets completions aside.
SELECT coalesce(string_agg(format('%s (pid %s) writes herald.routes%s',
        coalesce(a.usename::text, '?'), l.pid,
        CASE WHEN a.xact_start IS NULL THEN ''
            ELSE format(', in a transaction open %s', date_trunc('second', now() - a.xact_start)) END),
        '; ' ORDER BY a.xact_start NULLS FIRST, l.pid),
    'no other session writes herald.routes now')::text AS holders
FROM pg_catalog.pg_locks AS l
LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid
WHERE l.locktype = 'relation' AND l.granted AND l.mode = 'RowExclusiveLock'
    AND l.database = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname = current_database())
    AND l.relation = 'herald.routes'::regclass
    AND l.pid <> pg_backend_pid()
    AND a.usename IS DISTINCT FROM current_user;

-- name: RouteReleaseLeases :execrows
-- Gives back claimed routes whose delivery never started (shutdown): due
-- again at once, and the attempt taken at claim is handed back, because
-- nothing reached the channel. Fenced like a completion (attempt and
-- lease_until), so a lease that has expired and been taken by another
-- dispatcher is left alone.
UPDATE herald.routes AS r
SET status = CASE WHEN r.attempt_count <= 1 THEN 'pending' ELSE 'failed' END,
    attempt_count = r.attempt_count - 1,
    next_attempt_at = coalesce(sqlc.narg('now')::timestamptz, now()),
    lease_until = NULL,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (
    SELECT
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@route_ids::text[]) AS route_id,
        unnest(@attempts::integer[]) AS attempt,
        unnest(@lease_untils::timestamptz[]) AS lease_until
) AS d
-- Written for the planner as RouteCompleteMany is.
WHERE r.notification_id = d.notification_id
    AND r.route_id = d.route_id
    AND CASE WHEN r.status = 'claimed' THEN r.attempt_count END = d.attempt
    AND r.lease_until = d.lease_until
    AND r.finished_at IS NULL;

-- name: RouteParkMany :execrows
-- Moves claimed routes into a lane without an attempt, due after
-- delay_seconds, their attempt handed back as a release does: into a capped
-- provider's lane, where that provider's paced loop claims them (the one
-- write a capped route pays for waiting), or back into the channel's own
-- queue ('') later, when every provider its rule names has an open circuit.
-- Fenced like a completion.
UPDATE herald.routes AS r
SET status = CASE WHEN r.attempt_count <= 1 THEN 'pending' ELSE 'failed' END,
    attempt_count = r.attempt_count - 1,
    lane = d.lane,
    next_attempt_at = coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => d.delay_seconds),
    lease_until = NULL,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (
    SELECT
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@route_ids::text[]) AS route_id,
        unnest(@attempts::integer[]) AS attempt,
        unnest(@lease_untils::timestamptz[]) AS lease_until,
        unnest(@lanes::text[]) AS lane,
        unnest(@delay_seconds::float8[]) AS delay_seconds
) AS d
-- Written for the planner as RouteCompleteMany is.
WHERE r.notification_id = d.notification_id
    AND r.route_id = d.route_id
    AND CASE WHEN r.status = 'claimed' THEN r.attempt_count END = d.attempt
    AND r.lease_until = d.lease_until
    AND r.finished_at IS NULL;

-- name: RouteLaneReset :execrows
-- Moves the waiting routes of a channel's lanes back into the channel's own
-- queue, for every lane not in @keep (a provider that lost its cap or was
-- removed): they are routed afresh at their next claim. Claimed routes keep
-- their lane until their completion, which clears it. The engine's own
-- lanes ('!vet', '!held': migration 00028) are not providers' and stay.
UPDATE herald.routes
SET lane = '', updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE channel = @channel::text
    AND lane <> ''
    AND NOT starts_with(lane, '!')
    AND NOT (lane = ANY(@keep::text[]))
    AND next_attempt_at IS NOT NULL
    AND finished_at IS NULL
    AND status <> 'claimed';

-- name: RouteListByReceiptKeys :many
-- The routes that were given any of the receipt keys of the matcher's
-- batch ("<provider> <provider message id>"), as their only key
-- (receipt_key) or as one part's (receipt_parts), with when the attempt
-- that got them was claimed: one scan of routes_receipt_key_idx and
-- routes_receipt_parts_idx (multi-part routes only) per partition for the
-- whole batch, nothing else read. A provider's ids repeat (an SMSC's
-- counter restarts), so a key may name several routes; the matcher gives
-- each receipt the most recent one keyed at or before it arrived.
SELECT receipt_key::text AS receipt_key, coalesce(receipt_parts, '{}')::text[] AS receipt_parts,
    receipt_keyed_at, notification_id, route_id, delivery_status, attempt_count,
    coalesce(array_to_string(part_delivery_statuses, ',', ''), '')::text AS part_statuses
FROM herald.routes
WHERE receipt_key = ANY(@receipt_keys::text[]) OR receipt_parts && @receipt_keys::text[];

-- name: RouteDeliveryStatusSetMany :many
-- Records receipts' verdicts on their routes. A route of one part with no
-- delivery status, or 'unknown', takes the new one; a final one
-- (delivered, undelivered, expired) is never changed, so a duplicate or
-- late contradicting receipt changes nothing. A route of several parts
-- takes its parts' statuses (part_statuses, comma-separated, in part
-- order) and the status the matcher derived from them, if its parts are
-- still as the matcher read them (old_part_statuses): a concurrent
-- matcher's change makes this one's a no-op, and its receipts are matched
-- again. Its delivery status, time and error change only when the status
-- does. The scheduling status is not touched: published stays terminal.
-- Returns the routes changed.
--
-- With retry set (the provider's receipts say retry_temporary, and the
-- receipt is undelivered with a temporary code) a published route goes
-- back to the schedule instead: failed, due now, its delivery status
-- cleared for the next attempt's receipt; its rule routes it to the next
-- provider (routes.providers names the one that failed). The dispatcher
-- still holds it to its attempt budget.
UPDATE herald.routes AS r
SET delivery_status = CASE WHEN d.retry AND r.status = 'published' THEN NULL ELSE d.delivery_status END,
    delivery_status_at = CASE WHEN r.delivery_status IS NOT DISTINCT FROM d.delivery_status AND NOT d.retry
        THEN r.delivery_status_at ELSE coalesce(sqlc.narg('now')::timestamptz, now()) END,
    delivery_error = CASE WHEN r.delivery_status IS NOT DISTINCT FROM d.delivery_status AND NOT d.retry
        THEN r.delivery_error ELSE d.delivery_error END,
    delivery_error_permanent = CASE WHEN r.delivery_status IS NOT DISTINCT FROM d.delivery_status AND NOT d.retry
        THEN r.delivery_error_permanent WHEN d.delivery_status = 'undelivered' THEN d.permanent END,
    part_delivery_statuses = CASE WHEN d.retry AND r.status = 'published' THEN NULL
        WHEN d.part_statuses <> '' THEN string_to_array(d.part_statuses, ',') ELSE r.part_delivery_statuses END,
    status = CASE WHEN d.retry AND r.status = 'published' THEN 'failed' ELSE r.status END,
    -- Back to routes_live, to be delivered again (00025).
    finished_at = CASE WHEN d.retry AND r.status = 'published' THEN NULL ELSE r.finished_at END,
    next_attempt_at = CASE WHEN d.retry AND r.status = 'published'
        THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE r.next_attempt_at END,
    last_error_classification = CASE WHEN d.retry AND r.status = 'published'
        THEN 'undelivered' ELSE r.last_error_classification END,
    last_error_message = CASE WHEN d.retry AND r.status = 'published'
        THEN 'the provider reported it undelivered (temporary error ' || d.delivery_error || ')' ELSE r.last_error_message END,
    last_error_at = CASE WHEN d.retry AND r.status = 'published'
        THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE r.last_error_at END,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (
    SELECT
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@route_ids::text[]) AS route_id,
        unnest(@delivery_statuses::text[]) AS delivery_status,
        unnest(@delivery_errors::text[]) AS delivery_error,
        unnest(@permanents::boolean[]) AS permanent,
        unnest(@retries::boolean[]) AS retry,
        unnest(@part_statuses::text[]) AS part_statuses,
        unnest(@old_part_statuses::text[]) AS old_part_statuses
) AS d
WHERE r.notification_id = d.notification_id
    AND r.route_id = d.route_id
    AND CASE WHEN d.part_statuses = ''
        THEN r.delivery_status IS NULL OR (r.delivery_status = 'unknown' AND d.delivery_status <> 'unknown')
        ELSE coalesce(array_to_string(r.part_delivery_statuses, ',', ''), '') = d.old_part_statuses END
RETURNING r.notification_id, r.route_id, coalesce(r.delivery_status, d.delivery_status)::text AS delivery_status,
    r.created_at, r.delivery_status_at::timestamptz AS delivery_status_at, (r.status = 'failed')::boolean AS retried;

-- name: RouteNextDue :one
-- How many seconds until the next route of one channel's lane comes due (a
-- lease's end counts: an expired lease makes its route due again), measured
-- on the database's clock so app and database clocks need not agree;
-- negative when something is due already, +Infinity when nothing is
-- scheduled. A claimed route keeps its place in routes_due_idx (00019), so
-- each priority's probe walks the index from its head over the routes in
-- flight to the first route not leased, as a claim does. Only when that is
-- in the future, so that every route already due is in flight, do two more
-- probes, one per priority, read the earliest lease's end among those (the
-- routes in flight of this lane: a bounded walk of the same index range; a
-- CASE evaluates its sub-selects only when it is reached). Per priority,
-- because a range on next_attempt_at bounds a scan of routes_due_idx only
-- under an equality on priority: without it the probe read the whole lane,
-- 0.6 s behind a million routes scheduled for later (herald bench -mode
-- scale).
WITH next AS MATERIALIZED (
    SELECT least(
        (SELECT next_attempt_at FROM herald.routes
            WHERE channel = @channel::text AND lane = @lane::text AND priority = 0 AND next_attempt_at IS NOT NULL
                AND finished_at IS NULL
                AND (status <> 'claimed' OR coalesce(lease_until, next_attempt_at) <= coalesce(sqlc.narg('now')::timestamptz, now()))
            ORDER BY next_attempt_at LIMIT 1),
        (SELECT next_attempt_at FROM herald.routes
            WHERE channel = @channel::text AND lane = @lane::text AND priority = 1 AND next_attempt_at IS NOT NULL
                AND finished_at IS NULL
                AND (status <> 'claimed' OR coalesce(lease_until, next_attempt_at) <= coalesce(sqlc.narg('now')::timestamptz, now()))
            ORDER BY next_attempt_at LIMIT 1)
    ) AS at
)
SELECT coalesce(extract(epoch FROM
    CASE WHEN next.at <= coalesce(sqlc.narg('now')::timestamptz, now()) THEN next.at
    ELSE least(next.at, (
        SELECT min(coalesce(lease_until, next_attempt_at)) FROM herald.routes
        WHERE channel = @channel::text AND lane = @lane::text AND priority = 0 AND next_attempt_at IS NOT NULL
            AND finished_at IS NULL
            AND next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
            AND status = 'claimed'), (
        SELECT min(coalesce(lease_until, next_attempt_at)) FROM herald.routes
        WHERE channel = @channel::text AND lane = @lane::text AND priority = 1 AND next_attempt_at IS NOT NULL
            AND finished_at IS NULL
            AND next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
            AND status = 'claimed'))
    END - coalesce(sqlc.narg('now')::timestamptz, now()))::float8, 'Infinity')::float8 AS seconds
FROM next;

-- name: RouteNotifyDispatchers :exec
-- The trailing wake-up hint of the accept path's debounce window, on the
-- NOTIFY topic dispatchers LISTEN on (herald.routes_wake knows its name:
-- herald_routes and the database's secret); the payload is the
-- delivery channel of the new routes, or '' for several. (The leading hint
-- rides RecordInsertMany.) For a producer's login, whose routes wait for
-- the vetter (lane '!vet'), the topic is the vetter's.
SELECT herald.routes_wake(@channel::text, row_security_active('herald.routes'));

-- ---------------------------------------------------------------------------
-- Backlog and health: metrics, `herald stats`, maintenance.
-- ---------------------------------------------------------------------------

-- name: RouteBacklogByChannel :many
-- The backlog and lag per channel for the metrics collector. The backlog
-- (every route waiting or in flight) is counted in one index-only scan of
-- routes_due_idx. Lag is how late the most overdue route not in flight is
-- (0 when nothing is overdue): a claimed route keeps its old due time in
-- the index (00019), so per lane and priority a probe walks the index from
-- its head over the routes in flight to the first one not leased, as a
-- claim does, instead of reading the heap of the whole backlog; a route
-- whose lease ran out is late from its lease's end.
WITH queues AS (
    SELECT channel, lane, priority, count(*)::bigint AS routes
    FROM herald.routes
    WHERE next_attempt_at IS NOT NULL AND finished_at IS NULL
    GROUP BY channel, lane, priority
)
SELECT
    q.channel,
    sum(q.routes)::bigint AS backlog,
    coalesce(extract(epoch FROM
        greatest(coalesce(sqlc.narg('now')::timestamptz, now()) - min(f.due_at), interval '0')
    ), 0)::float8 AS lag_seconds
FROM queues AS q
LEFT JOIN LATERAL (
    SELECT CASE WHEN r.status = 'claimed' THEN coalesce(r.lease_until, r.next_attempt_at)
        ELSE r.next_attempt_at END AS due_at
    FROM herald.routes AS r
    WHERE r.channel = q.channel AND r.lane = q.lane AND r.priority = q.priority
        AND r.next_attempt_at IS NOT NULL
        AND r.finished_at IS NULL
        AND (r.status <> 'claimed' OR coalesce(r.lease_until, r.next_attempt_at) <= coalesce(sqlc.narg('now')::timestamptz, now()))
    ORDER BY r.next_attempt_at
    LIMIT 1
) AS f ON true
GROUP BY q.channel
ORDER BY q.channel;

-- name: RouteBacklogByStatus :many
-- The backlog per channel and status for `herald stats` (the backlog_view's
-- figures, with an injectable clock): one scan of routes_due_idx and the
-- heap (status is not in the index). A claimed route is due, and late,
-- from its lease's end: its next_attempt_at keeps its old due time (00019).
SELECT
    channel,
    status,
    count(*)::bigint AS routes,
    count(*) FILTER (WHERE due_at <= coalesce(sqlc.narg('now')::timestamptz, now()))::bigint AS due,
    coalesce(extract(epoch FROM greatest(
        coalesce(sqlc.narg('now')::timestamptz, now())
            - min(due_at) FILTER (WHERE due_at <= coalesce(sqlc.narg('now')::timestamptz, now())),
        interval '0')), 0)::float8 AS lag_seconds
FROM (
    SELECT channel, status,
        CASE WHEN status = 'claimed' THEN coalesce(lease_until, next_attempt_at) ELSE next_attempt_at END AS due_at
    FROM herald.routes
    WHERE next_attempt_at IS NOT NULL AND finished_at IS NULL
) AS r
GROUP BY channel, status
ORDER BY channel, status;

-- name: RouteThroughputByChannel :many
-- Routes published per channel since @since, and how long they took from
-- acceptance (mean and worst). There is no index on published_at (it would
-- cost every completion a write), so this scans routes: an operator's
-- occasional question, not a hot path.
SELECT
    r.channel,
    count(*)::bigint AS published,
    coalesce(avg(extract(epoch FROM r.published_at - rec.accepted_at)), 0)::float8 AS mean_latency_seconds,
    coalesce(max(extract(epoch FROM r.published_at - rec.accepted_at)), 0)::float8 AS max_latency_seconds
FROM herald.routes r
JOIN herald.records rec ON rec.notification_id = r.notification_id
WHERE r.published_at >= @since::timestamptz
GROUP BY r.channel
ORDER BY r.channel;

-- name: RouteBloatStats :one
-- What the bloat check decides on, from the statistics views only (no table
-- scan; pgstattuple is an extension that may not be installed): the routes
-- partition routes_live's (the due index's table, migration 00025) live
-- and dead tuples and size, and routes_due_idx's size and the
-- number of entries the planner believes it holds (reltuples, refreshed by
-- VACUUM and ANALYZE; -1 when never analysed).
SELECT
    coalesce(s.n_live_tup, 0)::bigint AS table_live_tuples,
    coalesce(s.n_dead_tup, 0)::bigint AS table_dead_tuples,
    pg_relation_size('herald.routes_live'::regclass)::bigint AS table_bytes,
    pg_relation_size('herald.routes_due_idx'::regclass)::bigint AS index_bytes,
    greatest(i.reltuples, 0)::bigint AS index_tuples
FROM pg_catalog.pg_class i
LEFT JOIN pg_catalog.pg_stat_user_tables s ON s.relid = 'herald.routes_live'::regclass
WHERE i.oid = 'herald.routes_due_idx'::regclass;

-- name: RouteDueIndexLeftoverList :many
-- The invalid indexes a failed REINDEX INDEX CONCURRENTLY of routes_due_idx
-- leaves behind (routes_due_idx_ccnew, _ccnew1, ...): Postgres keeps
-- updating them on every write and never drops them by itself.
SELECT c.relname::text AS index_name
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'herald.routes_live'::regclass
    AND NOT i.indisvalid
    AND starts_with(c.relname::text, 'routes_due_idx_ccnew')
ORDER BY 1;

-- ---------------------------------------------------------------------------
-- Vetter (internal/vet): routes a producer's login inserted (lane '!vet',
-- migration 00028), checked by the engine before any dispatcher sees them.
-- ---------------------------------------------------------------------------

-- name: RouteVetLock :many
-- Locks up to @max routes waiting in lane '!vet' (FOR UPDATE SKIP LOCKED:
-- vetters in several processes share them, and a dispatcher never claims
-- this lane), oldest first, each with what the check needs of its record
-- and campaign. The routes are locked first, on their own (a range of
-- routes_due_idx per channel: channel, then lane '!vet'), and each locked
-- route's record is read after by a probe of records_pkey, so that the
-- statement's cost follows the batch, not the lane's backlog. route_tid is
-- the locked row's tuple id, which stays its own until the transaction
-- that holds the lock changes it: RouteVetApply reaches each route by it.
-- campaign_stopped: the record names a campaign that was canceled or that
-- it never joined. Read in the transaction that applies the verdicts
-- (RouteVetApply).
WITH locked AS (
    SELECT r.notification_id, r.route_id, r.ctid::tid AS route_tid, r.channel, r.sms_encoding, r.sms_segments
    FROM herald.routes AS r
    WHERE r.channel = ANY ('{email,sms,webhook}'::text[])
        AND r.lane = '!vet'
        AND r.next_attempt_at IS NOT NULL
        AND r.finished_at IS NULL
        AND r.status = 'pending'
    ORDER BY r.next_attempt_at
    LIMIT @max::integer
    FOR UPDATE SKIP LOCKED
)
SELECT l.notification_id, l.route_id, l.route_tid, l.channel, l.sms_encoding, l.sms_segments,
    rec.producer, rec.notification_type, rec.idempotency_key, rec.payload_json,
    (rec.campaign IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM herald.campaigns AS camp
        WHERE camp.producer = rec.producer AND camp.campaign = rec.campaign AND camp.cancel_requested_at IS NULL
    ))::boolean AS campaign_stopped
FROM locked AS l
CROSS JOIN LATERAL (
    SELECT x.producer, x.notification_type, x.idempotency_key, x.payload_json, x.campaign
    FROM herald.records AS x
    WHERE x.notification_id = l.notification_id
    LIMIT 1
) AS rec;

-- name: RouteVetApply :one
-- Applies the vetter's verdicts, one per route locked by RouteVetLock:
-- 'pass' moves the route into its channel's queue (lane ''), with the SMS
-- encoding and segments the engine counted; 'hold' moves it to lane
-- '!held' until an operator releases or rejects its held intent; 'refuse'
-- makes it a dead letter with the class, message and hint given (and its
-- dead_letters row, in the same statement); 'cancel' cancels it. Returns
-- how many routes moved, and whether the dispatchers were woken.
WITH v AS (
    SELECT
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@route_ids::text[]) AS route_id,
        unnest(@route_tids::tid[]) AS route_tid,
        unnest(@verdicts::text[]) AS verdict,
        unnest(@classifications::text[]) AS classification,
        unnest(@messages::text[]) AS message,
        unnest(@hints::text[]) AS hint,
        unnest(@sms_encodings::text[]) AS sms_encoding,
        unnest(@sms_segments::smallint[]) AS sms_segments
),
moved AS (
    UPDATE herald.routes AS r
    SET lane = CASE WHEN v.verdict = 'hold' THEN '!held' ELSE '' END,
        status = CASE v.verdict WHEN 'refuse' THEN 'dead_letter' WHEN 'cancel' THEN 'canceled' ELSE r.status END,
        next_attempt_at = CASE WHEN v.verdict IN ('refuse', 'cancel') THEN NULL ELSE r.next_attempt_at END,
        dead_lettered_at = CASE WHEN v.verdict = 'refuse' THEN now() ELSE r.dead_lettered_at END,
        canceled_at = CASE WHEN v.verdict = 'cancel' THEN now() ELSE r.canceled_at END,
        -- A canceled route finishes and moves to its week's partition (00025).
        finished_at = CASE WHEN v.verdict = 'cancel' THEN now() END,
        last_error_classification = CASE WHEN v.verdict IN ('refuse', 'hold') THEN v.classification ELSE r.last_error_classification END,
        last_error_message = CASE WHEN v.verdict IN ('refuse', 'hold') THEN v.message ELSE r.last_error_message END,
        last_error_at = CASE WHEN v.verdict IN ('refuse', 'hold') THEN now() ELSE r.last_error_at END,
        sms_encoding = CASE WHEN v.sms_encoding <> '' THEN v.sms_encoding ELSE r.sms_encoding END,
        sms_segments = CASE WHEN v.sms_encoding <> '' THEN v.sms_segments ELSE r.sms_segments END,
        updated_at = now()
    FROM v
    -- One TID scan of the batch's tuple ids (the rows are locked by this
    -- transaction since RouteVetLock, so their tids hold; the ARRAY is
    -- computed once), whatever the planner believes of routes' size:
    -- joined on the keys alone, a plan made while the statistics said
    -- routes was nearly empty scanned all of routes once per route (5 s
    -- for 500 of 20,000). The keys are compared on the fetched row, as
    -- `IS TRUE` so that no index or merge join can use them.
    WHERE r.ctid = ANY (ARRAY(SELECT route_tid FROM v))
        AND r.ctid = v.route_tid
        AND (r.notification_id = v.notification_id) IS TRUE AND (r.route_id = v.route_id) IS TRUE
        AND r.lane = '!vet' AND r.finished_at IS NULL
    RETURNING r.notification_id, r.route_id, r.channel, r.recipient_ref, r.attempt_count, r.max_attempts, r.status, r.lane
),
dead AS (
    INSERT INTO herald.dead_letters (
        notification_id, route_id, channel, recipient_ref, final_attempt_count, max_attempts,
        failure_classification, failure_message, recovery_hint, created_at
    )
    SELECT m.notification_id, m.route_id, m.channel, m.recipient_ref, m.attempt_count, m.max_attempts,
        v.classification, v.message, v.hint, now()
    FROM moved AS m
    JOIN v ON v.notification_id = m.notification_id AND v.route_id = m.route_id
    WHERE m.status = 'dead_letter'
    ON CONFLICT (notification_id, route_id) DO NOTHING
    RETURNING 1
)
-- dead runs whether or not it is read (a data-modifying CTE always does).
-- Routes moved into their channel's queue wake the dispatchers
-- (herald_routes, payload '': every channel), at commit.
SELECT count(*)::bigint AS moved,
    (SELECT count(pg_notify(herald.notify_topic('herald_routes'), ''))
     FROM (SELECT 1 WHERE EXISTS (SELECT 1 FROM moved AS p WHERE p.lane = '' AND p.status = 'pending')) AS passed)::bigint AS hints
FROM moved;

-- ---------------------------------------------------------------------------
-- An operator's search by recipient (`herald find -recipient`, the
-- console's notification page).
-- ---------------------------------------------------------------------------

-- name: RouteListByRecipient :many
-- The newest @max routes to @recipient_ref (as stored: the normalized
-- address, or "user:<id>"), newest first, that sort before the cursor
-- (@before_at, @before_notification_id, @before_route_id): for the first
-- page, a time after every route's, '', ''. It reads
-- routes_recipient_idx (recipient_ref, created_at) in every partition.
-- The caller has it planned for the recipient it names (not a generic
-- plan): for a recipient of millions of routes, which the column's
-- statistics know, Postgres then merges the partitions' backward index
-- scans in created_at order and stops at @max, a page's cost whatever the
-- recipient's routes; for one of a few it reads them all and sorts. The
-- subquery orders by created_at alone, the index's order, and keeps the
-- routes tied with its last (WITH TIES: the routes of one accept share
-- created_at), so the outer sort on the whole key cuts the page where the
-- cursor resumes. The created_at bound is the row comparison's leading
-- column, written out so the index scan starts at the cursor. Each
-- route's record (producer, type) is read by primary key (the LATERAL
-- subquery with LIMIT keeps that a nested loop: a hash join read every
-- record for a hot recipient's page). A producer's
-- login sees its own routes only (row-level security), and uses the index
-- too: texteq is leakproof, so Postgres may check it ahead of the policy.
SELECT
    r.notification_id, r.route_id, r.channel, r.recipient_ref, r.status,
    r.attempt_count, r.max_attempts, r.delivery_status, r.created_at, r.updated_at,
    rec.producer, rec.notification_type
FROM (
    SELECT
        rt.notification_id, rt.route_id, rt.channel, rt.recipient_ref, rt.status,
        rt.attempt_count, rt.max_attempts, rt.delivery_status, rt.created_at, rt.updated_at
    FROM herald.routes rt
    WHERE rt.recipient_ref = @recipient_ref::text
        AND rt.created_at <= @before_at::timestamptz
        AND (rt.created_at, rt.notification_id, rt.route_id)
            < (@before_at::timestamptz, @before_notification_id::text, @before_route_id::text)
    ORDER BY rt.created_at DESC
    FETCH FIRST (@max::integer) ROWS WITH TIES
) AS r
JOIN LATERAL (
    SELECT rc.producer, rc.notification_type
    FROM herald.records rc
    WHERE rc.notification_id = r.notification_id
    LIMIT 1
) AS rec ON true
ORDER BY r.created_at DESC, r.notification_id DESC, r.route_id DESC
LIMIT @max::integer;

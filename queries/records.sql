-- Queries of herald.records: one row per accepted notification. Accept
-- writes it (with its routes), the client and `herald status` read it, and
-- retention deletes it (with its routes and dead letters).

-- name: RecordInsertMany :many
-- Accepts a batch of validated intents in ONE statement (one round trip):
-- the idempotency keys, then the records of exactly the keys inserted, then
-- their routes, and the dispatchers' wake-up hint. The primary key of
-- herald.idempotency_keys (producer, idempotency_key) is the idempotency
-- check (migration 00026): a key held already (committed, or committed by a
-- racing transaction this statement waited for) is skipped by ON CONFLICT,
-- and so are its record and routes, because the records are joined to the
-- keys this statement actually inserted and the routes to those records. A
-- key whose window is over (expires_at passed) is skipped too: the caller
-- releases it (herald.idempotency_keys_release) and inserts it again.
-- Returns one row per inserted record. A key that is not among them is held
-- already (committed before, or by a racing transaction this statement
-- waited for): the caller reads those with RecordGetByKeys, a second round
-- trip paid only by duplicates. Looking every key up here would cost a
-- descent of the unique index per intent on every batch, duplicates or not.
-- The producer/idempotency_key pairs must be distinct within one call, and
-- in (producer, idempotency_key) order, so that two accepts sharing keys
-- take their locks in the same order.
-- A route's notify_producer is set when its intent has a callback_url or
-- its producer a callback subscription: only those routes fire the status
-- callback trigger (migration 00012).
-- An element of the send_at / expires_at arrays that is the zero time
-- (0001-01-01 00:00:00 UTC, Go's time.Time{}) means "not set": sqlc types a
-- timestamptz[] parameter as []time.Time, which cannot carry a NULL element,
-- so nullif turns the zero time back into NULL.
WITH rec_in AS (
    -- Several set-returning functions in one select list are zipped row by
    -- row (Postgres 10+): the multi-argument unnest(a, b, ...) that sqlc
    -- cannot type. An optional array may be NULL when every intent of the
    -- batch leaves it at its default (request and trace ids, callback
    -- URLs, campaigns, metadata, send_at and expires_at, user ids, and
    -- the routes' SMS encoding and segments): unnest zips it as NULLs,
    -- which the inserts below read as the default, so that Postgres does
    -- not decode and unnest a thousand '' per batch.
    SELECT
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@notification_types::text[]) AS notification_type,
        unnest(@producers::text[]) AS producer,
        unnest(@audience_kinds::text[]) AS audience_kind,
        unnest(@recipient_user_ids::jsonb[]) AS recipient_user_ids,
        unnest(@payload_jsons::text[]) AS payload_json,
        unnest(@idempotency_keys::text[]) AS idempotency_key,
        unnest(@request_fingerprints::text[]) AS request_fingerprint,
        unnest(@request_ids::text[]) AS request_id,
        unnest(@trace_ids::text[]) AS trace_id,
        unnest(@occurred_ats::timestamptz[]) AS occurred_at,
        unnest(@channel_lists::text[]) AS channel_list,
        unnest(@priorities::smallint[]) AS priority,
        nullif(unnest(@send_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS send_at,
        nullif(unnest(@expires_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS expires_at,
        unnest(@callback_urls::text[]) AS callback_url,
        -- The intent's campaign ('' for none: NULL, and no entry in the
        -- partial records_campaign_idx).
        nullif(unnest(@campaigns::text[]), '') AS campaign,
        -- The intent's metadata as canonical JSON ('' for none: NULL, so
        -- that an intent without metadata stores nothing more).
        nullif(unnest(@metadatas::text[]), '')::jsonb AS metadata
),
keys_ins AS (
    -- The keys, in the caller's order, read from their arrays rather than
    -- from rec_in: a CTE that two others read is materialized (every
    -- intent's row, its payload too, written to a tuplestore and read
    -- back), one that only ins reads is inlined into it.
    INSERT INTO herald.idempotency_keys AS k (producer, idempotency_key, notification_id, expires_at)
    SELECT unnest(@producers::text[]), unnest(@idempotency_keys::text[]), unnest(@notification_ids::text[]),
        coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @idempotency_window_seconds::float8)
    ON CONFLICT (producer, idempotency_key) DO NOTHING
    RETURNING k.notification_id
),
subscribed AS (
    -- The batch's producers that subscribed to status callbacks: one probe
    -- of callback_subscriptions' primary key per distinct producer (a
    -- producer's login sees only its own row, which is all it submits for).
    SELECT s.producer
    FROM herald.callback_subscriptions s
    WHERE s.producer = ANY (@producers::text[])
),
ins AS (
    INSERT INTO herald.records (
        notification_id, notification_type, producer, audience_kind, recipient_user_ids,
        payload_json, idempotency_key, request_fingerprint, request_id, trace_id, occurred_at,
        accepted_at, updated_at, idempotency_expires_at, channels, priority, send_at, expires_at,
        callback_url, campaign, metadata
    )
    SELECT
        notification_id, notification_type, producer, audience_kind, coalesce(recipient_user_ids, '[]'),
        payload_json, idempotency_key, request_fingerprint, coalesce(request_id, ''), coalesce(trace_id, ''),
        occurred_at,
        coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @idempotency_window_seconds::float8),
        string_to_array(channel_list, ','),
        priority,
        send_at,
        expires_at,
        coalesce(callback_url, ''),
        campaign,
        metadata
    FROM rec_in
    WHERE notification_id IN (SELECT notification_id FROM keys_ins)
    RETURNING notification_id, producer, idempotency_key, request_fingerprint, accepted_at, callback_url
),
routes_ins AS (
    INSERT INTO herald.routes (
        notification_id, route_id, channel, recipient_ref, status, max_attempts, next_attempt_at,
        priority, expires_at, sms_encoding, sms_segments, created_at, updated_at, notify_producer, lane
    )
    SELECT
        r.notification_id, r.route_id, r.channel, r.recipient_ref, 'pending', r.max_attempts,
        -- Due now, or at send_at (greatest ignores NULLs).
        greatest(coalesce(sqlc.narg('now')::timestamptz, now()), r.send_at),
        r.priority, r.expires_at, coalesce(r.sms_encoding, ''), coalesce(r.sms_segments, 0),
        coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now()),
        -- Watched for status callbacks (migration 00012's trigger) only if
        -- the producer asked, per intent or by subscription.
        ins.callback_url <> '' OR ins.producer IN (SELECT producer FROM subscribed),
        -- The channel's queue for the engine's own login (the owner, to
        -- whom row-level security does not apply); lane '!vet', where the
        -- engine's vetter checks them first, for any other login
        -- (migration 00028: its policy admits nothing else). An
        -- uncorrelated sub-select: computed once per statement.
        (SELECT CASE WHEN row_security_active('herald.routes') THEN '!vet' ELSE '' END)
    FROM (
        SELECT
            unnest(@route_notification_ids::text[]) AS notification_id,
            unnest(@route_ids::text[]) AS route_id,
            unnest(@route_channels::text[]) AS channel,
            unnest(@route_recipient_refs::text[]) AS recipient_ref,
            unnest(@route_max_attempts::integer[]) AS max_attempts,
            unnest(@route_priorities::smallint[]) AS priority,
            nullif(unnest(@route_send_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS send_at,
            nullif(unnest(@route_expires_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS expires_at,
            unnest(@route_sms_encodings::text[]) AS sms_encoding,
            unnest(@route_sms_segments::smallint[]) AS sms_segments
    ) AS r
    JOIN ins USING (notification_id)
    RETURNING 1
),
wake AS (
    -- The dispatchers' wake-up hint on their NOTIFY topic (through
    -- herald.routes_wake, which alone knows its name), sent only when the
    -- caller asks (the leading edge of its debounce window; NULL means no
    -- hint). Postgres delivers it at commit, so it rides the
    -- caller's transaction, and only if a record was inserted (a batch of
    -- duplicates wakes nobody). A SELECT CTE runs only if referenced: the
    -- final SELECT joins it. Routes a producer's login wrote wait for the
    -- vetter (lane '!vet'), so their hint goes to the vetter's topic.
    SELECT count(herald.routes_wake(sqlc.narg('hint_payload')::text, row_security_active('herald.routes'))) AS hints
    FROM (
        SELECT 1 WHERE sqlc.narg('hint_payload')::text IS NOT NULL AND EXISTS (SELECT 1 FROM ins)
    ) AS asked
)
SELECT ins.notification_id, ins.producer, ins.idempotency_key, ins.request_fingerprint, ins.accepted_at
FROM ins CROSS JOIN wake;

-- name: RecordInsertManyFresh :many
-- RecordInsertMany for keys the caller expects to be new: the same
-- statement, arguments and result, without ON CONFLICT. An ON CONFLICT
-- insert is a speculative insertion: a descent of the unique index before
-- each row, a heap tuple marked speculative, and a confirmation (a buffer
-- lock and a WAL record) after its index entries; this statement writes
-- each key outright, the primary key checking it as the row's index entry
-- goes in, as in any insert. A key held already, expired or not (or that a
-- racing transaction commits), fails the whole statement with a
-- unique_violation on idempotency_keys_pkey, and nothing is written: the
-- caller then runs RecordInsertMany. So every record's key is the
-- statement's own, and the records are inserted from the batch itself,
-- not joined to the keys inserted. Only a caller whose statement commits
-- on its own may use it (internal/accept decides), since a failed
-- statement aborts the transaction it is in. RecordInsertMany's comments
-- say what each part does; a test in internal/store keeps the two texts
-- the same but for ON CONFLICT and that join.
WITH rec_in AS (
    SELECT
        unnest(@notification_ids::text[]) AS notification_id,
        unnest(@notification_types::text[]) AS notification_type,
        unnest(@producers::text[]) AS producer,
        unnest(@audience_kinds::text[]) AS audience_kind,
        unnest(@recipient_user_ids::jsonb[]) AS recipient_user_ids,
        unnest(@payload_jsons::text[]) AS payload_json,
        unnest(@idempotency_keys::text[]) AS idempotency_key,
        unnest(@request_fingerprints::text[]) AS request_fingerprint,
        unnest(@request_ids::text[]) AS request_id,
        unnest(@trace_ids::text[]) AS trace_id,
        unnest(@occurred_ats::timestamptz[]) AS occurred_at,
        unnest(@channel_lists::text[]) AS channel_list,
        unnest(@priorities::smallint[]) AS priority,
        nullif(unnest(@send_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS send_at,
        nullif(unnest(@expires_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS expires_at,
        unnest(@callback_urls::text[]) AS callback_url,
        nullif(unnest(@campaigns::text[]), '') AS campaign,
        -- The intent's metadata as canonical JSON ('' for none: NULL, so
        -- that an intent without metadata stores nothing more).
        nullif(unnest(@metadatas::text[]), '')::jsonb AS metadata
),
keys_ins AS (
    INSERT INTO herald.idempotency_keys AS k (producer, idempotency_key, notification_id, expires_at)
    SELECT unnest(@producers::text[]), unnest(@idempotency_keys::text[]), unnest(@notification_ids::text[]),
        coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @idempotency_window_seconds::float8)
),
subscribed AS (
    SELECT s.producer
    FROM herald.callback_subscriptions s
    WHERE s.producer = ANY (@producers::text[])
),
ins AS (
    INSERT INTO herald.records (
        notification_id, notification_type, producer, audience_kind, recipient_user_ids,
        payload_json, idempotency_key, request_fingerprint, request_id, trace_id, occurred_at,
        accepted_at, updated_at, idempotency_expires_at, channels, priority, send_at, expires_at,
        callback_url, campaign, metadata
    )
    SELECT
        notification_id, notification_type, producer, audience_kind, coalesce(recipient_user_ids, '[]'),
        payload_json, idempotency_key, request_fingerprint, coalesce(request_id, ''), coalesce(trace_id, ''),
        occurred_at,
        coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @idempotency_window_seconds::float8),
        string_to_array(channel_list, ','),
        priority,
        send_at,
        expires_at,
        coalesce(callback_url, ''),
        campaign,
        metadata
    FROM rec_in
    RETURNING notification_id, producer, idempotency_key, request_fingerprint, accepted_at, callback_url
),
routes_ins AS (
    INSERT INTO herald.routes (
        notification_id, route_id, channel, recipient_ref, status, max_attempts, next_attempt_at,
        priority, expires_at, sms_encoding, sms_segments, created_at, updated_at, notify_producer, lane
    )
    SELECT
        r.notification_id, r.route_id, r.channel, r.recipient_ref, 'pending', r.max_attempts,
        greatest(coalesce(sqlc.narg('now')::timestamptz, now()), r.send_at),
        r.priority, r.expires_at, coalesce(r.sms_encoding, ''), coalesce(r.sms_segments, 0),
        coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now()),
        ins.callback_url <> '' OR ins.producer IN (SELECT producer FROM subscribed),
        (SELECT CASE WHEN row_security_active('herald.routes') THEN '!vet' ELSE '' END)
    FROM (
        SELECT
            unnest(@route_notification_ids::text[]) AS notification_id,
            unnest(@route_ids::text[]) AS route_id,
            unnest(@route_channels::text[]) AS channel,
            unnest(@route_recipient_refs::text[]) AS recipient_ref,
            unnest(@route_max_attempts::integer[]) AS max_attempts,
            unnest(@route_priorities::smallint[]) AS priority,
            nullif(unnest(@route_send_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS send_at,
            nullif(unnest(@route_expires_ats::timestamptz[]), '0001-01-01 00:00:00+00') AS expires_at,
            unnest(@route_sms_encodings::text[]) AS sms_encoding,
            unnest(@route_sms_segments::smallint[]) AS sms_segments
    ) AS r
    JOIN ins USING (notification_id)
    RETURNING 1
),
wake AS (
    SELECT count(herald.routes_wake(sqlc.narg('hint_payload')::text, row_security_active('herald.routes'))) AS hints
    FROM (
        SELECT 1 WHERE sqlc.narg('hint_payload')::text IS NOT NULL AND EXISTS (SELECT 1 FROM ins)
    ) AS asked
)
SELECT ins.notification_id, ins.producer, ins.idempotency_key, ins.request_fingerprint, ins.accepted_at
FROM ins CROSS JOIN wake;

-- name: RecordGetByKeys :many
-- Who holds the idempotency keys (producer, idempotency_key) given: the
-- notification named by each key's row (herald.idempotency_keys), whether
-- the key's window ended at or before @now (NULL: now()), and that
-- notification's fingerprint and acceptance, from its record. A key held
-- within its window is what a duplicate submit returns or an idempotency
-- conflict names; an expired one is free, and the caller releases it. A
-- record must be the key's producer's, so a key row pointing elsewhere
-- finds none (found is false).
SELECT k.producer, k.idempotency_key, k.notification_id,
    (k.expires_at <= coalesce(sqlc.narg('now')::timestamptz, now()))::boolean AS expired,
    (r.notification_id IS NOT NULL)::boolean AS found,
    coalesce(r.request_fingerprint, '')::text AS request_fingerprint,
    coalesce(r.accepted_at, k.expires_at)::timestamptz AS accepted_at
FROM (
    SELECT unnest(@producers::text[]) AS producer, unnest(@idempotency_keys::text[]) AS idempotency_key
) AS q
JOIN herald.idempotency_keys k ON k.producer = q.producer AND k.idempotency_key = q.idempotency_key
LEFT JOIN herald.records r ON r.notification_id = k.notification_id AND r.producer = k.producer;

-- name: IdempotencyKeysRelease :one
-- Releases the expired keys the caller met (see
-- herald.idempotency_keys_release): those whose window ended at or before
-- @now (NULL: now()) and that @notification_ids still hold. Returns how
-- many it released.
SELECT herald.idempotency_keys_release(@producers::text[], @idempotency_keys::text[],
    @notification_ids::text[], sqlc.narg('now')::timestamptz)::integer AS released;

-- name: RecordGet :one
-- One record by id, for Get, Cancel and `herald status`.
SELECT *
FROM herald.records
WHERE notification_id = @notification_id;

-- name: RecordTimeline :many
-- One notification's timeline, for `herald status` (schema function
-- herald.notification_timeline, which reads its record, routes, dead letters
-- and audit rows).
SELECT
    t.at::timestamptz AS at,
    t.route_id::text AS route_id,
    t.channel::text AS channel,
    t.event::text AS event,
    t.attempt::integer AS attempt,
    t.detail::text AS detail
FROM herald.notification_timeline(@notification_id::text) AS t;

-- name: RecordCallbackList :many
-- The status callbacks herald created about one notification's routes, for
-- `herald status` (schema function herald.notification_callbacks, which
-- finds them through records_callback_of_idx, migration 00026): oldest first, with the callback route's next attempt (NULL
-- once final).
SELECT
    c.route_id::text AS route_id,
    c.channel::text AS channel,
    c.event::text AS event,
    c.callback_id::text AS callback_id,
    c.callback_route_id::text AS callback_route_id,
    c.url::text AS url,
    c.status::text AS status,
    c.attempts::integer AS attempts,
    c.max_attempts::integer AS max_attempts,
    cr.next_attempt_at,
    c.error_classification::text AS error_classification,
    c.error_message::text AS error_message,
    c.created_at::timestamptz AS created_at,
    c.updated_at::timestamptz AS updated_at
FROM herald.notification_callbacks(@notification_id::text) AS c
-- The function's columns are not known to sqlc; the callback route's
-- next_attempt_at, which may be NULL, is read from the table (its primary
-- key) so that it stays nullable here.
JOIN herald.routes cr ON cr.notification_id = c.callback_id AND cr.route_id = c.callback_route_id
ORDER BY c.created_at, c.route_id, c.callback_id;

-- name: RecordCallbackStatsSince :many
-- Per producer, the status callbacks herald created since @since (their
-- records, channel callback, each with one route) by where they stand now:
-- published (the producer was told), failed (not yet: retrying),
-- dead-lettered (herald gave up; replayable) and pending (not tried yet, or
-- in flight); created counts them all (a canceled one too). For `herald
-- stats`: it reads the window's records through records_pkey, from the ids
-- of @since's millisecond (a callback's id and accepted_at are made from
-- the same clock reading, migration 00012), and each callback's route by
-- its primary key.
SELECT
    rec.producer,
    count(*)::bigint AS created,
    count(*) FILTER (WHERE r.status = 'published')::bigint AS published,
    count(*) FILTER (WHERE r.status = 'failed')::bigint AS failed,
    count(*) FILTER (WHERE r.status = 'dead_letter')::bigint AS dead_lettered,
    count(*) FILTER (WHERE r.status IN ('pending', 'claimed'))::bigint AS pending
FROM herald.records rec
JOIN herald.routes r ON r.notification_id = rec.notification_id
WHERE rec.notification_id >= herald.id_floor(@since::timestamptz)
    AND rec.accepted_at >= @since::timestamptz
    AND 'callback' = ANY (rec.channels)
GROUP BY rec.producer
ORDER BY rec.producer;

-- ---------------------------------------------------------------------------
-- Retention (internal/maintenance). Every statement here touches a bounded
-- number of rows: no job holds a long transaction.
-- ---------------------------------------------------------------------------

-- name: RecordDeleteFinished :one
-- Retention of finished notifications. Deletes up to @batch_size finished
-- notifications: every route terminal (published, skipped or canceled; none
-- still pending, claimed or failed, and none dead-lettered: dead letters
-- wait for an operator or for dead-letter retention), accepted before @accepted_before, no route changed since
-- @finished_before, and the idempotency window over, so a key is never freed
-- early (DESIGN.md invariant 3). The routes go in the same statement, and
-- any dead letter of theirs (none, unless a route finished with its dead
-- letter left behind): neither routes nor dead letters have a foreign key
-- that would do it (migrations 00005, 00021). No route can leave a terminal state the
-- candidates are in (replay only moves dead letters), so the checks cannot
-- be outrun.
--
-- A batch reads the next @batch_size records of records_pkey after the
-- cursor @after_id, exclusive, oldest first, below @below_id: a
-- notification id is a UUIDv7, which sorts by the millisecond it was made
-- (migration 00024). @below_id is the lower bound of the weeks not retired
-- yet (migration 00027), whose records go with their week, whole: the walk
-- reads only the kept partitions, records_before and records_default.
-- Those of them made before @accepted_before's millisecond
-- (herald.id_floor) are the batch's candidates, deleted if they qualify
-- (accepted_at is compared as well). The range is open at its top so that
-- a generic plan, which cannot know how many records lie between the
-- cursor and the cut-off, still reads it in order up to the LIMIT: with
-- both ends as parameters, Postgres guessed a sliver of the table and
-- chose to fetch the whole range and sort it, every batch. The caller
-- passes the cursor this statement returns (the last candidate's id) to the
-- next batch, so records that must stay (a dead letter, a pending route)
-- are read once per run, not once per batch. Start with the empty id.
--
-- A candidate is read again, checked and deleted by its tuple id (ctid),
-- one heap fetch each, not by a descent of records_pkey each (19 buffer
-- hits per record deleted against 25): no statement updates a
-- record, so the version the walk read is the one to delete, and the
-- statement's snapshot keeps its tid from being reused meanwhile. Were a
-- record updated all the same, the delete would find the newer version
-- and leave it: the record would be kept, and its routes with it, since
-- they go by the records the delete returned. The records are not locked
-- before the delete (FOR UPDATE wrote a lock to each row and its WAL, then
-- the delete wrote the row again: 0.87x the WAL without it): retention
-- runs on maintenance's elected leader, and a second run at the same time
-- waits for the first's deletes and finds their rows gone.
-- Returns the candidates (fewer than @batch_size: the run is over, the
-- batch having reached the cut-off or the newest record), the records
-- deleted, and the cursor to go on from: the last candidate's id, or the
-- one given when there was none.
WITH candidates AS (
    SELECT c.notification_id, c.tid
    FROM (
        SELECT r.notification_id, r.ctid::tid AS tid
        FROM herald.records r
        WHERE r.notification_id > @after_id::text
            AND r.notification_id < @below_id::text
        ORDER BY r.notification_id
        LIMIT @batch_size::integer
    ) AS c
    WHERE c.notification_id < herald.id_floor(@accepted_before::timestamptz)
),
unfinished AS (
    -- The candidates with a route that is not finished long enough: in
    -- routes_live, not terminal or changed since @finished_before; or in a
    -- finished week's partition at all, since the week is dropped whole
    -- (routes_weeks_detach) once it ended before the cut-off, and the
    -- record goes after its routes. From one range scan of each
    -- partition's primary key: a batch's candidates are one run of
    -- records_pkey, so their routes (keyed by their record's id first)
    -- are one run of each. A probe per record cost a descent each. Not
    -- DISTINCT: the hashed NOT IN below takes duplicates as they come,
    -- where DISTINCT merged the partitions' ranges in order.
    SELECT rt.notification_id
    FROM herald.routes rt
    WHERE rt.notification_id >= (SELECT min(notification_id) FROM candidates)
        AND rt.notification_id <= (SELECT max(notification_id) FROM candidates)
        AND (rt.finished_at IS NOT NULL
            OR rt.status NOT IN ('published', 'skipped', 'canceled')
            OR rt.updated_at >= @finished_before::timestamptz)
),
deleted AS (
    -- A tuple id names a row within its partition only: the id, looked up
    -- in a hash, names the one the walk read (ids are unique across
    -- partitions).
    DELETE FROM herald.records r
    WHERE r.ctid = ANY (ARRAY(SELECT tid FROM candidates))
        AND r.notification_id < @below_id::text
        AND (r.notification_id IN (SELECT notification_id FROM candidates)) IS TRUE
        AND r.accepted_at < @accepted_before::timestamptz
        AND r.idempotency_expires_at <= coalesce(sqlc.narg('now')::timestamptz, now())
        AND r.notification_id NOT IN (SELECT notification_id FROM unfinished)
    RETURNING r.notification_id
),
routes_deleted AS (
    -- The routes of the records deleted, by id, from one range scan of
    -- routes_pkey (as unfinished's). The ids are looked up in a hash: `IN
    -- (SELECT ...) IS TRUE` keeps the planner from turning them into a
    -- join (a descent of routes_pkey each), and a hashed SubPlan finds a
    -- row's id at once, where `= ANY (ARRAY(...))` searched the array
    -- (quadratic in the batch). By id, not by tuple id: a route changed
    -- since this statement's snapshot (a late receipt) is still deleted,
    -- its newest version rechecked. A data-modifying CTE runs whether or
    -- not it is read.
    -- Only routes_live holds any (routes from before migration 00025):
    -- a record with a finished week's route was not deleted.
    DELETE FROM herald.routes rt
    WHERE rt.notification_id >= (SELECT min(notification_id) FROM deleted)
        AND rt.notification_id <= (SELECT max(notification_id) FROM deleted)
        AND rt.finished_at IS NULL
        AND (rt.notification_id IN (SELECT notification_id FROM deleted)) IS TRUE
),
dead_letters_deleted AS (
    -- One scan of dead_letters' primary key for the batch: what the
    -- foreign key's cascade did with a query per route (migration 00021).
    DELETE FROM herald.dead_letters d
    WHERE d.notification_id = ANY (ARRAY(SELECT notification_id FROM deleted))
)
SELECT
    (SELECT count(*) FROM candidates)::bigint AS candidates,
    (SELECT count(*) FROM deleted)::bigint AS deleted,
    coalesce((SELECT max(notification_id) FROM candidates), @after_id::text)::text AS last_notification_id;

-- name: RecordDeleteDeadLettered :one
-- Dead-letter retention (off unless configured): deletes up to @batch_size
-- notifications that have at least one dead-lettered route, all of whose
-- routes are terminal (a replayed route is pending again and keeps its
-- record), all of whose dead letters are older than @dead_before, and whose
-- idempotency window is over. The record goes whole, with its routes and dead
-- letters, so no orphan is left for the operator views. The cursor, the
-- result, the reads by tuple id and the walk below @below_id (the weeks
-- not retired yet: a dead letter's record is kept from its week when the
-- week retires, and deleted from there) are RecordDeleteFinished's.
WITH candidates AS (
    SELECT c.notification_id, c.tid
    FROM (
        SELECT r.notification_id, r.ctid::tid AS tid
        FROM herald.records r
        WHERE r.notification_id > @after_id::text
            AND r.notification_id < @below_id::text
        ORDER BY r.notification_id
        LIMIT @batch_size::integer
    ) AS c
    WHERE c.notification_id < herald.id_floor(@dead_before::timestamptz)
),
unfinished AS (
    -- The candidates with a route not terminal, changed since
    -- @dead_before, or finished (in a week's partition, which goes first),
    -- from one range scan of each partition's primary key, as
    -- RecordDeleteFinished's: a probe per record over every partition
    -- costed a generic plan's whole read of a partition empty when it was
    -- planned (a week made ahead), under the engine pool's
    -- enable_seqscan off.
    SELECT rt.notification_id
    FROM herald.routes rt
    WHERE rt.notification_id >= (SELECT min(notification_id) FROM candidates)
        AND rt.notification_id <= (SELECT max(notification_id) FROM candidates)
        AND (rt.finished_at IS NOT NULL
            OR rt.status NOT IN ('published', 'skipped', 'canceled', 'dead_letter')
            OR rt.updated_at >= @dead_before::timestamptz)
),
doomed AS (
    -- By tuple id, and by id: a tuple id names a row within its partition
    -- only (migration 00027).
    SELECT r.notification_id, r.ctid::tid AS tid
    FROM herald.records r
    WHERE r.ctid = ANY (ARRAY(SELECT tid FROM candidates))
        AND r.notification_id < @below_id::text
        AND (r.notification_id IN (SELECT notification_id FROM candidates)) IS TRUE
        AND r.accepted_at < @dead_before::timestamptz
        AND r.idempotency_expires_at <= coalesce(sqlc.narg('now')::timestamptz, now())
        AND EXISTS (
            SELECT 1
            FROM herald.dead_letters d
            WHERE d.notification_id = r.notification_id
        )
        AND r.notification_id NOT IN (SELECT notification_id FROM unfinished)
        AND NOT EXISTS (
            SELECT 1
            FROM herald.dead_letters d
            WHERE d.notification_id = r.notification_id
                AND d.created_at >= @dead_before::timestamptz
        )
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
        AND rt.finished_at IS NULL
    FOR UPDATE OF rt SKIP LOCKED
),
deleted AS (
    DELETE FROM herald.records r
    WHERE r.ctid = ANY (ARRAY(SELECT tid FROM doomed))
        AND r.notification_id < @below_id::text
        AND (r.notification_id IN (SELECT notification_id FROM doomed)) IS TRUE
        AND (SELECT count(*) FROM locked l WHERE l.notification_id = r.notification_id)
            = (SELECT count(*) FROM herald.routes rt WHERE rt.notification_id = r.notification_id)
    RETURNING r.notification_id
),
routes_deleted AS (
    -- The routes of exactly the records deleted (all locked above).
    DELETE FROM herald.routes rt
    WHERE rt.notification_id = ANY (ARRAY(SELECT notification_id FROM deleted))
        AND rt.finished_at IS NULL
),
dead_letters_deleted AS (
    -- And their dead letters: no foreign key cascades (migration 00021).
    DELETE FROM herald.dead_letters d
    WHERE d.notification_id = ANY (ARRAY(SELECT notification_id FROM deleted))
)
SELECT
    (SELECT count(*) FROM candidates)::bigint AS candidates,
    (SELECT count(*) FROM deleted)::bigint AS deleted,
    coalesce((SELECT max(notification_id) FROM candidates), @after_id::text)::text AS last_notification_id;

-- name: RecordListPage :many
-- One page of the caller's notifications, newest first, for the HTTP API's
-- list: row-level security keeps to the acting producer's records. It walks
-- records_pkey down from the cursor @before_notification_id, exclusive
-- (NULL: from the newest, the Max UUID of RFC 9562 standing above every
-- id): a notification id is a UUIDv7, so id order is the order of
-- acceptance, to the millisecond (migration 00024). The caller passes the
-- last row's id as the next page's cursor.
SELECT notification_id, notification_type, producer, idempotency_key, channels, priority,
    request_id, accepted_at, send_at, expires_at
FROM herald.records
WHERE notification_id < coalesce(sqlc.narg('before_notification_id')::text, 'ffffffff-ffff-ffff-ffff-ffffffffffff')
ORDER BY notification_id DESC
LIMIT @page_size::integer;

-- name: RecordListFilteredPage :many
-- One page of the caller's notifications for the HTTP API's list, newest
-- first, with its filters; row-level security keeps to the acting
-- producer's records. `scanned` walks down from the cursor
-- @before_notification_id (exclusive; NULL: from the newest) and from
-- @until (exclusive) to @since (inclusive), each time bounded by the ids of
-- its millisecond (herald.id_floor), at most @scan_limit records: on
-- records_pkey, or with @campaign on records_campaign_idx (producer,
-- campaign, id). Of the two branches only the one whose one-time filter on
-- @campaign holds runs, so one prepared plan serves both. `checked` tests
-- what no index holds: accepted_at itself against @since and @until, one
-- of the intent's channels is @channel, one of its routes is in @status (a
-- probe of each routes partition's primary key). The answer is the
-- records that match, and the last one examined whatever it is, each with
-- the count examined: when a page is not full and @scan_limit records were
-- examined, the caller pages on from the last one. However rare a filter's
-- matches, a request reads at most @scan_limit records.
WITH scanned AS MATERIALIZED (
    (SELECT r.notification_id, r.notification_type, r.producer, r.idempotency_key, r.channels, r.priority,
        r.request_id, r.accepted_at, r.send_at, r.expires_at
    FROM herald.records r
    WHERE sqlc.narg('campaign')::text IS NULL
        AND r.notification_id < least(
            coalesce(sqlc.narg('before_notification_id')::text, 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
            coalesce(herald.id_floor(sqlc.narg('until')::timestamptz), 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
        AND r.notification_id >= coalesce(herald.id_floor(sqlc.narg('since')::timestamptz), '')
    ORDER BY r.notification_id DESC
    LIMIT @scan_limit::integer)
    UNION ALL
    (SELECT r.notification_id, r.notification_type, r.producer, r.idempotency_key, r.channels, r.priority,
        r.request_id, r.accepted_at, r.send_at, r.expires_at
    FROM herald.records r
    WHERE r.producer = (SELECT herald.acting_producer()) AND r.campaign = sqlc.narg('campaign')::text
        AND r.notification_id < least(
            coalesce(sqlc.narg('before_notification_id')::text, 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
            coalesce(herald.id_floor(sqlc.narg('until')::timestamptz), 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
        AND r.notification_id >= coalesce(herald.id_floor(sqlc.narg('since')::timestamptz), '')
    ORDER BY r.notification_id DESC
    LIMIT @scan_limit::integer)
), checked AS (
    SELECT s.*, (
        (sqlc.narg('since')::timestamptz IS NULL OR s.accepted_at >= sqlc.narg('since')::timestamptz)
        AND (sqlc.narg('until')::timestamptz IS NULL OR s.accepted_at < sqlc.narg('until')::timestamptz)
        AND (sqlc.narg('channel')::text IS NULL OR sqlc.narg('channel')::text = ANY (s.channels))
        AND (sqlc.narg('status')::text IS NULL OR EXISTS (
            SELECT FROM herald.routes rt
            WHERE rt.notification_id = s.notification_id AND rt.status = sqlc.narg('status')::text))
    )::boolean AS matches
    FROM scanned s
)
SELECT c.notification_id, c.notification_type, c.producer, c.idempotency_key, c.channels, c.priority,
    c.request_id, c.accepted_at, c.send_at, c.expires_at, c.matches,
    (SELECT count(*) FROM scanned)::integer AS scanned
FROM checked c
WHERE c.matches OR c.notification_id = (SELECT min(s.notification_id) FROM scanned s)
ORDER BY c.notification_id DESC
LIMIT @row_limit::integer;

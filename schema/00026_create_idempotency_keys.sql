-- +goose Up
-- Idempotency keys get a table of their own. The UNIQUE
-- (producer, idempotency_key) check moves from records to
-- herald.idempotency_keys, whose primary key it is: still one constraint,
-- checked by every door (the Go client, the SQL intake through accept,
-- the HTTP API, the callback trigger), so the same key is one notification
-- however many callers race. Records no longer carry it, so they can be
-- stored and dropped by the week they were accepted in (migration 00027)
-- while the key check stays whole across every week.
--
-- A key row says which notification holds the key and until when
-- (expires_at: the record's idempotency_expires_at, accept time plus the
-- caller's window). An accept inserts the key first (ON CONFLICT DO
-- NOTHING) and stores the record only for a key it got. A key whose window
-- is over is free: an accept that meets one releases it
-- (herald.idempotency_keys_release, which deletes it if it is still the
-- same expired key) and inserts it again for the new notification.
-- Maintenance deletes expired keys by sweeping the table's blocks in order
-- (no index of their expiry: the sweep reads each block once per pass).
--
-- The rows are narrow, in insertion order, and only as many as the
-- notifications accepted within the window (plus a sweep's period); one
-- index, the primary key. An accept writes one more heap tuple per record
-- than before and the same index entries (the key's entry moves from
-- records' UNIQUE index to this table's primary key).
CREATE TABLE herald.idempotency_keys (
    producer text NOT NULL,
    idempotency_key text NOT NULL,
    notification_id text NOT NULL,
    expires_at timestamptz NOT NULL,
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (producer, idempotency_key)
);
COMMENT ON TABLE herald.idempotency_keys IS
    'One row per idempotency key held: the notification that holds it and until when. Its primary key is the idempotency check of every door.';
COMMENT ON COLUMN herald.idempotency_keys.expires_at IS
    'When the key''s window ends (the record''s idempotency_expires_at): after it the key is free, and maintenance deletes the row.';

INSERT INTO herald.idempotency_keys (producer, idempotency_key, notification_id, expires_at)
SELECT producer, idempotency_key, notification_id, idempotency_expires_at
FROM herald.records;

ALTER TABLE herald.records DROP CONSTRAINT records_idempotency_unique;

-- A status callback's record names the notification it is about:
-- callback_of, with an index of the callbacks alone. The timeline's
-- callbacks and the callback channel's order (no callback before the
-- earlier ones of its route are final) found them by records' UNIQUE
-- (producer, idempotency_key) index, gone above; an accept pays nothing
-- for this one (NULL is not in it).
ALTER TABLE herald.records ADD COLUMN callback_of text;
COMMENT ON COLUMN herald.records.callback_of IS
    'For a status callback (channels {callback}): the notification whose route it is about. NULL otherwise.';
UPDATE herald.records SET callback_of = split_part(idempotency_key, ':', 2)
WHERE 'callback' = ANY (channels) AND idempotency_key LIKE 'callback:%';
CREATE INDEX records_callback_of_idx ON herald.records (callback_of) WHERE callback_of IS NOT NULL;
-- A producer's own records are never callbacks.
ALTER POLICY producer_insert ON herald.records
    WITH CHECK (producer = (SELECT herald.acting_producer()) AND payload_json::json IS NOT NULL
        AND NOT ('callback' = ANY (channels)) AND callback_of IS NULL);

-- The timeline's callbacks, through callback_of.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_callbacks(id text)
RETURNS TABLE (
    route_id text,
    channel text,
    event text,
    callback_id text,
    callback_route_id text,
    url text,
    status text,
    attempts integer,
    max_attempts integer,
    next_attempt_at timestamptz,
    error_classification text,
    error_message text,
    created_at timestamptz,
    updated_at timestamptz
)
LANGUAGE sql STABLE
AS $$
    SELECT r.route_id, r.channel, ev.event, cb.notification_id, cr.route_id, cr.recipient_ref, cr.status,
        cr.attempt_count, cr.max_attempts,
        CASE WHEN cr.status = 'claimed' THEN coalesce(cr.lease_until, cr.next_attempt_at) ELSE cr.next_attempt_at END, cr.last_error_classification,
        cr.last_error_message, cb.accepted_at, cr.updated_at
    FROM herald.records rec
    JOIN herald.routes r ON r.notification_id = rec.notification_id AND r.notify_producer
    -- 00012's events (routes_callback_enqueue, callback_subscriptions_events_check).
    CROSS JOIN unnest(ARRAY['published', 'delivered', 'undelivered', 'dead_lettered', 'skipped', 'canceled', 'expired'])
        AS ev(event)
    JOIN herald.records cb ON cb.callback_of = r.notification_id AND cb.producer = rec.producer
        AND cb.idempotency_key = 'callback:' || r.notification_id || ':' || r.route_id || ':' || ev.event
    JOIN herald.routes cr ON cr.notification_id = cb.notification_id
    WHERE rec.notification_id = notification_callbacks.id
    ORDER BY cb.accepted_at, r.route_id, cb.notification_id;
$$;
-- +goose StatementEnd

-- Producers insert their own keys (the Go client's SubmitTx runs as the
-- producer's login) and read them; they hold no UPDATE or DELETE, so they
-- cannot lock a key row either (every row lock needs UPDATE), and nothing
-- they hold blocks the sweep. Staff read.
GRANT SELECT, INSERT ON herald.idempotency_keys TO herald_producer;
GRANT SELECT ON herald.idempotency_keys TO herald_operator, herald_auditor;
ALTER TABLE herald.idempotency_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_read ON herald.idempotency_keys FOR SELECT TO herald_producer
    USING (producer = (SELECT herald.acting_producer()));
CREATE POLICY producer_insert ON herald.idempotency_keys FOR INSERT TO herald_producer
    WITH CHECK (producer = (SELECT herald.acting_producer()));
CREATE POLICY staff_read ON herald.idempotency_keys FOR SELECT TO herald_operator, herald_auditor USING (true);

-- Releases the keys given (producers[i], idempotency_keys[i]) whose window
-- ended at or before `at` (now when NULL) and that notification_ids[i]
-- still holds, and returns how many it released: what an accept calls for
-- the expired keys its insert met, before inserting them again. The
-- engine releases any producer's keys; a producer login (or the HTTP
-- API's, for its key's producer) only its own, the others are left as
-- they are. A key another accept has taken over since (a new holder) is
-- left too.
-- +goose StatementBegin
CREATE FUNCTION herald.idempotency_keys_release(producers text[], idempotency_keys text[], notification_ids text[],
    at timestamptz DEFAULT NULL)
RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM herald.idempotency_keys k
        USING (
            SELECT unnest(idempotency_keys_release.producers) AS producer,
                unnest(idempotency_keys_release.idempotency_keys) AS idempotency_key,
                unnest(idempotency_keys_release.notification_ids) AS notification_id
        ) AS x
        WHERE k.producer = x.producer AND k.idempotency_key = x.idempotency_key
            AND k.notification_id = x.notification_id
            AND k.expires_at <= coalesce(idempotency_keys_release.at, now())
            AND (k.producer = herald.acting_producer()
                OR pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER'))
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.idempotency_keys_release(text[], text[], text[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.idempotency_keys_release(text[], text[], text[], timestamptz) TO herald_producer;

-- The status callbacks' keys ('callback:<notification>:<route>:<event>')
-- are idempotency keys too: the trigger inserts the key (taking an
-- expired one over, as the owner may), and the callback's record and route
-- only if it got it.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.routes_callback_enqueue() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
    evs text[] := '{}';
    errs jsonb[] := '{}';
    ev text;
    i integer;
    rec_producer text;
    rec_type text;
    rec_callback_url text;
    rec_request_id text;
    rec_trace_id text;
    rec_accepted_at timestamptz;
    rec_idem_expires timestamptz;
    sub_url text;
    sub_events text[];
    target text;
    t timestamptz;
    cb_id text;
    cb_key text;
    cb_expires timestamptz;
    created boolean := false;
BEGIN
    IF OLD.status IS DISTINCT FROM NEW.status THEN
        ev := CASE NEW.status
            WHEN 'published' THEN 'published'
            WHEN 'dead_letter' THEN CASE WHEN NEW.last_error_classification = 'expired' THEN 'expired' ELSE 'dead_lettered' END
            WHEN 'skipped' THEN 'skipped'
            WHEN 'canceled' THEN 'canceled'
        END;
        IF ev IS NOT NULL THEN
            evs := array_append(evs, ev);
            errs := array_append(errs, CASE WHEN NEW.status IN ('dead_letter', 'skipped') THEN
                jsonb_build_object('classification', NEW.last_error_classification, 'message', NEW.last_error_message)
                ELSE NULL END);
        END IF;
    END IF;
    IF OLD.delivery_status IS DISTINCT FROM NEW.delivery_status
            AND NEW.delivery_status IN ('delivered', 'undelivered', 'expired') THEN
        evs := array_append(evs, NEW.delivery_status);
        errs := array_append(errs, CASE WHEN NEW.delivery_status <> 'delivered' THEN
            jsonb_build_object('classification', NEW.delivery_status, 'message', NEW.delivery_error,
                'permanent', NEW.delivery_error_permanent)
            ELSE NULL END);
    END IF;
    IF cardinality(evs) = 0 THEN
        RETURN NULL;
    END IF;

    SELECT r.producer, r.notification_type, r.callback_url, r.request_id, r.trace_id, r.accepted_at, r.idempotency_expires_at
    INTO rec_producer, rec_type, rec_callback_url, rec_request_id, rec_trace_id, rec_accepted_at, rec_idem_expires
    FROM herald.records r
    WHERE r.notification_id = NEW.notification_id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT s.url, s.events INTO sub_url, sub_events
    FROM herald.callback_subscriptions s
    WHERE s.producer = rec_producer;
    target := coalesce(nullif(rec_callback_url, ''), sub_url);
    IF target IS NULL THEN
        RETURN NULL;
    END IF;

    FOR i IN 1 .. cardinality(evs) LOOP
        ev := evs[i];
        CONTINUE WHEN cardinality(sub_events) > 0 AND ev <> ALL (sub_events);
        t := clock_timestamp();
        cb_key := 'callback:' || NEW.notification_id || ':' || NEW.route_id || ':' || ev;
        -- Reserved at least as long as the route's own record's key, and
        -- at least accept's default window.
        cb_expires := greatest(rec_idem_expires, t + interval '48 hours');
        cb_id := encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
            PLACING substring(int8send((extract(epoch FROM t) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
            52, 1), 53, 1), 'hex')::uuid::text;
        -- The callback's key first (migration 00026): a key held, and not
        -- expired, means this route's callback for this event exists.
        INSERT INTO herald.idempotency_keys AS k (producer, idempotency_key, notification_id, expires_at)
        VALUES (rec_producer, cb_key, cb_id, cb_expires)
        ON CONFLICT (producer, idempotency_key) DO UPDATE
            SET notification_id = excluded.notification_id, expires_at = excluded.expires_at
            WHERE k.expires_at <= t;
        CONTINUE WHEN NOT FOUND;
        INSERT INTO herald.records (
            notification_id, notification_type, producer, audience_kind, recipient_user_ids, payload_json,
            idempotency_key, request_fingerprint, request_id, trace_id, occurred_at, accepted_at, updated_at,
            idempotency_expires_at, channels, priority, callback_of)
        VALUES (
            cb_id, 'herald.callback.' || ev, rec_producer, 'addresses', '[]',
            jsonb_build_object('callback', jsonb_build_object(
                'type', 'route.' || ev,
                'timestamp', t,
                'data', jsonb_build_object(
                    'event', ev,
                    'notification_id', NEW.notification_id,
                    'route_id', NEW.route_id,
                    'notification_type', rec_type,
                    'channel', NEW.channel,
                    'recipient_ref', NEW.recipient_ref,
                    'status', NEW.status,
                    'delivery_status', NEW.delivery_status,
                    'attempts', NEW.attempt_count,
                    'provider', NEW.providers[cardinality(NEW.providers)],
                    'provider_message_id', nullif(NEW.provider_message_id, ''),
                    'error', errs[i],
                    'occurred_at', t,
                    'accepted_at', rec_accepted_at,
                    'published_at', NEW.published_at,
                    'dead_lettered_at', NEW.dead_lettered_at,
                    'skipped_at', NEW.skipped_at,
                    'canceled_at', NEW.canceled_at,
                    'delivery_status_at', NEW.delivery_status_at,
                    'request_id', nullif(rec_request_id, ''),
                    'trace_id', nullif(rec_trace_id, ''))))::text,
            cb_key, encode(sha256(convert_to(cb_key, 'UTF8')), 'hex'), rec_request_id, rec_trace_id, t, t, t,
            cb_expires, '{callback}', NEW.priority, NEW.notification_id);
        INSERT INTO herald.routes (
            notification_id, route_id, channel, recipient_ref, status, max_attempts, next_attempt_at,
            priority, created_at, updated_at)
        VALUES (
            cb_id, 'callback:' || left(encode(sha256(convert_to(target, 'UTF8')), 'hex'), 12), 'callback', target,
            'pending', 0, t, NEW.priority, t, t);
        created := true;
    END LOOP;
    IF created THEN
        -- The callback channel's loop wakes at commit (Postgres sends one
        -- per transaction, however many rows asked).
        PERFORM pg_notify('herald_routes', 'callback');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- Back to records' own UNIQUE constraint. A key taken over after its
-- window names a second record with the same key, which the constraint
-- cannot hold: the down migration then stops and says which.
-- +goose StatementBegin
DO $$
DECLARE
    dup record;
BEGIN
    SELECT producer, idempotency_key, count(*) AS n INTO dup
    FROM herald.records
    GROUP BY producer, idempotency_key
    HAVING count(*) > 1
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot restore records_idempotency_unique: producer % has % records with idempotency key %',
            dup.producer, dup.n, dup.idempotency_key
            USING HINT = 'delete the older records of each such key first';
    END IF;
END
$$;
-- +goose StatementEnd
ALTER TABLE herald.records ADD CONSTRAINT records_idempotency_unique UNIQUE (producer, idempotency_key);
DROP FUNCTION herald.idempotency_keys_release(text[], text[], text[], timestamptz);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.routes_callback_enqueue() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
    evs text[] := '{}';
    errs jsonb[] := '{}';
    ev text;
    i integer;
    rec_producer text;
    rec_type text;
    rec_callback_url text;
    rec_request_id text;
    rec_trace_id text;
    rec_accepted_at timestamptz;
    rec_idem_expires timestamptz;
    sub_url text;
    sub_events text[];
    target text;
    t timestamptz;
    cb_id text;
    cb_key text;
    created boolean := false;
BEGIN
    IF OLD.status IS DISTINCT FROM NEW.status THEN
        ev := CASE NEW.status
            WHEN 'published' THEN 'published'
            WHEN 'dead_letter' THEN CASE WHEN NEW.last_error_classification = 'expired' THEN 'expired' ELSE 'dead_lettered' END
            WHEN 'skipped' THEN 'skipped'
            WHEN 'canceled' THEN 'canceled'
        END;
        IF ev IS NOT NULL THEN
            evs := array_append(evs, ev);
            errs := array_append(errs, CASE WHEN NEW.status IN ('dead_letter', 'skipped') THEN
                jsonb_build_object('classification', NEW.last_error_classification, 'message', NEW.last_error_message)
                ELSE NULL END);
        END IF;
    END IF;
    IF OLD.delivery_status IS DISTINCT FROM NEW.delivery_status
            AND NEW.delivery_status IN ('delivered', 'undelivered', 'expired') THEN
        evs := array_append(evs, NEW.delivery_status);
        errs := array_append(errs, CASE WHEN NEW.delivery_status <> 'delivered' THEN
            jsonb_build_object('classification', NEW.delivery_status, 'message', NEW.delivery_error,
                'permanent', NEW.delivery_error_permanent)
            ELSE NULL END);
    END IF;
    IF cardinality(evs) = 0 THEN
        RETURN NULL;
    END IF;

    SELECT r.producer, r.notification_type, r.callback_url, r.request_id, r.trace_id, r.accepted_at, r.idempotency_expires_at
    INTO rec_producer, rec_type, rec_callback_url, rec_request_id, rec_trace_id, rec_accepted_at, rec_idem_expires
    FROM herald.records r
    WHERE r.notification_id = NEW.notification_id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT s.url, s.events INTO sub_url, sub_events
    FROM herald.callback_subscriptions s
    WHERE s.producer = rec_producer;
    target := coalesce(nullif(rec_callback_url, ''), sub_url);
    IF target IS NULL THEN
        RETURN NULL;
    END IF;

    FOR i IN 1 .. cardinality(evs) LOOP
        ev := evs[i];
        CONTINUE WHEN cardinality(sub_events) > 0 AND ev <> ALL (sub_events);
        t := clock_timestamp();
        cb_key := 'callback:' || NEW.notification_id || ':' || NEW.route_id || ':' || ev;
        cb_id := encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
            PLACING substring(int8send((extract(epoch FROM t) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
            52, 1), 53, 1), 'hex')::uuid::text;
        INSERT INTO herald.records (
            notification_id, notification_type, producer, audience_kind, recipient_user_ids, payload_json,
            idempotency_key, request_fingerprint, request_id, trace_id, occurred_at, accepted_at, updated_at,
            idempotency_expires_at, channels, priority)
        VALUES (
            cb_id, 'herald.callback.' || ev, rec_producer, 'addresses', '[]',
            jsonb_build_object('callback', jsonb_build_object(
                'type', 'route.' || ev,
                'timestamp', t,
                'data', jsonb_build_object(
                    'event', ev,
                    'notification_id', NEW.notification_id,
                    'route_id', NEW.route_id,
                    'notification_type', rec_type,
                    'channel', NEW.channel,
                    'recipient_ref', NEW.recipient_ref,
                    'status', NEW.status,
                    'delivery_status', NEW.delivery_status,
                    'attempts', NEW.attempt_count,
                    'provider', NEW.providers[cardinality(NEW.providers)],
                    'provider_message_id', nullif(NEW.provider_message_id, ''),
                    'error', errs[i],
                    'occurred_at', t,
                    'accepted_at', rec_accepted_at,
                    'published_at', NEW.published_at,
                    'dead_lettered_at', NEW.dead_lettered_at,
                    'skipped_at', NEW.skipped_at,
                    'canceled_at', NEW.canceled_at,
                    'delivery_status_at', NEW.delivery_status_at,
                    'request_id', nullif(rec_request_id, ''),
                    'trace_id', nullif(rec_trace_id, ''))))::text,
            cb_key, encode(sha256(convert_to(cb_key, 'UTF8')), 'hex'), rec_request_id, rec_trace_id, t, t, t,
            -- Reserved as long as the route's own record, and at least
            -- accept's default window.
            greatest(rec_idem_expires, t + interval '48 hours'), '{callback}', NEW.priority)
        ON CONFLICT (producer, idempotency_key) DO NOTHING;
        CONTINUE WHEN NOT FOUND;
        INSERT INTO herald.routes (
            notification_id, route_id, channel, recipient_ref, status, max_attempts, next_attempt_at,
            priority, created_at, updated_at)
        VALUES (
            cb_id, 'callback:' || left(encode(sha256(convert_to(target, 'UTF8')), 'hex'), 12), 'callback', target,
            'pending', 0, t, NEW.priority, t, t);
        created := true;
    END LOOP;
    IF created THEN
        -- The callback channel's loop wakes at commit (Postgres sends one
        -- per transaction, however many rows asked).
        PERFORM pg_notify('herald_routes', 'callback');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TABLE herald.idempotency_keys;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_callbacks(id text)
RETURNS TABLE (
    route_id text,
    channel text,
    event text,
    callback_id text,
    callback_route_id text,
    url text,
    status text,
    attempts integer,
    max_attempts integer,
    next_attempt_at timestamptz,
    error_classification text,
    error_message text,
    created_at timestamptz,
    updated_at timestamptz
)
LANGUAGE sql STABLE
AS $$
    SELECT r.route_id, r.channel, ev.event, cb.notification_id, cr.route_id, cr.recipient_ref, cr.status,
        cr.attempt_count, cr.max_attempts,
        CASE WHEN cr.status = 'claimed' THEN coalesce(cr.lease_until, cr.next_attempt_at) ELSE cr.next_attempt_at END, cr.last_error_classification,
        cr.last_error_message, cb.accepted_at, cr.updated_at
    FROM herald.records rec
    JOIN herald.routes r ON r.notification_id = rec.notification_id AND r.notify_producer
    -- 00012's events (routes_callback_enqueue, callback_subscriptions_events_check).
    CROSS JOIN unnest(ARRAY['published', 'delivered', 'undelivered', 'dead_lettered', 'skipped', 'canceled', 'expired'])
        AS ev(event)
    JOIN herald.records cb ON cb.producer = rec.producer
        AND cb.idempotency_key = 'callback:' || r.notification_id || ':' || r.route_id || ':' || ev.event
    JOIN herald.routes cr ON cr.notification_id = cb.notification_id
    WHERE rec.notification_id = notification_callbacks.id
    ORDER BY cb.accepted_at, r.route_id, cb.notification_id;
$$;
-- +goose StatementEnd
ALTER POLICY producer_insert ON herald.records
    WITH CHECK (producer = (SELECT herald.acting_producer()) AND payload_json::json IS NOT NULL
        AND NOT ('callback' = ANY (channels)));
DROP INDEX herald.records_callback_of_idx;
ALTER TABLE herald.records DROP COLUMN callback_of;

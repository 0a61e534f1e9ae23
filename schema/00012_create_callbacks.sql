-- +goose Up
-- Status callbacks to producers. A callback is a
-- notification herald sends to a producer through its own engine: one
-- record plus one route on delivery channel 'callback', owned by the
-- producer whose route changed (so the producer reads its own callbacks,
-- and its failed ones, through the row-level security it already has),
-- durable, signed, retried, dead-lettered and replayable like any route.
--
-- Who pays. A route is watched only when its producer asked: the accept
-- statement (RecordInsertMany) sets routes.notify_producer when the intent
-- carries a callback_url or its producer has a subscription. The trigger
-- below is declared WHEN (NEW.notify_producer AND ...): for every other
-- route Postgres evaluates that expression and calls nothing.
--
-- At most one callback per route and event: its record's idempotency key
-- is "callback:<notification_id>:<route_id>:<event>", and the (producer,
-- idempotency_key) UNIQUE makes a second insert do nothing.

-- ---------------------------------------------------------------------------
-- The intent's own callback URL, and the new channel.
-- ---------------------------------------------------------------------------

-- callback_url: where this notification's callbacks go instead of the
-- subscription's URL ('' = the subscription's, if any). The CHECK holds
-- direct INSERTs to intake's rule (an absolute http(s) URL without
-- userinfo); the '' test first, so records without one pay a comparison.
ALTER TABLE herald.records
    ADD COLUMN callback_url text NOT NULL DEFAULT '',
    ADD CONSTRAINT records_callback_url_check CHECK (callback_url = '' OR (
        octet_length(callback_url) <= 2048
        AND callback_url ~ '^https?://[^[:space:][:cntrl:]/?#@]+[^[:space:][:cntrl:]]*$'));

-- 'callback' joins the channels a record and a route may have. Producers
-- may not use it (their insert policies below; intake's validator does not
-- know it): only the trigger below creates callback routes.
ALTER TABLE herald.records DROP CONSTRAINT records_channels_check;
ALTER TABLE herald.records
    ADD CONSTRAINT records_channels_check CHECK (channels <@ ARRAY['email', 'sms', 'webhook', 'callback']);
ALTER TABLE herald.routes DROP CONSTRAINT routes_channel_check;
ALTER TABLE herald.routes
    ADD CONSTRAINT routes_channel_check CHECK (channel IN ('email', 'sms', 'webhook', 'callback'));

-- notify_producer: the route's status changes are reported to its
-- producer. Set at accept, never changed; false for callback routes
-- themselves (a callback about a callback would never end).
ALTER TABLE herald.routes ADD COLUMN notify_producer boolean NOT NULL DEFAULT false;

-- ---------------------------------------------------------------------------
-- Subscriptions.
-- ---------------------------------------------------------------------------

-- One subscription per producer: where its callbacks go, which events it
-- wants (empty = all), and how they are authenticated: a Standard Webhooks
-- secret (whsec_<base64 key>, every request signed) or a bearer token
-- (Authorization: Bearer <token>, as GOV.UK Notify sends). Exactly one of
-- the two. Nobody reads secret or bearer_token but the engine's login
-- (column grants below); producers write them through
-- callback_subscription_set.
CREATE TABLE herald.callback_subscriptions (
    producer text PRIMARY KEY,
    url text NOT NULL,
    events text[] NOT NULL DEFAULT '{}',
    secret text,
    bearer_token text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT callback_subscriptions_producer_check CHECK (producer <> ''),
    CONSTRAINT callback_subscriptions_url_check CHECK (
        octet_length(url) <= 2048 AND url ~ '^https?://[^[:space:][:cntrl:]/?#@]+[^[:space:][:cntrl:]]*$'),
    CONSTRAINT callback_subscriptions_events_check CHECK (
        events <@ ARRAY['published', 'delivered', 'undelivered', 'dead_lettered', 'skipped', 'canceled', 'expired']),
    CONSTRAINT callback_subscriptions_auth_check CHECK ((secret IS NULL) <> (bearer_token IS NULL)),
    -- A key of at least 16 bytes, in standard base64 (22 characters and
    -- padding at the least).
    CONSTRAINT callback_subscriptions_secret_check CHECK (
        secret IS NULL OR secret ~ '^whsec_[A-Za-z0-9+/]{22,}={0,2}$'),
    CONSTRAINT callback_subscriptions_bearer_token_check CHECK (
        bearer_token IS NULL OR (length(bearer_token) BETWEEN 16 AND 4096 AND bearer_token ~ '^[!-~]+$'))
);

-- 00006's default privileges gave operators and auditors SELECT on every
-- new table; here they read every column but the two secrets.
REVOKE ALL ON herald.callback_subscriptions FROM herald_operator, herald_auditor;
GRANT SELECT (producer, url, events, created_at, updated_at) ON herald.callback_subscriptions
    TO herald_producer, herald_operator, herald_auditor;
ALTER TABLE herald.callback_subscriptions ENABLE ROW LEVEL SECURITY;
-- A producer reads its own subscription (and the accept statement, run by
-- the producer's login, probes it).
CREATE POLICY producer_read ON herald.callback_subscriptions FOR SELECT TO herald_producer
    USING (producer = session_user);
CREATE POLICY staff_read ON herald.callback_subscriptions FOR SELECT TO herald_operator, herald_auditor
    USING (true);

-- callback_subscription_set creates or replaces the caller's subscription:
-- url, the events wanted (empty or NULL = all) and exactly one of secret
-- (whsec_<base64 key of 16 bytes or more>) and bearer_token (16 to 4096
-- printable ASCII characters). The subscription is the caller's login's
-- (session_user, as in 00006); for_producer names another producer, which
-- only the engine's login (a member of the schema's owner) may do. It
-- returns whose subscription it wrote, and when. New routes of the producer
-- are watched from the next accept on; routes accepted before are not.
-- +goose StatementBegin
CREATE FUNCTION herald.callback_subscription_set(
    url text, events text[] DEFAULT '{}', secret text DEFAULT NULL, bearer_token text DEFAULT NULL,
    for_producer text DEFAULT NULL)
RETURNS TABLE (producer text, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    who text := session_user;
    known text[] := ARRAY['published', 'delivered', 'undelivered', 'dead_lettered', 'skipped', 'canceled', 'expired'];
    bad text;
BEGIN
    IF for_producer IS NOT NULL AND for_producer <> who THEN
        IF NOT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER') THEN
            RAISE EXCEPTION 'only the engine''s login may set another producer''s callback subscription'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        who := for_producer;
    END IF;
    IF coalesce(callback_subscription_set.url, '') !~ '^https?://[^[:space:][:cntrl:]/?#@]+[^[:space:][:cntrl:]]*$'
            OR octet_length(callback_subscription_set.url) > 2048 THEN
        RAISE EXCEPTION 'url must be an absolute http or https URL of at most 2048 bytes, without userinfo'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT e INTO bad FROM unnest(coalesce(callback_subscription_set.events, '{}')) AS e WHERE e <> ALL (known) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'unknown callback event %; want one of %', quote_literal(left(bad, 40)), array_to_string(known, ', ')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (callback_subscription_set.secret IS NULL) = (callback_subscription_set.bearer_token IS NULL) THEN
        RAISE EXCEPTION 'give exactly one of secret and bearer_token' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF callback_subscription_set.secret IS NOT NULL THEN
        -- The message never quotes the secret.
        BEGIN
            IF callback_subscription_set.secret !~ '^whsec_[A-Za-z0-9+/]+={0,2}$'
                    OR length(decode(substr(callback_subscription_set.secret, 7), 'base64')) < 16 THEN
                RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value';
            END IF;
        EXCEPTION WHEN OTHERS THEN
            RAISE EXCEPTION 'secret must be whsec_ followed by the standard base64 of a key of at least 16 bytes'
                USING ERRCODE = 'invalid_parameter_value';
        END;
    END IF;
    IF callback_subscription_set.bearer_token IS NOT NULL
            AND (length(callback_subscription_set.bearer_token) NOT BETWEEN 16 AND 4096
                OR callback_subscription_set.bearer_token !~ '^[!-~]+$') THEN
        RAISE EXCEPTION 'bearer_token must be 16 to 4096 printable ASCII characters without spaces'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    INSERT INTO herald.callback_subscriptions AS s (producer, url, events, secret, bearer_token)
    VALUES (who, callback_subscription_set.url,
        (SELECT coalesce(array_agg(DISTINCT e ORDER BY e), '{}') FROM unnest(coalesce(callback_subscription_set.events, '{}')) AS e),
        callback_subscription_set.secret, callback_subscription_set.bearer_token)
    ON CONFLICT (producer) DO UPDATE
    SET url = excluded.url, events = excluded.events, secret = excluded.secret,
        bearer_token = excluded.bearer_token, updated_at = now()
    RETURNING s.producer, s.created_at, s.updated_at;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.callback_subscription_set(text, text[], text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.callback_subscription_set(text, text[], text, text, text) TO herald_producer;

-- callback_subscription_delete removes the caller's subscription (for_producer:
-- as in callback_subscription_set) and says whether there was one. Callbacks
-- already created are still delivered; a pending one whose producer has no
-- subscription left is dead-lettered by the callback channel, with a hint.
-- +goose StatementBegin
CREATE FUNCTION herald.callback_subscription_delete(for_producer text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    who text := session_user;
BEGIN
    IF for_producer IS NOT NULL AND for_producer <> who THEN
        IF NOT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER') THEN
            RAISE EXCEPTION 'only the engine''s login may delete another producer''s callback subscription'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        who := for_producer;
    END IF;
    DELETE FROM herald.callback_subscriptions WHERE producer = who;
    RETURN FOUND;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.callback_subscription_delete(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.callback_subscription_delete(text) TO herald_producer;

-- ---------------------------------------------------------------------------
-- Creating callbacks: in the transaction of the status change.
-- ---------------------------------------------------------------------------

-- routes_callback_enqueue creates the callbacks of one watched route's
-- status change: for each event the change is (a new terminal status, or
-- a new delivery status from a receipt) and the producer's subscription
-- wants, one callback record and its route, unless that route's callback
-- for that event exists already. The callback goes to the intent's
-- callback_url, else the subscription's URL; with neither (the
-- subscription was deleted since the accept) nothing is created.
--
-- Events: published; dead_lettered (expired when the dispatcher
-- dead-lettered the route as expired); skipped; canceled; and from
-- receipts delivered, undelivered, expired (delivery status unknown is
-- none). Each record's accepted_at is clock_timestamp(), so the callbacks
-- of one route are ordered even within one transaction: the callback
-- channel delivers none before the earlier ones of its route are final.
--
-- SECURITY DEFINER: whoever moved the route (the engine, an operator's
-- cancel, the matcher) creates rows in the producer's name. TimeZone is
-- UTC so that the payload's times read the same whatever the session's.
-- The notification id is a UUIDv7 built from clock_timestamp(), like
-- accept's (Postgres 14 has no uuidv7()).
-- +goose StatementBegin
CREATE FUNCTION herald.routes_callback_enqueue() RETURNS trigger
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
REVOKE ALL ON FUNCTION herald.routes_callback_enqueue() FROM PUBLIC;

-- The WHEN clause is all an unwatched route ever costs: no call. A watched
-- route's claims and retries (pending, claimed, failed) call nothing either.
CREATE TRIGGER routes_callback AFTER UPDATE OF status, delivery_status ON herald.routes
    FOR EACH ROW
    WHEN (NEW.notify_producer AND (
        (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('published', 'dead_letter', 'skipped', 'canceled'))
        OR (OLD.delivery_status IS DISTINCT FROM NEW.delivery_status
            AND NEW.delivery_status IN ('delivered', 'undelivered', 'expired'))))
    EXECUTE FUNCTION herald.routes_callback_enqueue();

-- ---------------------------------------------------------------------------
-- Producers may not submit callbacks.
-- ---------------------------------------------------------------------------

-- 00006's records policy and 00009's routes policy, with the callback
-- channel refused.
DROP POLICY producer_insert ON herald.records;
CREATE POLICY producer_insert ON herald.records FOR INSERT TO herald_producer
    WITH CHECK (producer = session_user AND (payload_json::json) IS NOT NULL
        AND NOT ('callback' = ANY (channels)));
DROP POLICY producer_insert ON herald.routes;
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (
        herald.notification_is_mine(notification_id)
        AND channel <> 'callback'
        AND herald.routes_address_ok(channel, recipient_ref)
        AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '' AND providers IS NULL
        AND receipt_key IS NULL AND delivery_status IS NULL AND delivery_status_at IS NULL
        AND delivery_error = '' AND delivery_error_permanent IS NULL);

-- ---------------------------------------------------------------------------
-- What an operator reads.
-- ---------------------------------------------------------------------------

-- failed_callbacks_view: the callbacks herald could not deliver, per
-- producer: the dead-lettered routes of channel callback, with the event
-- and the route they were about (read from the callback's payload), newest
-- first. A producer reads its own through dead_letters, routes and records
-- (WHERE channel = 'callback'); `herald dead-letters replay --channel
-- callback` sends them again.
CREATE VIEW herald.failed_callbacks_view AS
SELECT
    rec.producer,
    p -> 'data' ->> 'event' AS event,
    p -> 'data' ->> 'notification_id' AS notification_id,
    p -> 'data' ->> 'route_id' AS route_id,
    d.notification_id AS callback_id,
    d.route_id AS callback_route_id,
    d.recipient_ref AS url,
    d.final_attempt_count AS attempts,
    d.failure_classification AS classification,
    d.failure_message AS message,
    d.recovery_hint,
    rec.accepted_at AS event_at,
    d.created_at AS dead_lettered_at
FROM herald.dead_letters d
JOIN herald.records rec ON rec.notification_id = d.notification_id
CROSS JOIN LATERAL (SELECT rec.payload_json::jsonb -> 'callback' AS p) AS payload
WHERE d.channel = 'callback'
ORDER BY d.created_at DESC, d.notification_id DESC;

GRANT SELECT ON herald.failed_callbacks_view TO herald_operator, herald_auditor;

-- +goose Down
DROP VIEW IF EXISTS herald.failed_callbacks_view;
DROP POLICY producer_insert ON herald.routes;
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (
        herald.notification_is_mine(notification_id)
        AND herald.routes_address_ok(channel, recipient_ref)
        AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '' AND providers IS NULL
        AND receipt_key IS NULL AND delivery_status IS NULL AND delivery_status_at IS NULL
        AND delivery_error = '' AND delivery_error_permanent IS NULL);
DROP POLICY producer_insert ON herald.records;
CREATE POLICY producer_insert ON herald.records FOR INSERT TO herald_producer
    WITH CHECK (producer = session_user AND (payload_json::json) IS NOT NULL);
DROP TRIGGER IF EXISTS routes_callback ON herald.routes;
DROP FUNCTION IF EXISTS herald.routes_callback_enqueue();
DROP FUNCTION IF EXISTS herald.callback_subscription_delete(text);
DROP FUNCTION IF EXISTS herald.callback_subscription_set(text, text[], text, text, text);
DROP TABLE IF EXISTS herald.callback_subscriptions;
-- Callback records and routes go first: the narrower checks would refuse them.
DELETE FROM herald.routes WHERE channel = 'callback';
DELETE FROM herald.records WHERE 'callback' = ANY (channels);
ALTER TABLE herald.routes DROP COLUMN notify_producer;
ALTER TABLE herald.routes DROP CONSTRAINT routes_channel_check;
ALTER TABLE herald.routes
    ADD CONSTRAINT routes_channel_check CHECK (channel IN ('email', 'sms', 'webhook'));
ALTER TABLE herald.records DROP CONSTRAINT records_channels_check;
ALTER TABLE herald.records
    ADD CONSTRAINT records_channels_check CHECK (channels <@ ARRAY['email', 'sms', 'webhook']);
ALTER TABLE herald.records DROP COLUMN callback_url;

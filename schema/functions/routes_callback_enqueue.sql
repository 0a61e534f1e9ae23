-- The status callbacks' keys ('callback:<notification>:<route>:<event>')
-- are idempotency keys too: the trigger inserts the key (taking an
-- expired one over, as the owner may), and the callback's record and route
-- only if it got it.
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
    rec_metadata jsonb;
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

    SELECT r.producer, r.notification_type, r.callback_url, r.request_id, r.trace_id, r.accepted_at, r.idempotency_expires_at,
        r.metadata
    INTO rec_producer, rec_type, rec_callback_url, rec_request_id, rec_trace_id, rec_accepted_at, rec_idem_expires,
        rec_metadata
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
        -- The callback's key first: a key held, and not
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
                    'trace_id', nullif(rec_trace_id, ''),
                    -- The intent's metadata, as the producer gave it; null
                    -- when it gave none.
                    'metadata', rec_metadata)))::text,
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
        PERFORM pg_notify(herald.notify_topic('herald_routes'), 'callback');
    END IF;
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION herald.routes_callback_enqueue() FROM PUBLIC;

-- +goose Up
-- What a producer's login inserts straight into records and routes (the
-- Go client's transactional door, the HTTP API's login, or any INSERT in
-- psql) is not trusted: the client runs in the producer's process, so
-- nothing it checked can be. Such routes are inserted into lane '!vet',
-- which no dispatcher claims, and the engine's vetter (internal/vet)
-- checks each against the content blocklist, the SMS segment cap, the
-- size limit and its campaign before it moves it to the channel's queue
-- (lane ''), dead-letters it (content_blocked and the other intake
-- codes), cancels it (a canceled campaign) or holds it for review (lane
-- '!held', with a held_intents row naming its notification). Lane names
-- start with '!' so that no provider's name (channel/name) is one.
-- The engine's own accept path (the intake worker, as the owner) inserts
-- into lane '' and pays nothing for this.
DROP POLICY producer_insert ON herald.routes;
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (herald.notification_is_mine(notification_id) AND channel <> 'callback'
        AND herald.routes_address_ok(channel, recipient_ref)
        AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '!vet' AND providers IS NULL AND receipt_key IS NULL
        AND delivery_status IS NULL AND delivery_status_at IS NULL AND delivery_error = ''
        AND delivery_error_permanent IS NULL AND finished_at IS NULL);

-- Only the engine holds intents: a producer reads its own held intents and
-- writes none (a row it wrote could name any rule, and a release would
-- pass refused content as reviewed). The Go client has an intent held by
-- putting it on the intake, where the engine checks it and holds it.
-- notification_id names the notification whose routes wait in lane
-- '!held' when the vetter held an intent after it was stored; NULL for an
-- intent held before it was stored (its body goes back on the intake when
-- released).
REVOKE INSERT ON herald.held_intents FROM herald_producer;
DROP POLICY producer_own ON herald.held_intents;
CREATE POLICY producer_read ON herald.held_intents FOR SELECT TO herald_producer
    USING (producer = (SELECT herald.acting_producer()));
ALTER TABLE herald.held_intents ADD COLUMN notification_id text;

-- held_release puts held intents back: an intent held before it was
-- stored onto the intake, reviewed, in the name of the login that
-- submitted it; a stored one's held routes into their channel's queue.
-- One audit row; it returns each released id with its new intake entry
-- (NULL for a stored notification). Ids not held (released or rejected
-- meanwhile, or unknown) are skipped: the lock of the DELETE makes a
-- release and a reject of one id race safely, one wins.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.held_release(ids bigint[], actor text, reason text)
RETURNS TABLE (held_id bigint, intake_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    h record;
    moved jsonb := '[]';
BEGIN
    IF coalesce(held_release.actor, '') = '' THEN
        RAISE EXCEPTION 'a release must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR h IN DELETE FROM herald.held_intents AS x WHERE x.id = ANY(ids)
            RETURNING x.id, x.body, x.submitted_by, x.notification_id LOOP
        intake_id := NULL;
        IF h.notification_id IS NULL THEN
            INSERT INTO herald.intake AS e (body, submitted_by, reviewed) VALUES (h.body, h.submitted_by, true)
            RETURNING e.id INTO intake_id;
        ELSE
            UPDATE herald.routes AS r SET lane = '', updated_at = now()
            WHERE r.notification_id = h.notification_id AND r.lane = '!held' AND r.finished_at IS NULL;
        END IF;
        held_id := h.id;
        moved := moved || jsonb_build_object('held_id', held_id, 'intake_id', intake_id, 'notification_id', h.notification_id);
        RETURN NEXT;
    END LOOP;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (held_release.actor, 'held_release', coalesce(held_release.reason, ''),
        jsonb_build_object('held_ids', to_jsonb(ids)), jsonb_array_length(moved), jsonb_build_object('released', moved));
END;
$$;
-- +goose StatementEnd

-- held_reject refuses held intents for good: each is recorded in
-- malformed_intents ("held:<id>", content_blocked, the rule and the
-- operator's reason), where its producer reads why, and a stored
-- notification's held routes become dead letters (content_blocked). One
-- audit row; it returns the ids rejected.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.held_reject(ids bigint[], actor text, reason text)
RETURNS TABLE (held_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    h record;
    msg text;
    gone bigint[] := '{}';
BEGIN
    IF coalesce(held_reject.actor, '') = '' THEN
        RAISE EXCEPTION 'a reject must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR h IN DELETE FROM herald.held_intents AS x WHERE x.id = ANY(ids) RETURNING x.* LOOP
        msg := format('rejected after review by %s (%s): matched %s (content_blocked)', held_reject.actor,
            coalesce(nullif(held_reject.reason, ''), 'no reason given'), h.rule);
        INSERT INTO herald.malformed_intents (stream_entry_id, notification_type, producer, idempotency_key,
            failure_code, failure_message, raw_fields, recorded_at, submitted_by)
        VALUES ('held:' || h.id, h.notification_type, h.producer, h.idempotency_key, 'content_blocked',
            msg, jsonb_build_object('body', h.body), now(), h.submitted_by);
        IF h.notification_id IS NOT NULL THEN
            WITH dead AS (
                UPDATE herald.routes AS r
                SET status = 'dead_letter', next_attempt_at = NULL, lane = '', dead_lettered_at = now(),
                    last_error_classification = 'content_blocked', last_error_message = msg,
                    last_error_at = now(), updated_at = now()
                WHERE r.notification_id = h.notification_id AND r.lane = '!held' AND r.finished_at IS NULL
                RETURNING r.notification_id, r.route_id, r.channel, r.recipient_ref, r.attempt_count, r.max_attempts
            )
            INSERT INTO herald.dead_letters (notification_id, route_id, channel, recipient_ref, final_attempt_count,
                max_attempts, failure_classification, failure_message, recovery_hint, created_at)
            SELECT d.notification_id, d.route_id, d.channel, d.recipient_ref, d.attempt_count, d.max_attempts,
                'content_blocked', msg, 'an operator rejected the content after review; submit a new intent', now()
            FROM dead AS d
            ON CONFLICT (notification_id, route_id) DO NOTHING;
        END IF;
        gone := gone || h.id;
        held_id := h.id;
        RETURN NEXT;
    END LOOP;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (held_reject.actor, 'held_reject', coalesce(held_reject.reason, ''),
        jsonb_build_object('held_ids', to_jsonb(ids)), cardinality(gone), jsonb_build_object('rejected', to_jsonb(gone)));
END;
$$;
-- +goose StatementEnd

-- Audit time is the database's clock: the stamp that names the login also
-- dates the row, whatever time its writer gave.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.audit_log_stamp() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.login := session_user;
    NEW.at := now();
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- The cancels' `at` (the time a cancel takes effect: canceled_at,
-- finished_at, which claimed routes count as stale, and the campaign's
-- cancel_requested_at) is the engine's to inject, for its tests; anyone
-- else's cancel happens now (a producer's `at` of 1999 or 'infinity' would
-- file its routes as finished long ago or never). The audit row is dated
-- by audit_log_stamp above either way. Each function's one line that takes
-- `at` is rewritten in place, the rest of its body as it is.
-- +goose StatementBegin
CREATE FUNCTION herald.caller_is_engine() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER')
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.caller_is_engine() FROM PUBLIC;

-- +goose StatementBegin
DO $$
DECLARE
    f record;
    def text;
    fixed text;
BEGIN
    FOR f IN SELECT * FROM (VALUES
        ('herald.notification_cancel(text, text, text, timestamptz)'::regprocedure, 'coalesce(notification_cancel.at, now())'),
        ('herald.campaign_cancel_batch(text, text, text, text, integer, timestamptz)'::regprocedure, 'coalesce(campaign_cancel_batch.at, now())')
    ) AS x(fn, expr) LOOP
        def := pg_get_functiondef(f.fn);
        fixed := replace(def, f.expr, format('CASE WHEN herald.caller_is_engine() THEN %s ELSE now() END', f.expr));
        IF fixed = def THEN
            RAISE EXCEPTION '% does not read %', f.fn, f.expr;
        END IF;
        EXECUTE fixed;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    f record;
    def text;
BEGIN
    FOR f IN SELECT * FROM (VALUES
        ('herald.notification_cancel(text, text, text, timestamptz)'::regprocedure, 'coalesce(notification_cancel.at, now())'),
        ('herald.campaign_cancel_batch(text, text, text, text, integer, timestamptz)'::regprocedure, 'coalesce(campaign_cancel_batch.at, now())')
    ) AS x(fn, expr) LOOP
        def := pg_get_functiondef(f.fn);
        EXECUTE replace(def, format('CASE WHEN herald.caller_is_engine() THEN %s ELSE now() END', f.expr), f.expr);
    END LOOP;
END;
$$;
-- +goose StatementEnd
DROP FUNCTION herald.caller_is_engine();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.audit_log_stamp() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.login := session_user;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.held_reject(ids bigint[], actor text, reason text)
RETURNS TABLE (held_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    h record;
    gone bigint[] := '{}';
BEGIN
    IF coalesce(held_reject.actor, '') = '' THEN
        RAISE EXCEPTION 'a reject must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR h IN DELETE FROM herald.held_intents AS x WHERE x.id = ANY(ids) RETURNING x.* LOOP
        INSERT INTO herald.malformed_intents (stream_entry_id, notification_type, producer, idempotency_key,
            failure_code, failure_message, raw_fields, recorded_at, submitted_by)
        VALUES ('held:' || h.id, h.notification_type, h.producer, h.idempotency_key, 'content_blocked',
            format('rejected after review by %s (%s): matched %s (content_blocked)', held_reject.actor,
                coalesce(nullif(held_reject.reason, ''), 'no reason given'), h.rule),
            jsonb_build_object('body', h.body), now(), h.submitted_by);
        gone := gone || h.id;
        held_id := h.id;
        RETURN NEXT;
    END LOOP;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (held_reject.actor, 'held_reject', coalesce(held_reject.reason, ''),
        jsonb_build_object('held_ids', to_jsonb(ids)), cardinality(gone), jsonb_build_object('rejected', to_jsonb(gone)));
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.held_release(ids bigint[], actor text, reason text)
RETURNS TABLE (held_id bigint, intake_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    h record;
    moved jsonb := '[]';
BEGIN
    IF coalesce(held_release.actor, '') = '' THEN
        RAISE EXCEPTION 'a release must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR h IN DELETE FROM herald.held_intents AS x WHERE x.id = ANY(ids) RETURNING x.id, x.body, x.submitted_by LOOP
        INSERT INTO herald.intake AS e (body, submitted_by, reviewed) VALUES (h.body, h.submitted_by, true)
        RETURNING e.id INTO intake_id;
        held_id := h.id;
        moved := moved || jsonb_build_object('held_id', held_id, 'intake_id', intake_id);
        RETURN NEXT;
    END LOOP;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (held_release.actor, 'held_release', coalesce(held_release.reason, ''),
        jsonb_build_object('held_ids', to_jsonb(ids)), jsonb_array_length(moved), jsonb_build_object('released', moved));
END;
$$;
-- +goose StatementEnd

UPDATE herald.routes SET lane = '' WHERE lane IN ('!vet', '!held') AND finished_at IS NULL;
DELETE FROM herald.held_intents WHERE notification_id IS NOT NULL;
ALTER TABLE herald.held_intents DROP COLUMN notification_id;
DROP POLICY producer_read ON herald.held_intents;
CREATE POLICY producer_own ON herald.held_intents TO herald_producer
    USING (producer = (SELECT herald.acting_producer()))
    WITH CHECK (producer = (SELECT herald.acting_producer()));
GRANT INSERT (producer, idempotency_key, notification_type, body, rule_id, rule, part) ON herald.held_intents TO herald_producer;

DROP POLICY producer_insert ON herald.routes;
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (herald.notification_is_mine(notification_id) AND channel <> 'callback'
        AND herald.routes_address_ok(channel, recipient_ref)
        AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '' AND providers IS NULL AND receipt_key IS NULL
        AND delivery_status IS NULL AND delivery_status_at IS NULL AND delivery_error = ''
        AND delivery_error_permanent IS NULL AND finished_at IS NULL);

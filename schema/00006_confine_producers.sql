-- +goose Up
-- Producers confined to their own rows. The access policy this
-- migration implements is written out, table by table, in doc.go's "Roles
-- and access" section and README's Roles section; internal/access's test
-- checks the database against it, so an object added without a policy
-- fails CI.
--
-- Identity. A producer is the database login named after it, and herald
-- identifies it by session_user, not current_user: a login can SET ROLE to
-- any role it is a member of, including herald_producer itself, and under
-- current_user every producer doing so would share one namespace named
-- "herald_producer". session_user is the login and cannot be changed by
-- anyone but a superuser. Inside a SECURITY DEFINER function current_user
-- is the definer while session_user stays the caller, so the functions below
-- can check ownership and stamp audit rows with the caller's login.

-- +goose StatementBegin
DO $$
DECLARE
    r text;
BEGIN
    -- herald_relay: a trusted forwarder that may put entries on the SQL
    -- intake in any producer's name. herald_directory: a service that owns
    -- user data and keeps the shared recipient directory.
    FOREACH r IN ARRAY ARRAY['herald_relay', 'herald_directory'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created by a concurrent migration of another database
            END;
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

GRANT USAGE ON SCHEMA herald TO herald_relay, herald_directory;

-- ---------------------------------------------------------------------------
-- Invariants the dispatcher relies on, held by the database itself, so that a
-- row written with plain SQL (by a producer's login, an operator or a script)
-- cannot break them. Each mirrors a rule of internal/intake's validation.
-- ---------------------------------------------------------------------------

ALTER TABLE herald.records
    ADD CONSTRAINT records_priority_check CHECK (priority IN (0, 1)),
    ADD CONSTRAINT records_audience_kind_check CHECK (audience_kind IN ('users', 'addresses', 'mixed')),
    ADD CONSTRAINT records_channels_check CHECK (channels <@ ARRAY['email', 'sms', 'webhook']),
    ADD CONSTRAINT records_recipient_user_ids_check CHECK (jsonb_typeof(recipient_user_ids) = 'array'),
    ADD CONSTRAINT records_producer_check CHECK (producer <> '' AND idempotency_key <> '');

-- The claim scans routes_due_idx per (channel, priority 0 | 1): a route of
-- another channel or priority would sit in the index for ever, unclaimed,
-- and grow herald_lag_seconds without end. These checks are cheap, which
-- matters: Postgres evaluates every CHECK of routes on every update too, so
-- each runs three times in a route's life (accept, claim, complete). The
-- address's shape is checked where a route can come from outside herald's
-- validation, a producer's direct INSERT (its policy below), not here: as a
-- CHECK its regular expressions would be by far the dearest, paid three
-- times over on rows the validator already checked (BenchmarkRouteChecksCost
-- measures it).
ALTER TABLE herald.routes
    ADD CONSTRAINT routes_priority_check CHECK (priority IN (0, 1)),
    ADD CONSTRAINT routes_channel_check CHECK (channel IN ('email', 'sms', 'webhook')),
    ADD CONSTRAINT routes_attempts_check CHECK (attempt_count >= 0 AND max_attempts BETWEEN 0 AND 100),
    ADD CONSTRAINT routes_sms_check CHECK (
        sms_segments >= 0 AND sms_encoding IN ('', 'gsm7', 'ucs2'));

-- routes_address_ok says whether a route's recipient has its channel's
-- shape: a "user:<id>" reference, resolved through the directory at
-- delivery, or a direct address the dispatcher hands to the channel as it
-- is (E.164 phone, an address with one domain, an absolute http(s) URL).
-- IMMUTABLE and inlinable SQL: the policy evaluates it as an expression.
-- +goose StatementBegin
CREATE FUNCTION herald.routes_address_ok(channel text, recipient_ref text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT octet_length(recipient_ref) <= 2100 AND (
        (starts_with(recipient_ref, 'user:') AND length(recipient_ref) > 5)
        OR CASE channel
            WHEN 'sms' THEN recipient_ref ~ '^\+[1-9][0-9]{6,14}$'
            WHEN 'email' THEN recipient_ref ~ '^[^[:space:][:cntrl:]]+@[^@[:space:][:cntrl:]]+$'
            WHEN 'webhook' THEN recipient_ref ~ '^https?://[^[:space:][:cntrl:]/?#@]+'
            ELSE false
        END)
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.routes_address_ok(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.routes_address_ok(text, text) TO herald_producer;

-- ---------------------------------------------------------------------------
-- Records and routes: producers insert and read their own; nothing else.
-- ---------------------------------------------------------------------------

-- The UPDATE grant on routes let a producer rewrite its routes (move one into
-- another producer's notification, mark one published) and, with it, take
-- LOCK TABLE ... ACCESS EXCLUSIVE and stall every claim: every lock mode
-- beyond ROW EXCLUSIVE needs table-level UPDATE, DELETE or TRUNCATE. A
-- producer now holds only SELECT and INSERT on the tables the engine works
-- (ACCESS SHARE and ROW EXCLUSIVE, which conflict with no statement the
-- engine runs); it cancels through herald.notification_cancel below.
REVOKE UPDATE ON herald.routes FROM herald_producer;
DROP POLICY producer_cancel ON herald.routes;
DROP POLICY producer_insert ON herald.routes;
DROP POLICY producer_read ON herald.routes;
DROP POLICY producer_own ON herald.records;
DROP POLICY producer_read ON herald.dead_letters;

-- notification_owned_by(nid, who) answered for any producer: an ownership
-- oracle. Its replacement answers only for the caller.
REVOKE ALL ON FUNCTION herald.notification_owned_by(text, text) FROM herald_producer;
DROP FUNCTION herald.notification_owned_by(text, text);

-- notification_is_mine tells the routes' insert policy whether the caller's
-- login owns the notification. It is SECURITY DEFINER (it reads records past
-- their policy) and VOLATILE, so that it sees the record inserted earlier in
-- the same statement (RecordInsertMany inserts records and their routes in
-- one statement; a plain EXISTS in the policy would not see the new record).
-- It says yes only for the caller's own notifications, and no both for an
-- unknown id and for another producer's.
-- +goose StatementBegin
CREATE FUNCTION herald.notification_is_mine(nid text)
RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM herald.records WHERE notification_id = nid AND producer = session_user);
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.notification_is_mine(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.notification_is_mine(text) TO herald_producer;

CREATE POLICY producer_read ON herald.records FOR SELECT TO herald_producer
    USING (producer = session_user);
-- The payload must be JSON: the cast parses it (json, not jsonb: it only
-- checks), and fails with the bad input named. Like the routes' address
-- shape, this is the producer's insert policy rather than a table CHECK: the
-- engine's own statements carry payloads the validator built, and parsing
-- every payload again would slow every accept for nothing.
CREATE POLICY producer_insert ON herald.records FOR INSERT TO herald_producer
    WITH CHECK (producer = session_user AND (payload_json::json) IS NOT NULL);
CREATE POLICY producer_read ON herald.routes FOR SELECT TO herald_producer
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = routes.notification_id));
-- A producer's route starts as the Go client's do: pending, never tried, no
-- outcome, with an address of its channel's shape. (Its attempt budget,
-- channel and priority are the table's CHECKs'.)
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (
        herald.notification_is_mine(notification_id)
        AND herald.routes_address_ok(channel, recipient_ref)
        AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '');
CREATE POLICY producer_read ON herald.dead_letters FOR SELECT TO herald_producer
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = dead_letters.notification_id));

-- ---------------------------------------------------------------------------
-- The audit log: written only by herald's functions, each row stamped with
-- the database login that caused it, whatever actor name the caller gave.
-- ---------------------------------------------------------------------------

ALTER TABLE herald.audit_log ADD COLUMN login text NOT NULL DEFAULT session_user;

-- The stamp is a trigger, not only a default, so that no statement (the
-- owner's included) can write a login other than its own.
-- +goose StatementBegin
CREATE FUNCTION herald.audit_log_stamp() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.login := session_user;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.audit_log_stamp() FROM PUBLIC;
CREATE TRIGGER audit_log_stamp BEFORE INSERT OR UPDATE ON herald.audit_log
    FOR EACH ROW EXECUTE FUNCTION herald.audit_log_stamp();

REVOKE INSERT ON herald.audit_log FROM herald_producer, herald_operator;

-- audit_append writes one operator audit row (a replay batch, a replay that
-- moved nothing, a bulk replay queued). Only the replay actions: a cancel's
-- row is written by notification_cancel in the cancel's own statement, so
-- no role can append a "cancel" that did not happen.
-- +goose StatementBegin
CREATE FUNCTION herald.audit_append(
    actor text, action text, reason text, filter jsonb, affected integer, details jsonb,
    at timestamptz DEFAULT NULL, OUT id bigint, OUT logged_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF action NOT IN ('dead_letter_replay', 'dead_letter_replay_queued') THEN
        RAISE EXCEPTION 'audit_append writes replay actions only, not %', action
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(actor, '') = '' THEN
        RAISE EXCEPTION 'an audit row must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO herald.audit_log (at, actor, action, reason, filter, affected, details)
    VALUES (coalesce(audit_append.at, now()), audit_append.actor, audit_append.action,
        coalesce(audit_append.reason, ''), coalesce(audit_append.filter, '{}'),
        audit_append.affected, coalesce(audit_append.details, '{}'))
    RETURNING audit_log.id, audit_log.at INTO id, logged_at;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.audit_append(text, text, text, jsonb, integer, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.audit_append(text, text, text, jsonb, integer, jsonb, timestamptz) TO herald_operator;

-- notification_cancel cancels the routes of one notification that are not
-- terminal yet and writes the cancel's audit row, in one statement. A
-- producer may cancel only its own notifications; an operator, or the
-- engine's login (the schema's owner), any. An id the caller may not cancel
-- is reported exactly like an unknown one (no_data_found), so the function
-- tells a producer nothing about another's notifications. A route claimed
-- by a dispatcher right now is canceled too: its completion is fenced on
-- status 'claimed' and finds nothing to update, though the delivery in
-- flight may still reach the recipient.
-- +goose StatementBegin
CREATE FUNCTION herald.notification_cancel(nid text, actor text, reason text, at timestamptz DEFAULT NULL)
RETURNS TABLE (route_id text, channel text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := coalesce(notification_cancel.at, now());
    owner text;
    moved jsonb;
    n integer;
BEGIN
    SELECT producer INTO owner FROM herald.records WHERE notification_id = nid;
    IF NOT FOUND OR NOT (owner = session_user
            OR pg_has_role(session_user, 'herald_operator', 'MEMBER')
            OR pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER')) THEN
        RAISE EXCEPTION 'notification % not found', nid USING ERRCODE = 'no_data_found';
    END IF;
    IF coalesce(notification_cancel.actor, '') = '' THEN
        RAISE EXCEPTION 'a cancel must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH c AS (
        UPDATE herald.routes r
        SET status = 'canceled', next_attempt_at = NULL, canceled_at = t, updated_at = t
        WHERE r.notification_id = nid AND r.status IN ('pending', 'claimed', 'failed')
        RETURNING r.route_id, r.channel
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object('route_id', c.route_id, 'channel', c.channel) ORDER BY c.route_id), '[]'),
        count(*)
    INTO moved, n
    FROM c;
    INSERT INTO herald.audit_log (at, actor, action, reason, filter, affected, details)
    VALUES (t, notification_cancel.actor, 'cancel', coalesce(notification_cancel.reason, ''),
        jsonb_build_object('notification_id', nid), n,
        jsonb_build_object('route_ids', (SELECT coalesce(jsonb_agg(e -> 'route_id'), '[]') FROM jsonb_array_elements(moved) e)));
    RETURN QUERY SELECT e ->> 'route_id', e ->> 'channel' FROM jsonb_array_elements(moved) e;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.notification_cancel(text, text, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.notification_cancel(text, text, text, timestamptz) TO herald_producer, herald_operator;

-- The timeline shows who the database says acted beside the name given.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_timeline(id text)
RETURNS TABLE (
    at timestamptz,
    route_id text,
    channel text,
    event text,
    attempt integer,
    detail text
)
LANGUAGE sql STABLE
AS $$
    SELECT e.at, e.route_id, e.channel, e.event, e.attempt, e.detail
    FROM (
        SELECT rec.accepted_at AS at, 0 AS ord, '' AS route_id, '' AS channel, 'accepted' AS event, 0 AS attempt,
            format('type %s from %s, channels %s, priority %s', rec.notification_type, rec.producer,
                array_to_string(rec.channels, ','), rec.priority) AS detail
        FROM herald.records rec
        WHERE rec.notification_id = notification_timeline.id
        UNION ALL
        SELECT r.created_at, 1, r.route_id, r.channel, 'routed', 0,
            format('to %s, max attempts %s', r.recipient_ref,
                CASE WHEN r.max_attempts = 0 THEN 'channel default' ELSE r.max_attempts::text END)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id
        UNION ALL
        -- The last failure, unless it is the one that dead-lettered the route
        -- (shown below with its recovery hint).
        SELECT r.last_error_at, 2, r.route_id, r.channel, 'failed', r.attempt_count,
            format('%s: %s', r.last_error_classification, r.last_error_message)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id
            AND r.last_error_at IS NOT NULL
            AND (r.dead_lettered_at IS NULL OR r.last_error_at < r.dead_lettered_at)
        UNION ALL
        SELECT r.published_at, 3, r.route_id, r.channel, 'published', r.attempt_count,
            CASE WHEN r.provider_message_id <> '' THEN 'provider id ' || r.provider_message_id ELSE '' END
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.published_at IS NOT NULL
        UNION ALL
        SELECT coalesce(d.created_at, r.dead_lettered_at), 3, r.route_id, r.channel, 'dead_lettered',
            coalesce(d.final_attempt_count, r.attempt_count),
            CASE WHEN d.notification_id IS NULL
                THEN format('%s: %s', r.last_error_classification, r.last_error_message)
                ELSE format('%s: %s (hint: %s)', d.failure_classification, d.failure_message, d.recovery_hint)
            END
        FROM herald.routes r
        LEFT JOIN herald.dead_letters d ON d.notification_id = r.notification_id AND d.route_id = r.route_id
        WHERE r.notification_id = notification_timeline.id AND r.dead_lettered_at IS NOT NULL
        UNION ALL
        SELECT r.skipped_at, 3, r.route_id, r.channel, 'skipped', r.attempt_count,
            format('%s: %s', r.last_error_classification, r.last_error_message)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.skipped_at IS NOT NULL
        UNION ALL
        SELECT r.canceled_at, 3, r.route_id, r.channel, 'canceled', r.attempt_count, ''
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.canceled_at IS NOT NULL
        UNION ALL
        -- Replays and cancels name the routes they moved in details.routes.
        SELECT a.at, 4, x.route_id, x.channel, a.action, 0,
            format('by %s (login %s): %s', a.actor, a.login, a.reason)
        FROM herald.audit_log a
        CROSS JOIN LATERAL jsonb_to_recordset(a.details -> 'routes')
            AS x(notification_id text, route_id text, channel text)
        WHERE a.details @> jsonb_build_object('routes', jsonb_build_array(jsonb_build_object('notification_id', notification_timeline.id)))
            AND x.notification_id = notification_timeline.id
        UNION ALL
        -- Cancels name the notification in their filter.
        SELECT a.at, 4, '', '', a.action, 0,
            format('by %s (login %s): %s (%s routes)', a.actor, a.login, a.reason, a.affected)
        FROM herald.audit_log a
        WHERE a.filter @> jsonb_build_object('notification_id', notification_timeline.id)
        UNION ALL
        SELECT r.next_attempt_at, 5, r.route_id, r.channel,
            CASE r.status WHEN 'claimed' THEN 'lease_ends' ELSE 'next_attempt' END,
            r.attempt_count + CASE r.status WHEN 'claimed' THEN 0 ELSE 1 END, r.status
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.next_attempt_at IS NOT NULL
    ) AS e
    ORDER BY e.at, e.ord, e.route_id;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------
-- The recipient directory: every entry belongs to someone.
-- ---------------------------------------------------------------------------

-- owner is the producer whose routes resolve through the entry, or '' for
-- the shared directory kept by herald_directory logins, which every
-- producer's routes fall back to. Entries from before this migration were
-- shared by all producers, so they become the shared directory's. A
-- producer's own entry for a user wins over the shared one.
ALTER TABLE herald.recipients ADD COLUMN owner text NOT NULL DEFAULT '';
ALTER TABLE herald.recipients ALTER COLUMN owner SET DEFAULT session_user;
ALTER TABLE herald.recipients DROP CONSTRAINT recipients_pkey;
ALTER TABLE herald.recipients ADD PRIMARY KEY (owner, user_id);

-- What RecipientUpsert's validation (internal/intake ValidateRecipient)
-- stores, held for direct INSERTs too: normalized E.164 phone, an address
-- with one domain, an absolute http(s) URL, a language tag, known channels.
ALTER TABLE herald.recipients
    ADD CONSTRAINT recipients_user_id_check CHECK (
        user_id <> '' AND char_length(user_id) <= 255 AND user_id = btrim(user_id) AND user_id !~ '[[:cntrl:]]'),
    ADD CONSTRAINT recipients_phone_check CHECK (phone = '' OR phone ~ '^\+[1-9][0-9]{6,14}$'),
    ADD CONSTRAINT recipients_email_check CHECK (email = '' OR (
        octet_length(email) <= 254 AND email ~ '^[^[:space:][:cntrl:]]+@[^@[:space:][:cntrl:]]+$')),
    ADD CONSTRAINT recipients_webhook_url_check CHECK (webhook_url = '' OR (
        octet_length(webhook_url) <= 2048 AND webhook_url ~ '^https?://[^[:space:][:cntrl:]/?#@]+[^[:space:][:cntrl:]]*$')),
    ADD CONSTRAINT recipients_locale_check CHECK (locale ~ '^[A-Za-z0-9_-]{0,35}$'),
    ADD CONSTRAINT recipients_opted_out_check CHECK (opted_out <@ ARRAY['email', 'sms', 'webhook']);

-- A producer reads and writes its own entries; a directory login the shared
-- ones. Neither gets table-level UPDATE (which would allow LOCK TABLE) nor
-- DELETE (likewise): the updatable columns are granted one by one, which is
-- all INSERT ... ON CONFLICT DO UPDATE needs, and entries are deleted with
-- herald.recipient_delete.
REVOKE ALL ON herald.recipients FROM herald_producer;
GRANT SELECT, INSERT ON herald.recipients TO herald_producer, herald_directory;
GRANT UPDATE (email, phone, webhook_url, locale, opted_out, updated_at) ON herald.recipients
    TO herald_producer, herald_directory;
ALTER TABLE herald.recipients ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_own ON herald.recipients TO herald_producer
    USING (owner = session_user) WITH CHECK (owner = session_user);
CREATE POLICY directory_shared ON herald.recipients TO herald_directory
    USING (owner = '') WITH CHECK (owner = '');
CREATE POLICY staff_read ON herald.recipients FOR SELECT TO herald_operator, herald_auditor USING (true);

-- recipient_delete removes one of the caller's entries (shared: one of the
-- shared directory's, for a herald_directory login) and says whether there
-- was one.
-- +goose StatementBegin
CREATE FUNCTION herald.recipient_delete(uid text, shared boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF shared AND NOT pg_has_role(session_user, 'herald_directory', 'MEMBER')
            AND NOT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER') THEN
        RAISE EXCEPTION 'only a herald_directory login may delete shared directory entries'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    DELETE FROM herald.recipients
    WHERE user_id = uid AND owner = CASE WHEN shared THEN '' ELSE session_user END;
    RETURN FOUND;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.recipient_delete(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.recipient_delete(text, boolean) TO herald_producer, herald_directory;

-- ---------------------------------------------------------------------------
-- The SQL door: an entry carries the login that inserted it.
-- ---------------------------------------------------------------------------

-- submitted_by is set by the database: producers and relays may insert the
-- body column only, so the default (the inserting login) always applies.
-- The intake worker sets aside, as producer_mismatch, an entry whose body
-- names another producer, unless its login is a member of herald_relay or
-- of the schema's owner. malformed_intents keeps it too, so that a producer
-- can read why its own entries were refused.
ALTER TABLE herald.intake ADD COLUMN submitted_by text NOT NULL DEFAULT session_user;
ALTER TABLE herald.malformed_intents ADD COLUMN submitted_by text NOT NULL DEFAULT '';
REVOKE ALL ON herald.intake FROM herald_producer;
GRANT INSERT (body) ON herald.intake TO herald_producer, herald_relay;

ALTER TABLE herald.malformed_intents ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_read ON herald.malformed_intents FOR SELECT TO herald_producer
    USING (submitted_by = session_user);
CREATE POLICY staff_read ON herald.malformed_intents FOR SELECT TO herald_operator, herald_auditor USING (true);
CREATE POLICY operator_purge ON herald.malformed_intents FOR DELETE TO herald_operator USING (true);
GRANT SELECT ON herald.malformed_intents TO herald_producer;

-- Functions are executable by PUBLIC unless revoked: the intake's trigger
-- function needs no caller.
REVOKE ALL ON FUNCTION herald.intake_notify() FROM PUBLIC;

-- +goose Down
REVOKE SELECT ON herald.malformed_intents FROM herald_producer;
DROP POLICY IF EXISTS operator_purge ON herald.malformed_intents;
DROP POLICY IF EXISTS staff_read ON herald.malformed_intents;
DROP POLICY IF EXISTS producer_read ON herald.malformed_intents;
ALTER TABLE herald.malformed_intents DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON herald.intake FROM herald_producer, herald_relay;
GRANT INSERT ON herald.intake TO herald_producer;
ALTER TABLE herald.malformed_intents DROP COLUMN submitted_by;
ALTER TABLE herald.intake DROP COLUMN submitted_by;

DROP FUNCTION IF EXISTS herald.recipient_delete(text, boolean);
DROP POLICY IF EXISTS staff_read ON herald.recipients;
DROP POLICY IF EXISTS directory_shared ON herald.recipients;
DROP POLICY IF EXISTS producer_own ON herald.recipients;
ALTER TABLE herald.recipients DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON herald.recipients FROM herald_producer, herald_directory;
GRANT SELECT, INSERT, UPDATE ON herald.recipients TO herald_producer;
ALTER TABLE herald.recipients
    DROP CONSTRAINT recipients_opted_out_check,
    DROP CONSTRAINT recipients_locale_check,
    DROP CONSTRAINT recipients_webhook_url_check,
    DROP CONSTRAINT recipients_email_check,
    DROP CONSTRAINT recipients_phone_check,
    DROP CONSTRAINT recipients_user_id_check;
-- Entries of several owners for one user keep the shared one, or any.
DELETE FROM herald.recipients r
WHERE EXISTS (SELECT 1 FROM herald.recipients o
    WHERE o.user_id = r.user_id AND o.owner < r.owner);
ALTER TABLE herald.recipients DROP CONSTRAINT recipients_pkey;
ALTER TABLE herald.recipients ADD PRIMARY KEY (user_id);
ALTER TABLE herald.recipients DROP COLUMN owner;

-- The timeline as 00003 wrote it, without audit_log.login.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_timeline(id text)
RETURNS TABLE (
    at timestamptz,
    route_id text,
    channel text,
    event text,
    attempt integer,
    detail text
)
LANGUAGE sql STABLE
AS $$
    SELECT e.at, e.route_id, e.channel, e.event, e.attempt, e.detail
    FROM (
        SELECT rec.accepted_at AS at, 0 AS ord, '' AS route_id, '' AS channel, 'accepted' AS event, 0 AS attempt,
            format('type %s from %s, channels %s, priority %s', rec.notification_type, rec.producer,
                array_to_string(rec.channels, ','), rec.priority) AS detail
        FROM herald.records rec
        WHERE rec.notification_id = notification_timeline.id
        UNION ALL
        SELECT r.created_at, 1, r.route_id, r.channel, 'routed', 0,
            format('to %s, max attempts %s', r.recipient_ref,
                CASE WHEN r.max_attempts = 0 THEN 'channel default' ELSE r.max_attempts::text END)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id
        UNION ALL
        -- The last failure, unless it is the one that dead-lettered the route
        -- (shown below with its recovery hint).
        SELECT r.last_error_at, 2, r.route_id, r.channel, 'failed', r.attempt_count,
            format('%s: %s', r.last_error_classification, r.last_error_message)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id
            AND r.last_error_at IS NOT NULL
            AND (r.dead_lettered_at IS NULL OR r.last_error_at < r.dead_lettered_at)
        UNION ALL
        SELECT r.published_at, 3, r.route_id, r.channel, 'published', r.attempt_count,
            CASE WHEN r.provider_message_id <> '' THEN 'provider id ' || r.provider_message_id ELSE '' END
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.published_at IS NOT NULL
        UNION ALL
        SELECT coalesce(d.created_at, r.dead_lettered_at), 3, r.route_id, r.channel, 'dead_lettered',
            coalesce(d.final_attempt_count, r.attempt_count),
            CASE WHEN d.notification_id IS NULL
                THEN format('%s: %s', r.last_error_classification, r.last_error_message)
                ELSE format('%s: %s (hint: %s)', d.failure_classification, d.failure_message, d.recovery_hint)
            END
        FROM herald.routes r
        LEFT JOIN herald.dead_letters d ON d.notification_id = r.notification_id AND d.route_id = r.route_id
        WHERE r.notification_id = notification_timeline.id AND r.dead_lettered_at IS NOT NULL
        UNION ALL
        SELECT r.skipped_at, 3, r.route_id, r.channel, 'skipped', r.attempt_count,
            format('%s: %s', r.last_error_classification, r.last_error_message)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.skipped_at IS NOT NULL
        UNION ALL
        SELECT r.canceled_at, 3, r.route_id, r.channel, 'canceled', r.attempt_count, ''
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.canceled_at IS NOT NULL
        UNION ALL
        -- Replays and cancels name the routes they moved in details.routes.
        SELECT a.at, 4, x.route_id, x.channel, a.action, 0,
            format('by %s: %s', a.actor, a.reason)
        FROM herald.audit_log a
        CROSS JOIN LATERAL jsonb_to_recordset(a.details -> 'routes')
            AS x(notification_id text, route_id text, channel text)
        WHERE a.details @> jsonb_build_object('routes', jsonb_build_array(jsonb_build_object('notification_id', notification_timeline.id)))
            AND x.notification_id = notification_timeline.id
        UNION ALL
        -- The client's cancels name the notification in their filter.
        SELECT a.at, 4, '', '', a.action, 0,
            format('by %s: %s (%s routes)', a.actor, a.reason, a.affected)
        FROM herald.audit_log a
        WHERE a.filter @> jsonb_build_object('notification_id', notification_timeline.id)
        UNION ALL
        SELECT r.next_attempt_at, 5, r.route_id, r.channel,
            CASE r.status WHEN 'claimed' THEN 'lease_ends' ELSE 'next_attempt' END,
            r.attempt_count + CASE r.status WHEN 'claimed' THEN 0 ELSE 1 END, r.status
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.next_attempt_at IS NOT NULL
    ) AS e
    ORDER BY e.at, e.ord, e.route_id;
$$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS herald.notification_cancel(text, text, text, timestamptz);
DROP FUNCTION IF EXISTS herald.audit_append(text, text, text, jsonb, integer, jsonb, timestamptz);
DROP TRIGGER IF EXISTS audit_log_stamp ON herald.audit_log;
DROP FUNCTION IF EXISTS herald.audit_log_stamp();
ALTER TABLE herald.audit_log DROP COLUMN login;
GRANT INSERT ON herald.audit_log TO herald_producer, herald_operator;

DROP POLICY IF EXISTS producer_read ON herald.dead_letters;
DROP POLICY IF EXISTS producer_insert ON herald.routes;
DROP POLICY IF EXISTS producer_read ON herald.routes;
DROP POLICY IF EXISTS producer_insert ON herald.records;
DROP POLICY IF EXISTS producer_read ON herald.records;
DROP FUNCTION IF EXISTS herald.notification_is_mine(text);

-- +goose StatementBegin
CREATE FUNCTION herald.notification_owned_by(nid text, who text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM herald.records WHERE notification_id = nid AND producer = who);
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.notification_owned_by(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.notification_owned_by(text, text) TO herald_producer;
CREATE POLICY producer_own ON herald.records TO herald_producer
    USING (producer = current_user)
    WITH CHECK (producer = current_user);
CREATE POLICY producer_read ON herald.routes FOR SELECT TO herald_producer
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = routes.notification_id));
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (herald.notification_owned_by(notification_id, current_user));
CREATE POLICY producer_cancel ON herald.routes FOR UPDATE TO herald_producer
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = routes.notification_id))
    WITH CHECK (status = 'canceled');
CREATE POLICY producer_read ON herald.dead_letters FOR SELECT TO herald_producer
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = dead_letters.notification_id));
GRANT UPDATE ON herald.routes TO herald_producer;

DROP FUNCTION IF EXISTS herald.routes_address_ok(text, text);
ALTER TABLE herald.routes
    DROP CONSTRAINT routes_sms_check,
    DROP CONSTRAINT routes_attempts_check,
    DROP CONSTRAINT routes_channel_check,
    DROP CONSTRAINT routes_priority_check;
ALTER TABLE herald.records
    DROP CONSTRAINT records_producer_check,
    DROP CONSTRAINT records_recipient_user_ids_check,
    DROP CONSTRAINT records_channels_check,
    DROP CONSTRAINT records_audience_kind_check,
    DROP CONSTRAINT records_priority_check;

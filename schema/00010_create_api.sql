-- +goose Up
-- The HTTP API's identity. A producer reaches herald over HTTP
-- with an API key bound to it; the API server connects as a login of its
-- own, a member of herald_api (never as the engine's owning login, which
-- row-level security does not hold), and starts each request's transaction
-- with
--
--     SELECT set_config('herald.api_key', <the request's key>, true)
--
-- From then on herald.acting_producer() names the key's producer, and every
-- policy and function that confines a producer compares with it instead of
-- session_user. Scope is the database's, as for a producer's own login: the
-- API login with no key, or a revoked or unknown one, sees nothing and may
-- do nothing.
--
-- Keys are stored only as their SHA-256; an operator creates and revokes
-- them through the audited functions below (`herald api-keys`). Any number
-- of a producer's keys may be valid at once, so a key is rotated by
-- creating the new one, moving the clients over and revoking the old one.

-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'herald_api') THEN
        BEGIN
            CREATE ROLE herald_api NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL; -- created by a concurrent migration of another database
        END;
    END IF;
    -- The API acts for producers: it holds what herald_producer holds, and
    -- the producer policies (TO herald_producer) hold it in turn.
    IF NOT pg_has_role('herald_api', 'herald_producer', 'USAGE') THEN
        BEGIN
            GRANT herald_producer TO herald_api;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
END;
$$;
-- +goose StatementEnd

GRANT USAGE ON SCHEMA herald TO herald_api;

CREATE TABLE herald.api_keys (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The producer a request with this key acts as.
    producer text NOT NULL,
    -- The key's first characters, for people to tell keys apart; the rest
    -- is never stored.
    key_prefix text NOT NULL,
    -- sha256 of the whole key. The unique index is acting_producer's lookup.
    key_hash bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL DEFAULT session_user,
    revoked_at timestamptz,
    -- Set by the API at most about once a minute per key (api_key_touch):
    -- whether an old key is still in use before it is revoked.
    last_used_at timestamptz,
    CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash),
    CONSTRAINT api_keys_producer_check CHECK (producer ~ '^[A-Za-z0-9._:-]{1,128}$'),
    CONSTRAINT api_keys_key_hash_check CHECK (octet_length(key_hash) = 32),
    CONSTRAINT api_keys_key_prefix_check CHECK (key_prefix ~ '^[A-Za-z0-9_-]{4,32}$')
);

-- Operators and auditors read every table of the schema through 00003's
-- default privileges; nobody else reads this one.

-- acting_producer is the producer the caller acts as: its login
-- (session_user) for an ordinary login, and for a member of herald_api the
-- producer of the valid (not revoked) key whose hash matches the
-- transaction's herald.api_key setting, or NULL when there is none (then
-- every producer policy compares with NULL and holds nothing). A superuser
-- and the schema's owner are members of every role as pg_has_role sees it,
-- and they act as themselves. Policies call it as (SELECT
-- herald.acting_producer()), an InitPlan evaluated once per statement, not
-- once per row.
-- +goose StatementBegin
CREATE FUNCTION herald.acting_producer()
RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    raw text;
    who text;
BEGIN
    -- USAGE: the login inherits herald_api (as `IN ROLE herald_api` gives);
    -- an ordinary producer login is done here, at the cost of one cached
    -- membership check.
    IF NOT pg_has_role(session_user, 'herald_api', 'USAGE')
            OR (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = session_user)
            OR pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER') THEN
        RETURN session_user;
    END IF;
    raw := current_setting('herald.api_key', true);
    IF coalesce(raw, '') = '' THEN
        RETURN NULL;
    END IF;
    SELECT k.producer INTO who
    FROM herald.api_keys k
    WHERE k.key_hash = sha256(convert_to(raw, 'UTF8')) AND k.revoked_at IS NULL;
    RETURN who;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.acting_producer() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.acting_producer() TO herald_producer;

-- ---------------------------------------------------------------------------
-- 00006's producer confinement, with the acting producer in place of
-- session_user. For an ordinary producer login the two are the same, so its
-- behaviour does not change.
-- ---------------------------------------------------------------------------

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_is_mine(nid text)
RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM herald.records WHERE notification_id = nid AND producer = herald.acting_producer());
$$;
-- +goose StatementEnd

ALTER POLICY producer_read ON herald.records
    USING (producer = (SELECT herald.acting_producer()));
ALTER POLICY producer_insert ON herald.records
    WITH CHECK (producer = (SELECT herald.acting_producer()) AND (payload_json::json) IS NOT NULL);
ALTER POLICY producer_own ON herald.recipients
    USING (owner = (SELECT herald.acting_producer())) WITH CHECK (owner = (SELECT herald.acting_producer()));
ALTER POLICY producer_read ON herald.malformed_intents
    USING (submitted_by = (SELECT herald.acting_producer()));

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.recipient_delete(uid text, shared boolean DEFAULT false)
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
    WHERE user_id = uid AND owner = CASE WHEN shared THEN '' ELSE herald.acting_producer() END;
    RETURN FOUND;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_cancel(nid text, actor text, reason text, at timestamptz DEFAULT NULL)
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
    -- coalesce: with no acting producer the comparison is NULL, and so
    -- would the whole condition be, which IF takes for false.
    IF NOT FOUND OR NOT (coalesce(owner = herald.acting_producer(), false)
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

-- ---------------------------------------------------------------------------
-- Keys: created and revoked by operators, audited; touched by the API.
-- ---------------------------------------------------------------------------

-- api_key_create stores a new key of producer, given as its SHA-256 and its
-- display prefix (the key itself never reaches the database through it),
-- and writes the audit row (action api_key_create).
-- +goose StatementBegin
CREATE FUNCTION herald.api_key_create(producer text, key_hash bytea, key_prefix text, actor text, reason text,
    OUT id bigint, OUT created_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF coalesce(api_key_create.actor, '') = '' THEN
        RAISE EXCEPTION 'an api key''s creation must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO herald.api_keys AS k (producer, key_prefix, key_hash)
    VALUES (api_key_create.producer, api_key_create.key_prefix, api_key_create.key_hash)
    RETURNING k.id, k.created_at INTO id, created_at;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (api_key_create.actor, 'api_key_create', coalesce(api_key_create.reason, ''),
        jsonb_build_object('producer', api_key_create.producer), 1,
        jsonb_build_object('key_id', id, 'key_prefix', api_key_create.key_prefix));
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.api_key_create(text, bytea, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.api_key_create(text, bytea, text, text, text) TO herald_operator;

-- api_key_revoke revokes key id of producer from now on and writes the
-- audit row (action api_key_revoke). A key revoked already keeps its
-- revocation time and gets no second row. An id that is not producer's
-- key raises no_data_found.
-- +goose StatementBegin
CREATE FUNCTION herald.api_key_revoke(producer text, id bigint, actor text, reason text)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    was timestamptz;
    prefix text;
    t timestamptz;
BEGIN
    IF coalesce(api_key_revoke.actor, '') = '' THEN
        RAISE EXCEPTION 'an api key''s revocation must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT k.revoked_at, k.key_prefix INTO was, prefix
    FROM herald.api_keys k
    WHERE k.id = api_key_revoke.id AND k.producer = api_key_revoke.producer
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'producer % has no api key %', api_key_revoke.producer, api_key_revoke.id
            USING ERRCODE = 'no_data_found';
    END IF;
    IF was IS NOT NULL THEN
        RETURN was;
    END IF;
    UPDATE herald.api_keys k SET revoked_at = now() WHERE k.id = api_key_revoke.id
    RETURNING k.revoked_at INTO t;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (api_key_revoke.actor, 'api_key_revoke', coalesce(api_key_revoke.reason, ''),
        jsonb_build_object('producer', api_key_revoke.producer), 1,
        jsonb_build_object('key_id', api_key_revoke.id, 'key_prefix', prefix));
    RETURN t;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.api_key_revoke(text, bigint, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.api_key_revoke(text, bigint, text, text) TO herald_operator;

-- api_key_touch records that the transaction's key (herald.api_key) was
-- used: last_used_at, at most once a minute (the API calls it about as
-- often per key, so it is no write per request).
-- +goose StatementBegin
CREATE FUNCTION herald.api_key_touch()
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    UPDATE herald.api_keys k
    SET last_used_at = now()
    WHERE k.key_hash = sha256(convert_to(coalesce(current_setting('herald.api_key', true), ''), 'UTF8'))
        AND k.revoked_at IS NULL
        AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute');
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.api_key_touch() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.api_key_touch() TO herald_api;

-- +goose Down
DROP FUNCTION IF EXISTS herald.api_key_touch();
DROP FUNCTION IF EXISTS herald.api_key_revoke(text, bigint, text, text);
DROP FUNCTION IF EXISTS herald.api_key_create(text, bytea, text, text, text);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_cancel(nid text, actor text, reason text, at timestamptz DEFAULT NULL)
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.recipient_delete(uid text, shared boolean DEFAULT false)
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

ALTER POLICY producer_read ON herald.malformed_intents USING (submitted_by = session_user);
ALTER POLICY producer_own ON herald.recipients USING (owner = session_user) WITH CHECK (owner = session_user);
ALTER POLICY producer_insert ON herald.records
    WITH CHECK (producer = session_user AND (payload_json::json) IS NOT NULL);
ALTER POLICY producer_read ON herald.records USING (producer = session_user);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_is_mine(nid text)
RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM herald.records WHERE notification_id = nid AND producer = session_user);
$$;
-- +goose StatementEnd

DROP FUNCTION IF EXISTS herald.acting_producer();
DROP TABLE IF EXISTS herald.api_keys;
REVOKE USAGE ON SCHEMA herald FROM herald_api;

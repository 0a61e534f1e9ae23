-- callback_subscription_set creates or replaces the caller's subscription:
-- url, the events wanted (empty or NULL = all) and exactly one of secret
-- (whsec_<base64 key of 16 bytes or more>) and bearer_token (16 to 4096
-- printable ASCII characters). The subscription is the acting producer's
-- (acting_producer); for_producer names another producer, which
-- only the engine's login (a member of the schema's owner) may do. It
-- returns whose subscription it wrote, and when. New routes of the producer
-- are watched from the next accept on; routes accepted before are not.
CREATE OR REPLACE FUNCTION herald.callback_subscription_set(
    url text, events text[] DEFAULT '{}', secret text DEFAULT NULL, bearer_token text DEFAULT NULL,
    for_producer text DEFAULT NULL)
RETURNS TABLE (producer text, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    who text := herald.acting_producer();
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

REVOKE ALL ON FUNCTION herald.callback_subscription_set(url text, events text[], secret text, bearer_token text, for_producer text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.callback_subscription_set(url text, events text[], secret text, bearer_token text, for_producer text) TO herald_producer;

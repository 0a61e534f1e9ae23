-- api_key_revoke revokes key id of producer from now on and writes the
-- audit row (action api_key_revoke). A key revoked already keeps its
-- revocation time and gets no second row. An id that is not producer's
-- key raises no_data_found.
CREATE OR REPLACE FUNCTION herald.api_key_revoke(producer text, id bigint, actor text, reason text)
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

REVOKE ALL ON FUNCTION herald.api_key_revoke(producer text, id bigint, actor text, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.api_key_revoke(producer text, id bigint, actor text, reason text) TO herald_operator;

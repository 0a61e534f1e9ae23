-- api_key_create stores a new key of producer, given as its SHA-256 and its
-- display prefix (the key itself never reaches the database through it),
-- and writes the audit row (action api_key_create). The key's created_by is
-- the actor, as the audit row's is: the login that ran it (often one shared
-- operator login) is the audit row's login.
CREATE OR REPLACE FUNCTION herald.api_key_create(producer text, key_hash bytea, key_prefix text, actor text, reason text,
    OUT id bigint, OUT created_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF coalesce(api_key_create.actor, '') = '' THEN
        RAISE EXCEPTION 'an api key''s creation must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO herald.api_keys AS k (producer, key_prefix, key_hash, created_by)
    VALUES (api_key_create.producer, api_key_create.key_prefix, api_key_create.key_hash, api_key_create.actor)
    RETURNING k.id, k.created_at INTO id, created_at;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (api_key_create.actor, 'api_key_create', coalesce(api_key_create.reason, ''),
        jsonb_build_object('producer', api_key_create.producer), 1,
        jsonb_build_object('key_id', id, 'key_prefix', api_key_create.key_prefix));
END;
$$;

REVOKE ALL ON FUNCTION herald.api_key_create(producer text, key_hash bytea, key_prefix text, actor text, reason text, OUT id bigint, OUT created_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.api_key_create(producer text, key_hash bytea, key_prefix text, actor text, reason text, OUT id bigint, OUT created_at timestamp with time zone) TO herald_operator;

-- api_key_touch records that the transaction's key (herald.api_key) was
-- used: last_used_at, at most once a minute (the API calls it about as
-- often per key, so it is no write per request).
CREATE OR REPLACE FUNCTION herald.api_key_touch()
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

REVOKE ALL ON FUNCTION herald.api_key_touch() FROM PUBLIC;
GRANT ALL ON FUNCTION herald.api_key_touch() TO herald_api;

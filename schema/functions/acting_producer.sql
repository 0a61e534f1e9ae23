-- acting_producer is the producer the caller acts as: its login
-- (session_user) for an ordinary login, and for a member of herald_api the
-- producer of the valid (not revoked) key whose hash matches the
-- transaction's herald.api_key setting, or NULL when there is none (then
-- every producer policy compares with NULL and holds nothing). A superuser
-- and the schema's owner are members of every role as pg_has_role sees it,
-- and they act as themselves. Policies call it as (SELECT
-- herald.acting_producer()), an InitPlan evaluated once per statement, not
-- once per row.
CREATE OR REPLACE FUNCTION herald.acting_producer()
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

REVOKE ALL ON FUNCTION herald.acting_producer() FROM PUBLIC;
GRANT ALL ON FUNCTION herald.acting_producer() TO herald_producer;

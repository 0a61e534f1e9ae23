-- campaign_may_act says whether the caller may act for producer's
-- campaigns: it is that producer (its login, or an API key of it), an
-- operator, or the engine (the schema's owner).
CREATE OR REPLACE FUNCTION herald.campaign_may_act(producer text)
RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(campaign_may_act.producer = herald.acting_producer(), false)
        OR pg_has_role(session_user, 'herald_operator', 'MEMBER')
        OR pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER');
$$;

REVOKE ALL ON FUNCTION herald.campaign_may_act(producer text) FROM PUBLIC;

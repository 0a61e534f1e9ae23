-- campaign_join is what accept calls, in its own transaction, before it
-- inserts the records of intents that name a campaign: it creates each
-- (producer, campaign) that does not exist yet with the given send_at (the
-- first element given for a pair wins) and returns every pair's row,
-- locked FOR SHARE until the accept commits. The lock is what makes a
-- cancel safe against a racing accept: the cancel's first step updates the
-- campaign's row, so it waits for every accept that joined before it, and
-- every accept after it sees cancel_requested_at and refuses its intents.
-- Many accepts of one campaign share the lock and do not wait on each
-- other. A producer may join only its own campaigns (the engine, accepting
-- the SQL door's entries, any); another producer's name fails with
-- insufficient_privilege, as the records' insert policy would.
CREATE OR REPLACE FUNCTION herald.campaign_join(producers text[], campaigns text[], send_ats timestamptz[], at timestamptz DEFAULT NULL)
RETURNS TABLE (producer text, campaign text, send_at timestamptz, canceled boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := coalesce(campaign_join.at, now());
BEGIN
    -- The producer itself (its login or API key), or the engine: an
    -- operator may cancel campaigns but submits nothing.
    IF NOT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER')
            AND EXISTS (SELECT 1 FROM unnest(campaign_join.producers) AS p(name)
                WHERE p.name IS DISTINCT FROM herald.acting_producer()) THEN
        RAISE EXCEPTION 'may not submit for another producer' USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO herald.campaigns (producer, campaign, send_at, created_at)
    SELECT DISTINCT ON (w.producer, w.campaign) w.producer, w.campaign, w.send_at, t
    FROM unnest(campaign_join.producers, campaign_join.campaigns, campaign_join.send_ats)
        WITH ORDINALITY AS w(producer, campaign, send_at, n)
    ORDER BY w.producer, w.campaign, w.n
    ON CONFLICT (producer, campaign) DO NOTHING;
    -- In (producer, campaign) order, so that two accepts sharing campaigns
    -- take their locks in the same order.
    RETURN QUERY
    SELECT c.producer, c.campaign, c.send_at, c.cancel_requested_at IS NOT NULL
    FROM herald.campaigns c
    WHERE (c.producer, c.campaign) IN (
        SELECT w.producer, w.campaign FROM unnest(campaign_join.producers, campaign_join.campaigns) AS w(producer, campaign))
    ORDER BY c.producer, c.campaign
    FOR SHARE;
END;
$$;

REVOKE ALL ON FUNCTION herald.campaign_join(producers text[], campaigns text[], send_ats timestamp with time zone[], at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.campaign_join(producers text[], campaigns text[], send_ats timestamp with time zone[], at timestamp with time zone) TO herald_producer;

-- callback_subscription_get returns the caller's own callback subscription
-- (acting_producer's), without its secret or bearer token: auth says only
-- which of them is set ('secret' or 'bearer_token'). No row when the
-- producer has none. A producer's login may not read the two secret
-- columns (only the engine's callback channel does); this function reads
-- them for it just far enough to say which one is set.
CREATE OR REPLACE FUNCTION herald.callback_subscription_get()
RETURNS TABLE (producer text, url text, events text[], auth text, created_at timestamptz, updated_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.producer, s.url, s.events,
        CASE WHEN s.secret IS NOT NULL THEN 'secret' ELSE 'bearer_token' END,
        s.created_at, s.updated_at
    FROM herald.callback_subscriptions s
    WHERE s.producer = herald.acting_producer();
$$;

REVOKE ALL ON FUNCTION herald.callback_subscription_get() FROM PUBLIC;
GRANT ALL ON FUNCTION herald.callback_subscription_get() TO herald_producer;

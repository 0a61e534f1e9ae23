-- notify_topic returns the name of the NOTIFY topic base ('herald_routes',
-- 'herald_intake', 'herald_routing', 'herald_receipts'): what the engine
-- LISTENs on and its functions NOTIFY. Only the owner executes it.
CREATE OR REPLACE FUNCTION herald.notify_topic(base text) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT notify_topic.base || '_' || s.token FROM herald.notify_secret s;
$$;

REVOKE ALL ON FUNCTION herald.notify_topic(base text) FROM PUBLIC;

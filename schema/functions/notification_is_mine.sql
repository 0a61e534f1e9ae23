-- notification_is_mine says whether notification nid is the acting
-- producer's (acting_producer): what the producer policies of the tables
-- that hang off records check. It reads records as the owner, so a policy
-- that calls it does not recurse into records' own policies.
CREATE OR REPLACE FUNCTION herald.notification_is_mine(nid text)
RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM herald.records WHERE notification_id = nid AND producer = herald.acting_producer());
$$;

REVOKE ALL ON FUNCTION herald.notification_is_mine(nid text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.notification_is_mine(nid text) TO herald_producer;

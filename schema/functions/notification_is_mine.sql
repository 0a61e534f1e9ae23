-- ---------------------------------------------------------------------------
-- 00006's producer confinement, with the acting producer in place of
-- session_user. For an ordinary producer login the two are the same, so its
-- behaviour does not change.
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION herald.notification_is_mine(nid text)
RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM herald.records WHERE notification_id = nid AND producer = herald.acting_producer());
$$;

REVOKE ALL ON FUNCTION herald.notification_is_mine(nid text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.notification_is_mine(nid text) TO herald_producer;

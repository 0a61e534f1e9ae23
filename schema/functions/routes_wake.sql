-- routes_wake sends the accept path's wake-up hint (the delivery channel
-- of new routes, '' for several) on the dispatchers' topic, or, when vet
-- is true (the routes were written by a login row security applies to,
-- so they wait in lane '!vet'), on the vetter's. A producer's Submit runs
-- the accept in its own transaction and login, so it notifies through
-- this function, which knows the topics' names and tells them no one. A
-- hint only wakes a reader to look: a producer that sends one by hand
-- learns nothing and moves nothing.
CREATE OR REPLACE FUNCTION herald.routes_wake(payload text, vet boolean) RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_notify(herald.notify_topic(CASE WHEN routes_wake.vet THEN 'herald_vet' ELSE 'herald_routes' END),
        routes_wake.payload);
$$;

REVOKE ALL ON FUNCTION herald.routes_wake(payload text, vet boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.routes_wake(payload text, vet boolean) TO herald_producer;

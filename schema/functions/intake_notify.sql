CREATE OR REPLACE FUNCTION herald.intake_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- One wake-up per statement, not per row: a bulk INSERT sends one hint.
    PERFORM pg_notify(herald.notify_topic('herald_intake'), '');
    RETURN NULL;
END;
$$;

-- Every function that notifies a fixed topic names it through
-- notify_topic instead. The trigger functions that producers, relays and
-- operators fire by their writes run as the owner, so that notify_topic
-- stays the owner's alone.
ALTER FUNCTION herald.intake_notify() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

REVOKE ALL ON FUNCTION herald.intake_notify() FROM PUBLIC;

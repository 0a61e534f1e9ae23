-- callback_subscription_delete removes the caller's subscription (for_producer:
-- as in callback_subscription_set) and says whether there was one. Callbacks
-- already created are still delivered; a pending one whose producer has no
-- subscription left is dead-lettered by the callback channel, with a hint.
CREATE OR REPLACE FUNCTION herald.callback_subscription_delete(for_producer text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    who text := herald.acting_producer();
BEGIN
    IF for_producer IS NOT NULL AND for_producer <> who THEN
        IF NOT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER') THEN
            RAISE EXCEPTION 'only the engine''s login may delete another producer''s callback subscription'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        who := for_producer;
    END IF;
    DELETE FROM herald.callback_subscriptions WHERE producer = who;
    RETURN FOUND;
END;
$$;

REVOKE ALL ON FUNCTION herald.callback_subscription_delete(for_producer text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.callback_subscription_delete(for_producer text) TO herald_producer;

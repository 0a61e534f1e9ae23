-- The inbox wakes the matcher only for what it has to do now. A receipt
-- the receipts endpoint or an SMPP bind stores is matched in the
-- transaction that stores it (receipt.Matcher.StoreMatched) and inserted
-- already decided, or new and due after its backoff; only a receipt
-- inserted new and due (the SQL door's, or one stored for the matcher
-- because matching it failed) needs the matcher at once. The trigger sees
-- the statement's rows (a transition table) and sends its one NOTIFY only
-- if one of them is such a receipt: a NOTIFY wakes every listening
-- connection, and a round of the matcher is a transaction of its own.
CREATE OR REPLACE FUNCTION herald.delivery_receipts_notify() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted WHERE state = 'new' AND next_match_at <= now()) THEN
        PERFORM pg_notify(herald.notify_topic('herald_receipts'), '');
    END IF;
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION herald.delivery_receipts_notify() FROM PUBLIC;

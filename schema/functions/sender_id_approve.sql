-- sender_id_approve approves sender for producer's intents (their
-- from_sender), with a note, and writes one audit row. Approving a sender
-- already approved changes nothing and writes no row; it returns whether
-- the sender is newly approved. The sender's form is the table's check.
CREATE OR REPLACE FUNCTION herald.sender_id_approve(producer text, sender text, actor text, note text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
BEGIN
    IF coalesce(sender_id_approve.actor, '') = '' THEN
        RAISE EXCEPTION 'an approval must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO herald.sender_ids (producer, sender, note, approved_by)
    VALUES (sender_id_approve.producer, sender_id_approve.sender, coalesce(sender_id_approve.note, ''),
        sender_id_approve.actor)
    ON CONFLICT ON CONSTRAINT sender_ids_pkey DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
        VALUES (sender_id_approve.actor, 'sender_approve', coalesce(sender_id_approve.note, ''),
            jsonb_build_object('producer', sender_id_approve.producer, 'sender', sender_id_approve.sender), 1, '{}');
    END IF;
    RETURN n > 0;
END;
$$;

REVOKE ALL ON FUNCTION herald.sender_id_approve(producer text, sender text, actor text, note text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.sender_id_approve(producer text, sender text, actor text, note text) TO herald_operator;

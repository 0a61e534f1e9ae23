-- sender_id_revoke withdraws the approval of sender for producer: intents
-- naming it are refused from then on (routes already accepted keep it).
-- One audit row when it was approved; it returns whether it was.
CREATE OR REPLACE FUNCTION herald.sender_id_revoke(producer text, sender text, actor text, reason text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    gone herald.sender_ids;
BEGIN
    IF coalesce(sender_id_revoke.actor, '') = '' THEN
        RAISE EXCEPTION 'a revoke must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM herald.sender_ids AS s
    WHERE s.producer = sender_id_revoke.producer AND s.sender = sender_id_revoke.sender
    RETURNING s.* INTO gone;
    IF gone.sender IS NULL THEN
        RETURN false;
    END IF;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (sender_id_revoke.actor, 'sender_revoke', coalesce(sender_id_revoke.reason, ''),
        jsonb_build_object('producer', gone.producer, 'sender', gone.sender), 1,
        jsonb_build_object('approved_at', gone.approved_at, 'approved_by', gone.approved_by, 'note', gone.note));
    RETURN true;
END;
$$;

REVOKE ALL ON FUNCTION herald.sender_id_revoke(producer text, sender text, actor text, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.sender_id_revoke(producer text, sender text, actor text, reason text) TO herald_operator;

-- held_release puts held intents back: an intent held before it was
-- stored onto the intake, reviewed, in the name of the login that
-- submitted it; a stored one's held routes into their channel's queue.
-- One audit row; it returns each released id with its new intake entry
-- (NULL for a stored notification). Ids not held (released or rejected
-- meanwhile, or unknown) are skipped: the lock of the DELETE makes a
-- release and a reject of one id race safely, one wins.
CREATE OR REPLACE FUNCTION herald.held_release(ids bigint[], actor text, reason text)
RETURNS TABLE (held_id bigint, intake_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    h record;
    moved jsonb := '[]';
BEGIN
    IF coalesce(held_release.actor, '') = '' THEN
        RAISE EXCEPTION 'a release must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR h IN DELETE FROM herald.held_intents AS x WHERE x.id = ANY(ids)
            RETURNING x.id, x.body, x.submitted_by, x.notification_id LOOP
        intake_id := NULL;
        IF h.notification_id IS NULL THEN
            INSERT INTO herald.intake AS e (body, submitted_by, reviewed) VALUES (h.body, h.submitted_by, true)
            RETURNING e.id INTO intake_id;
        ELSE
            UPDATE herald.routes AS r SET lane = '', updated_at = now()
            WHERE r.notification_id = h.notification_id AND r.lane = '!held' AND r.finished_at IS NULL;
        END IF;
        held_id := h.id;
        moved := moved || jsonb_build_object('held_id', held_id, 'intake_id', intake_id, 'notification_id', h.notification_id);
        RETURN NEXT;
    END LOOP;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (held_release.actor, 'held_release', coalesce(held_release.reason, ''),
        jsonb_build_object('held_ids', to_jsonb(ids)), jsonb_array_length(moved), jsonb_build_object('released', moved));
END;
$$;

REVOKE ALL ON FUNCTION herald.held_release(ids bigint[], actor text, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.held_release(ids bigint[], actor text, reason text) TO herald_operator;

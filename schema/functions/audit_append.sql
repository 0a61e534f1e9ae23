-- audit_append writes one operator audit row (a replay batch, a replay that
-- moved nothing, a bulk replay queued). Only the replay actions: a cancel's
-- row is written by notification_cancel in the cancel's own statement, so
-- no role can append a "cancel" that did not happen.
CREATE OR REPLACE FUNCTION herald.audit_append(
    actor text, action text, reason text, filter jsonb, affected integer, details jsonb,
    at timestamptz DEFAULT NULL, OUT id bigint, OUT logged_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF action NOT IN ('dead_letter_replay', 'dead_letter_replay_queued') THEN
        RAISE EXCEPTION 'audit_append writes replay actions only, not %', action
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(actor, '') = '' THEN
        RAISE EXCEPTION 'an audit row must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO herald.audit_log (at, actor, action, reason, filter, affected, details)
    VALUES (coalesce(audit_append.at, now()), audit_append.actor, audit_append.action,
        coalesce(audit_append.reason, ''), coalesce(audit_append.filter, '{}'),
        audit_append.affected, coalesce(audit_append.details, '{}'))
    RETURNING audit_log.id, audit_log.at INTO id, logged_at;
END;
$$;

REVOKE ALL ON FUNCTION herald.audit_append(actor text, action text, reason text, filter jsonb, affected integer, details jsonb, at timestamp with time zone, OUT id bigint, OUT logged_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.audit_append(actor text, action text, reason text, filter jsonb, affected integer, details jsonb, at timestamp with time zone, OUT id bigint, OUT logged_at timestamp with time zone) TO herald_operator;

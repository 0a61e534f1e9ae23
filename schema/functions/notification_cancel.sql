-- A cancel racing a route's move (its completion) is tried again.
CREATE OR REPLACE FUNCTION herald.notification_cancel(nid text, actor text, reason text, at timestamptz DEFAULT NULL)
RETURNS TABLE (route_id text, channel text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := CASE WHEN herald.caller_is_engine() THEN coalesce(notification_cancel.at, now()) ELSE now() END;
    owner text;
    moved jsonb;
    n integer;
    tries integer := 0;
BEGIN
    SELECT producer INTO owner FROM herald.records WHERE notification_id = nid;
    -- coalesce: with no acting producer the comparison is NULL, and so
    -- would the whole condition be, which IF takes for false.
    IF NOT FOUND OR NOT (coalesce(owner = herald.acting_producer(), false)
            OR pg_has_role(session_user, 'herald_operator', 'MEMBER')
            OR pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER')) THEN
        RAISE EXCEPTION 'notification % not found', nid USING ERRCODE = 'no_data_found';
    END IF;
    IF coalesce(notification_cancel.actor, '') = '' THEN
        RAISE EXCEPTION 'a cancel must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    LOOP
        BEGIN
            WITH c AS (
                UPDATE herald.routes r
                SET status = 'canceled', next_attempt_at = NULL, canceled_at = t, updated_at = t,
                    finished_at = t
                WHERE r.notification_id = nid AND r.status IN ('pending', 'claimed', 'failed')
                    AND r.finished_at IS NULL
                RETURNING r.route_id, r.channel
            )
            SELECT coalesce(jsonb_agg(jsonb_build_object('route_id', c.route_id, 'channel', c.channel) ORDER BY c.route_id), '[]'),
                count(*)
            INTO moved, n
            FROM c;
            EXIT;
        EXCEPTION WHEN serialization_failure THEN
            -- A route of the notification finished (moved) while this
            -- statement waited for it: again, with a new snapshot, in read
            -- committed. Under a snapshot isolation the caller retries.
            tries := tries + 1;
            IF tries >= 5 OR current_setting('transaction_isolation') <> 'read committed' THEN
                RAISE;
            END IF;
        END;
    END LOOP;
    INSERT INTO herald.audit_log (at, actor, action, reason, filter, affected, details)
    VALUES (t, notification_cancel.actor, 'cancel', coalesce(notification_cancel.reason, ''),
        jsonb_build_object('notification_id', nid), n,
        jsonb_build_object('route_ids', (SELECT coalesce(jsonb_agg(e -> 'route_id'), '[]') FROM jsonb_array_elements(moved) e)));
    RETURN QUERY SELECT e ->> 'route_id', e ->> 'channel' FROM jsonb_array_elements(moved) e;
END;
$$;

REVOKE ALL ON FUNCTION herald.notification_cancel(nid text, actor text, reason text, at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.notification_cancel(nid text, actor text, reason text, at timestamp with time zone) TO herald_producer;
GRANT ALL ON FUNCTION herald.notification_cancel(nid text, actor text, reason text, at timestamp with time zone) TO herald_operator;

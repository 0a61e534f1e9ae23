-- held_reject refuses held intents for good: each is recorded in
-- malformed_intents ("held:<id>", content_blocked, the rule and the
-- operator's reason), where its producer reads why, and a stored
-- notification's held routes become dead letters (content_blocked). One
-- audit row; it returns the ids rejected.
CREATE OR REPLACE FUNCTION herald.held_reject(ids bigint[], actor text, reason text)
RETURNS TABLE (held_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    h record;
    msg text;
    gone bigint[] := '{}';
BEGIN
    IF coalesce(held_reject.actor, '') = '' THEN
        RAISE EXCEPTION 'a reject must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR h IN DELETE FROM herald.held_intents AS x WHERE x.id = ANY(ids) RETURNING x.* LOOP
        msg := format('rejected after review by %s (%s): matched %s (content_blocked)', held_reject.actor,
            coalesce(nullif(held_reject.reason, ''), 'no reason given'), h.rule);
        INSERT INTO herald.malformed_intents (stream_entry_id, notification_type, producer, idempotency_key,
            failure_code, failure_message, raw_fields, recorded_at, submitted_by)
        VALUES ('held:' || h.id, h.notification_type, h.producer, h.idempotency_key, 'content_blocked',
            msg, jsonb_build_object('body', h.body), now(), h.submitted_by);
        IF h.notification_id IS NOT NULL THEN
            WITH dead AS (
                UPDATE herald.routes AS r
                SET status = 'dead_letter', next_attempt_at = NULL, lane = '', dead_lettered_at = now(),
                    last_error_classification = 'content_blocked', last_error_message = msg,
                    last_error_at = now(), updated_at = now()
                WHERE r.notification_id = h.notification_id AND r.lane = '!held' AND r.finished_at IS NULL
                RETURNING r.notification_id, r.route_id, r.channel, r.recipient_ref, r.attempt_count, r.max_attempts
            )
            INSERT INTO herald.dead_letters (notification_id, route_id, channel, recipient_ref, final_attempt_count,
                max_attempts, failure_classification, failure_message, recovery_hint, created_at)
            SELECT d.notification_id, d.route_id, d.channel, d.recipient_ref, d.attempt_count, d.max_attempts,
                'content_blocked', msg, 'an operator rejected the content after review; submit a new intent', now()
            FROM dead AS d
            ON CONFLICT (notification_id, route_id) DO NOTHING;
        END IF;
        gone := gone || h.id;
        held_id := h.id;
        RETURN NEXT;
    END LOOP;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (held_reject.actor, 'held_reject', coalesce(held_reject.reason, ''),
        jsonb_build_object('held_ids', to_jsonb(ids)), cardinality(gone), jsonb_build_object('rejected', to_jsonb(gone)));
END;
$$;

REVOKE ALL ON FUNCTION herald.held_reject(ids bigint[], actor text, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.held_reject(ids bigint[], actor text, reason text) TO herald_operator;

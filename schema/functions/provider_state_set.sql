-- provider_state_set takes a provider out of routing, or puts it back,
-- without a providers file: enabled (routing may send it new attempts),
-- draining (routing sends it none; the attempts it already holds, in
-- flight or waiting for its cap, finish there) or disabled (it gets
-- nothing at all: waiting routes go back to be routed afresh). A change
-- writes one audit row (action provider_state), bumps routing_state's
-- version and NOTIFYs herald_routing, so every serve follows it within
-- seconds. Taking a provider out needs a reason. Setting the state it has
-- already changes nothing and writes nothing (changed is false; changed_at
-- is when it got that state, or was added). An
-- unknown provider raises no_data_found.
CREATE OR REPLACE FUNCTION herald.provider_state_set(provider text, state text, actor text, reason text)
RETURNS TABLE (name text, new_state text, previous_state text, changed boolean, changed_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    old herald.providers;
BEGIN
    IF coalesce(provider_state_set.actor, '') = '' THEN
        RAISE EXCEPTION 'a provider state change must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF provider_state_set.state IS NULL OR provider_state_set.state NOT IN ('enabled', 'draining', 'disabled') THEN
        RAISE EXCEPTION 'state % is not enabled, draining or disabled', provider_state_set.state
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF provider_state_set.state <> 'enabled' AND coalesce(btrim(provider_state_set.reason), '') = '' THEN
        RAISE EXCEPTION 'taking provider % out of routing needs a reason', provider_state_set.provider
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The routing lock first, as routing_apply takes it: one change to the
    -- routing table at a time, and each one's version its own.
    PERFORM 1 FROM herald.routing_state FOR UPDATE;
    SELECT p.* INTO old FROM herald.providers p WHERE p.name = provider_state_set.provider FOR UPDATE;
    IF old.name IS NULL THEN
        RAISE EXCEPTION 'no provider %', provider_state_set.provider USING ERRCODE = 'no_data_found';
    END IF;
    IF old.state = provider_state_set.state THEN
        RETURN QUERY SELECT old.name, old.state, old.state, false, coalesce(old.state_changed_at, old.updated_at);
        RETURN;
    END IF;
    UPDATE herald.providers AS p
    SET state = provider_state_set.state,
        state_reason = CASE WHEN provider_state_set.state = 'enabled' THEN ''
            ELSE btrim(provider_state_set.reason) END,
        state_changed_at = now()
    WHERE p.name = old.name;
    UPDATE herald.routing_state SET version = version + 1;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (provider_state_set.actor, 'provider_state', coalesce(provider_state_set.reason, ''),
        jsonb_build_object('provider', old.name), 1,
        jsonb_build_object('state', provider_state_set.state, 'previous_state', old.state));
    PERFORM pg_notify(herald.notify_topic('herald_routing'), '');
    RETURN QUERY SELECT old.name, provider_state_set.state, old.state, true, now();
END;
$$;

REVOKE ALL ON FUNCTION herald.provider_state_set(provider text, state text, actor text, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.provider_state_set(provider text, state text, actor text, reason text) TO herald_operator;

-- routing_apply replaces every provider and rule with doc's, in one
-- transaction, and says what changed. doc is {"providers": [...], "rules":
-- [...]}, each element keyed by its table's column names (internal/routing
-- writes it from the YAML file, validated; this function checks again what
-- the tables cannot: every rule names providers of its own channel). With
-- dry_run it changes nothing and only reports. An apply that changed
-- something writes an audit row (action routing_apply, stamped with the
-- login), bumps routing_state.version and NOTIFYs herald_routing.
CREATE OR REPLACE FUNCTION herald.routing_apply(doc jsonb, actor text, reason text, dry_run boolean DEFAULT false)
RETURNS TABLE (kind text, name text, change text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    bad text;
    n integer;
BEGIN
    IF coalesce(routing_apply.actor, '') = '' THEN
        RAISE EXCEPTION 'an apply must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One apply at a time, so each one's diff is against what it replaces.
    PERFORM 1 FROM herald.routing_state FOR UPDATE;

    CREATE TEMP TABLE new_providers ON COMMIT DROP AS
    SELECT * FROM jsonb_populate_recordset(NULL::herald.providers, coalesce(doc -> 'providers', '[]'));
    -- A provider's state is not the file's (provider_state_set sets it):
    -- a new provider starts enabled, and an existing one keeps its state.
    UPDATE new_providers SET updated_at = now(), state = 'enabled', state_reason = '', state_changed_at = NULL;
    CREATE TEMP TABLE new_rules ON COMMIT DROP AS
    SELECT * FROM jsonb_populate_recordset(NULL::herald.routing_rules, coalesce(doc -> 'rules', '[]'));

    SELECT format('rules.%s[%s].providers: %s is not a provider of channel %s', r.channel, r.position, p, r.channel)
    INTO bad
    FROM new_rules r, unnest(r.providers) AS p
    WHERE NOT EXISTS (SELECT 1 FROM new_providers np WHERE np.name = p AND np.channel = r.channel)
    LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION '%', bad USING ERRCODE = 'foreign_key_violation';
    END IF;

    CREATE TEMP TABLE changes ON COMMIT DROP AS
    SELECT 'provider'::text AS kind, coalesce(o.name, np.name) AS name,
        CASE WHEN o.name IS NULL THEN 'added' WHEN np.name IS NULL THEN 'removed' ELSE 'changed' END AS change
    FROM herald.providers o
    FULL JOIN new_providers np ON np.name = o.name
    WHERE o.name IS NULL OR np.name IS NULL
        OR (o.channel, o.driver, o.settings, o.concurrency, o.cap_per_second,
            o.circuit_failure_ratio, o.circuit_min_attempts, o.circuit_cooldown)
        IS DISTINCT FROM (np.channel, np.driver, np.settings, np.concurrency, np.cap_per_second,
            np.circuit_failure_ratio, np.circuit_min_attempts, np.circuit_cooldown)
    UNION ALL
    SELECT 'rule', coalesce(o.channel, nr.channel) || '/' || coalesce(o.name, nr.name),
        CASE WHEN o.name IS NULL THEN 'added' WHEN nr.name IS NULL THEN 'removed' ELSE 'changed' END
    FROM herald.routing_rules o
    FULL JOIN new_rules nr ON nr.channel = o.channel AND nr.name = o.name
    WHERE o.name IS NULL OR nr.name IS NULL
        OR (o.position, o.match_prefixes, o.match_producers, o.match_types, o.match_priorities,
            o.strategy, o.providers, o.weights)
        IS DISTINCT FROM (nr.position, nr.match_prefixes, nr.match_producers, nr.match_types, nr.match_priorities,
            nr.strategy, nr.providers, nr.weights);

    SELECT count(*) INTO n FROM changes;
    IF NOT dry_run AND n > 0 THEN
        DELETE FROM herald.routing_rules;
        DELETE FROM herald.providers p WHERE NOT EXISTS (SELECT 1 FROM new_providers np WHERE np.name = p.name);
        INSERT INTO herald.providers AS p
        SELECT * FROM new_providers
        ON CONFLICT (name) DO UPDATE
        SET channel = excluded.channel, driver = excluded.driver, settings = excluded.settings,
            concurrency = excluded.concurrency, cap_per_second = excluded.cap_per_second,
            circuit_failure_ratio = excluded.circuit_failure_ratio,
            circuit_min_attempts = excluded.circuit_min_attempts,
            circuit_cooldown = excluded.circuit_cooldown, updated_at = excluded.updated_at
        WHERE (p.channel, p.driver, p.settings, p.concurrency, p.cap_per_second,
                p.circuit_failure_ratio, p.circuit_min_attempts, p.circuit_cooldown)
            IS DISTINCT FROM (excluded.channel, excluded.driver, excluded.settings, excluded.concurrency,
                excluded.cap_per_second, excluded.circuit_failure_ratio, excluded.circuit_min_attempts,
                excluded.circuit_cooldown);
        INSERT INTO herald.routing_rules SELECT * FROM new_rules;
        INSERT INTO herald.provider_pacing (provider) SELECT np.name FROM new_providers np ON CONFLICT DO NOTHING;
        INSERT INTO herald.provider_circuits (provider) SELECT np.name FROM new_providers np ON CONFLICT DO NOTHING;
        UPDATE herald.routing_state
        SET version = version + 1, applied_at = now(), applied_by = session_user;
        INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
        VALUES (routing_apply.actor, 'routing_apply', coalesce(routing_apply.reason, ''), '{}', n,
            jsonb_build_object('changes', (SELECT jsonb_agg(to_jsonb(c) ORDER BY c.kind, c.name) FROM changes c)));
        PERFORM pg_notify(herald.notify_topic('herald_routing'), '');
    END IF;
    RETURN QUERY SELECT c.kind, c.name, c.change FROM changes c ORDER BY c.kind, c.name;
END;
$$;

REVOKE ALL ON FUNCTION herald.routing_apply(doc jsonb, actor text, reason text, dry_run boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.routing_apply(doc jsonb, actor text, reason text, dry_run boolean) TO herald_operator;

-- +goose Up
-- The delivery plane's first part: providers, routing rules,
-- throughput caps and provider health, every part data in Postgres.
--
-- A provider is a named instance of a driver for one channel ("sms/acme"
-- of driver sms-http). Routing rules, ordered per channel, pick a route's
-- provider where its destination is known (after directory resolution).
-- `herald providers apply -f FILE` writes both through routing_apply, in
-- one transaction, audited; every serve LISTENs on herald_routing and also
-- rereads routing_state's version every few seconds.
--
-- Credentials are never rows: settings hold references only ({"env": ...}
-- or {"file": ...}), resolved by each serve process.

CREATE TABLE herald.providers (
    -- "<channel>/<name>", e.g. "sms/acme".
    name text PRIMARY KEY,
    channel text NOT NULL,
    driver text NOT NULL,
    -- The driver's settings as the YAML file gives them ({"timeout": "10s",
    -- "sms_http": {...}}); secrets as references only.
    settings jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- Deliveries in flight per serve process; 0 = the channel's concurrency.
    concurrency integer NOT NULL DEFAULT 0,
    -- Submissions per second across every serve process together; 0 = no cap.
    cap_per_second integer NOT NULL DEFAULT 0,
    -- The circuit: opens when at least circuit_min_attempts attempts since it
    -- last closed failed transiently at circuit_failure_ratio or more, for
    -- circuit_cooldown.
    circuit_failure_ratio real NOT NULL DEFAULT 0.5,
    circuit_min_attempts integer NOT NULL DEFAULT 20,
    circuit_cooldown interval NOT NULL DEFAULT '30 seconds',
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT providers_channel_check CHECK (channel IN ('email', 'sms', 'webhook')),
    CONSTRAINT providers_name_check CHECK (
        starts_with(name, channel || '/') AND name ~ '^[a-z]+/[a-z0-9][a-z0-9_.-]{0,62}$'),
    CONSTRAINT providers_driver_check CHECK (driver IN ('webhook', 'smtp', 'sms-http', 'log', 'discard')),
    CONSTRAINT providers_settings_check CHECK (jsonb_typeof(settings) = 'object'),
    CONSTRAINT providers_concurrency_check CHECK (concurrency BETWEEN 0 AND 10000),
    CONSTRAINT providers_cap_check CHECK (cap_per_second BETWEEN 0 AND 1000000),
    CONSTRAINT providers_circuit_check CHECK (
        circuit_failure_ratio > 0 AND circuit_failure_ratio <= 1
        AND circuit_min_attempts >= 1
        AND circuit_cooldown >= interval '1 second')
);

-- Rules, in order per channel: the first whose every given matcher matches
-- decides. A matcher is a list; an empty list matches anything. A route that
-- matches no rule of a channel that has rules is dead-lettered as no_route.
CREATE TABLE herald.routing_rules (
    channel text NOT NULL,
    position integer NOT NULL,
    name text NOT NULL,
    -- Destination prefixes: E.164 ("+254", "+25471") for sms, domains
    -- ("@example.com") for email, URL prefixes for webhook.
    match_prefixes text[] NOT NULL DEFAULT '{}',
    match_producers text[] NOT NULL DEFAULT '{}',
    match_types text[] NOT NULL DEFAULT '{}',
    match_priorities text[] NOT NULL DEFAULT '{}',
    -- failover: in order, the next one after a transient failure or an open
    -- circuit; weighted: a share each (weights, same length as providers).
    strategy text NOT NULL,
    providers text[] NOT NULL,
    weights integer[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (channel, position),
    CONSTRAINT routing_rules_name_key UNIQUE (channel, name),
    CONSTRAINT routing_rules_channel_check CHECK (channel IN ('email', 'sms', 'webhook')),
    CONSTRAINT routing_rules_position_check CHECK (position >= 1),
    CONSTRAINT routing_rules_name_check CHECK (name <> ''),
    CONSTRAINT routing_rules_priorities_check CHECK (match_priorities <@ ARRAY['transactional', 'bulk']),
    CONSTRAINT routing_rules_strategy_check CHECK (strategy IN ('failover', 'weighted')),
    CONSTRAINT routing_rules_providers_check CHECK (cardinality(providers) >= 1),
    CONSTRAINT routing_rules_weights_check CHECK (
        (strategy = 'failover' AND cardinality(weights) = 0)
        OR (strategy = 'weighted' AND cardinality(weights) = cardinality(providers)
            AND 0 < ALL (weights)))
);

-- One row: the version every serve compares with its own, bumped by each
-- apply that changed something.
CREATE TABLE herald.routing_state (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version bigint NOT NULL DEFAULT 0,
    applied_at timestamptz,
    applied_by text NOT NULL DEFAULT ''
);
INSERT INTO herald.routing_state DEFAULT VALUES;

-- A capped provider's send slots, shared by every serve process: the
-- earliest time the next submission may go (the "theoretical arrival time"
-- of the generic cell rate algorithm). A process takes n slots in one
-- UPDATE, spaced 1/cap apart from greatest(next_slot_at, now()).
CREATE TABLE herald.provider_pacing (
    provider text PRIMARY KEY REFERENCES herald.providers (name) ON DELETE CASCADE,
    next_slot_at timestamptz NOT NULL DEFAULT '-infinity'
);

-- Recent outcomes per provider in ten-second buckets: every serve adds its
-- own counts every second or two (one upsert per provider with traffic, not
-- a write per attempt). Kept a day.
CREATE TABLE herald.provider_health (
    provider text NOT NULL,
    bucket timestamptz NOT NULL,
    delivered bigint NOT NULL DEFAULT 0,
    transient bigint NOT NULL DEFAULT 0,
    permanent bigint NOT NULL DEFAULT 0,
    -- Routes that waited for the provider's cap (parked in its lane).
    throttled bigint NOT NULL DEFAULT 0,
    latency_seconds_sum double precision NOT NULL DEFAULT 0,
    latency_seconds_max double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (provider, bucket)
);

-- Each provider's circuit, as all serve processes see it.
CREATE TABLE herald.provider_circuits (
    provider text PRIMARY KEY REFERENCES herald.providers (name) ON DELETE CASCADE,
    state text NOT NULL DEFAULT 'closed',
    -- Outcomes since this moment decide whether it opens (it is the last
    -- close, so the failures that opened it are not counted again).
    since timestamptz NOT NULL DEFAULT now(),
    open_until timestamptz,
    reason text NOT NULL DEFAULT '',
    CONSTRAINT provider_circuits_state_check CHECK (state IN ('closed', 'open')),
    CONSTRAINT provider_circuits_open_check CHECK ((state = 'open') = (open_until IS NOT NULL))
);

-- The circuits' history: every open and close.
CREATE TABLE herald.provider_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider text NOT NULL,
    at timestamptz NOT NULL DEFAULT now(),
    event text NOT NULL,
    detail text NOT NULL DEFAULT '',
    CONSTRAINT provider_events_event_check CHECK (event IN ('circuit_opened', 'circuit_closed'))
);
CREATE INDEX provider_events_provider_at_idx ON herald.provider_events (provider, at DESC);

-- Routes learn their provider.
--   lane: '' for the channel's queue; a capped provider's name while the
--     route waits in that provider's paced queue. Claims read one lane, so a
--     capped provider's backlog never stands in front of routes bound for
--     other providers, and waiting costs no claim-and-release churn: a route
--     is moved into its lane once, and claimed from it at the cap's pace.
--   providers: the provider of each attempt, in order (NULL while none, and
--     always NULL on a channel with no providers table entries, so routes of
--     channels configured only in serve's file pay nothing).
ALTER TABLE herald.routes
    ADD COLUMN lane text NOT NULL DEFAULT '',
    ADD COLUMN providers text[];
ALTER TABLE herald.dead_letters
    ADD COLUMN provider text NOT NULL DEFAULT '';

-- routes_due_idx gains the lane, after the channel: the claim reads
-- (channel, lane, priority) ranges. Producers insert routes with lane ''
-- only (the default; their insert policy below).
DROP INDEX herald.routes_due_idx;
CREATE INDEX routes_due_idx ON herald.routes (channel, lane, priority, next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;

-- A producer's direct INSERT keeps lane '' and no providers: 00006's policy
-- with those two conditions added.
DROP POLICY producer_insert ON herald.routes;
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (
        herald.notification_is_mine(notification_id)
        AND herald.routes_address_ok(channel, recipient_ref)
        AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '' AND providers IS NULL);

-- routing_apply replaces every provider and rule with doc's, in one
-- transaction, and says what changed. doc is {"providers": [...], "rules":
-- [...]}, each element keyed by its table's column names (internal/routing
-- writes it from the YAML file, validated; this function checks again what
-- the tables cannot: every rule names providers of its own channel). With
-- dry_run it changes nothing and only reports. An apply that changed
-- something writes an audit row (action routing_apply, stamped with the
-- login), bumps routing_state.version and NOTIFYs herald_routing.
-- +goose StatementBegin
CREATE FUNCTION herald.routing_apply(doc jsonb, actor text, reason text, dry_run boolean DEFAULT false)
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
    PERFORM pg_advisory_xact_lock(hashtext('herald.routing_apply'));

    CREATE TEMP TABLE new_providers ON COMMIT DROP AS
    SELECT * FROM jsonb_populate_recordset(NULL::herald.providers, coalesce(doc -> 'providers', '[]'));
    UPDATE new_providers SET updated_at = now();
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
        PERFORM pg_notify('herald_routing', '');
    END IF;
    RETURN QUERY SELECT c.kind, c.name, c.change FROM changes c ORDER BY c.kind, c.name;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.routing_apply(jsonb, text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.routing_apply(jsonb, text, text, boolean) TO herald_operator;

-- What an operator reads about providers: settings (references only, never
-- secrets), the circuit, and the last five minutes' outcomes.
CREATE VIEW herald.provider_health_view AS
SELECT
    p.name AS provider,
    p.channel,
    p.driver,
    p.cap_per_second,
    coalesce(c.state, 'closed') AS circuit,
    c.open_until,
    coalesce(c.reason, '') AS circuit_reason,
    coalesce(sum(h.delivered), 0)::bigint AS delivered_5m,
    coalesce(sum(h.transient), 0)::bigint AS transient_5m,
    coalesce(sum(h.permanent), 0)::bigint AS permanent_5m,
    coalesce(sum(h.throttled), 0)::bigint AS throttled_5m,
    CASE WHEN coalesce(sum(h.delivered + h.transient + h.permanent), 0) = 0 THEN NULL
        ELSE round((sum(h.latency_seconds_sum) / sum(h.delivered + h.transient + h.permanent))::numeric, 4)
    END AS mean_latency_seconds_5m,
    max(h.latency_seconds_max) AS max_latency_seconds_5m,
    (SELECT max(e.at) FROM herald.provider_events e WHERE e.provider = p.name) AS last_event_at
FROM herald.providers p
LEFT JOIN herald.provider_circuits c ON c.provider = p.name
LEFT JOIN herald.provider_health h ON h.provider = p.name AND h.bucket >= now() - interval '5 minutes'
GROUP BY p.name, p.channel, p.driver, p.cap_per_second, c.state, c.open_until, c.reason;

GRANT SELECT ON herald.providers, herald.routing_rules, herald.routing_state, herald.provider_pacing,
    herald.provider_health, herald.provider_circuits, herald.provider_events, herald.provider_health_view
    TO herald_operator, herald_auditor;

-- +goose Down
DROP VIEW IF EXISTS herald.provider_health_view;
DROP FUNCTION IF EXISTS herald.routing_apply(jsonb, text, text, boolean);
DROP INDEX herald.routes_due_idx;
CREATE INDEX routes_due_idx ON herald.routes (channel, priority, next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;
DROP POLICY producer_insert ON herald.routes;
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (
        herald.notification_is_mine(notification_id)
        AND herald.routes_address_ok(channel, recipient_ref)
        AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '');
ALTER TABLE herald.dead_letters DROP COLUMN provider;
ALTER TABLE herald.routes DROP COLUMN providers, DROP COLUMN lane;
DROP TABLE IF EXISTS herald.provider_events;
DROP TABLE IF EXISTS herald.provider_circuits;
DROP TABLE IF EXISTS herald.provider_health;
DROP TABLE IF EXISTS herald.provider_pacing;
DROP TABLE IF EXISTS herald.routing_state;
DROP TABLE IF EXISTS herald.routing_rules;
DROP TABLE IF EXISTS herald.providers;

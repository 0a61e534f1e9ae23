-- herald.providers as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.providers (
    name text NOT NULL,
    channel text NOT NULL,
    driver text NOT NULL,
    settings jsonb DEFAULT '{}'::jsonb NOT NULL,
    concurrency integer DEFAULT 0 NOT NULL,
    cap_per_second integer DEFAULT 0 NOT NULL,
    circuit_failure_ratio real DEFAULT 0.5 NOT NULL,
    circuit_min_attempts integer DEFAULT 20 NOT NULL,
    circuit_cooldown interval DEFAULT '00:00:30'::interval NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    state text DEFAULT 'enabled'::text NOT NULL,
    state_reason text DEFAULT ''::text NOT NULL,
    state_changed_at timestamp with time zone,
    CONSTRAINT providers_cap_check CHECK (((cap_per_second >= 0) AND (cap_per_second <= 1000000))),
    CONSTRAINT providers_channel_check CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text, 'webhook'::text]))),
    CONSTRAINT providers_circuit_check CHECK (((circuit_failure_ratio > (0)::double precision) AND (circuit_failure_ratio <= (1)::double precision) AND (circuit_min_attempts >= 1) AND (circuit_cooldown >= '00:00:01'::interval))),
    CONSTRAINT providers_concurrency_check CHECK (((concurrency >= 0) AND (concurrency <= 10000))),
    CONSTRAINT providers_driver_check CHECK ((driver = ANY (ARRAY['webhook'::text, 'smtp'::text, 'sms-http'::text, 'smpp'::text, 'log'::text, 'discard'::text]))),
    CONSTRAINT providers_name_check CHECK ((starts_with(name, (channel || '/'::text)) AND (name ~ '^[a-z]+/[a-z0-9][a-z0-9_.-]{0,62}$'::text))),
    CONSTRAINT providers_settings_check CHECK ((jsonb_typeof(settings) = 'object'::text)),
    CONSTRAINT providers_state_check CHECK ((state = ANY (ARRAY['enabled'::text, 'draining'::text, 'disabled'::text]))),
    CONSTRAINT providers_state_reason_check CHECK ((length(state_reason) <= 1000))
);

ALTER TABLE ONLY herald.providers
    ADD CONSTRAINT providers_pkey PRIMARY KEY (name);

GRANT SELECT ON TABLE herald.providers TO herald_operator;
GRANT SELECT ON TABLE herald.providers TO herald_auditor;


--
--

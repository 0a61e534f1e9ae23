-- herald.routing_rules as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.routing_rules (
    channel text NOT NULL,
    "position" integer NOT NULL,
    name text NOT NULL,
    match_prefixes text[] DEFAULT '{}'::text[] NOT NULL,
    match_producers text[] DEFAULT '{}'::text[] NOT NULL,
    match_types text[] DEFAULT '{}'::text[] NOT NULL,
    match_priorities text[] DEFAULT '{}'::text[] NOT NULL,
    strategy text NOT NULL,
    providers text[] NOT NULL,
    weights integer[] DEFAULT '{}'::integer[] NOT NULL,
    CONSTRAINT routing_rules_channel_check CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text, 'webhook'::text]))),
    CONSTRAINT routing_rules_name_check CHECK ((name <> ''::text)),
    CONSTRAINT routing_rules_position_check CHECK (("position" >= 1)),
    CONSTRAINT routing_rules_priorities_check CHECK ((match_priorities <@ ARRAY['transactional'::text, 'bulk'::text])),
    CONSTRAINT routing_rules_providers_check CHECK ((cardinality(providers) >= 1)),
    CONSTRAINT routing_rules_strategy_check CHECK ((strategy = ANY (ARRAY['failover'::text, 'weighted'::text]))),
    CONSTRAINT routing_rules_weights_check CHECK ((((strategy = 'failover'::text) AND (cardinality(weights) = 0)) OR ((strategy = 'weighted'::text) AND (cardinality(weights) = cardinality(providers)) AND (0 < ALL (weights)))))
);

ALTER TABLE ONLY herald.routing_rules
    ADD CONSTRAINT routing_rules_name_key UNIQUE (channel, name);

ALTER TABLE ONLY herald.routing_rules
    ADD CONSTRAINT routing_rules_pkey PRIMARY KEY (channel, "position");

GRANT SELECT ON TABLE herald.routing_rules TO herald_operator;
GRANT SELECT ON TABLE herald.routing_rules TO herald_auditor;


--
--

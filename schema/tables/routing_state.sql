-- herald.routing_state as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.routing_state (
    singleton boolean DEFAULT true NOT NULL,
    version bigint DEFAULT 0 NOT NULL,
    applied_at timestamp with time zone,
    applied_by text DEFAULT ''::text NOT NULL,
    CONSTRAINT routing_state_singleton_check CHECK (singleton)
);

ALTER TABLE ONLY herald.routing_state
    ADD CONSTRAINT routing_state_pkey PRIMARY KEY (singleton);

GRANT SELECT ON TABLE herald.routing_state TO herald_operator;
GRANT SELECT ON TABLE herald.routing_state TO herald_auditor;


--
--

-- herald.provider_circuits as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.provider_circuits (
    provider text NOT NULL,
    state text DEFAULT 'closed'::text NOT NULL,
    since timestamp with time zone DEFAULT now() NOT NULL,
    open_until timestamp with time zone,
    reason text DEFAULT ''::text NOT NULL,
    CONSTRAINT provider_circuits_open_check CHECK (((state = 'open'::text) = (open_until IS NOT NULL))),
    CONSTRAINT provider_circuits_state_check CHECK ((state = ANY (ARRAY['closed'::text, 'open'::text])))
);

ALTER TABLE ONLY herald.provider_circuits
    ADD CONSTRAINT provider_circuits_pkey PRIMARY KEY (provider);

ALTER TABLE ONLY herald.provider_circuits
    ADD CONSTRAINT provider_circuits_provider_fkey FOREIGN KEY (provider) REFERENCES herald.providers(name) ON DELETE CASCADE;

GRANT SELECT ON TABLE herald.provider_circuits TO herald_operator;
GRANT SELECT ON TABLE herald.provider_circuits TO herald_auditor;


--
--

-- herald.provider_pacing as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.provider_pacing (
    provider text NOT NULL,
    next_slot_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone NOT NULL
);

ALTER TABLE ONLY herald.provider_pacing
    ADD CONSTRAINT provider_pacing_pkey PRIMARY KEY (provider);

ALTER TABLE ONLY herald.provider_pacing
    ADD CONSTRAINT provider_pacing_provider_fkey FOREIGN KEY (provider) REFERENCES herald.providers(name) ON DELETE CASCADE;

GRANT SELECT ON TABLE herald.provider_pacing TO herald_operator;
GRANT SELECT ON TABLE herald.provider_pacing TO herald_auditor;


--
--

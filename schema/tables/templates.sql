-- herald.templates as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.templates (
    producer text DEFAULT herald.acting_producer() NOT NULL,
    name text NOT NULL,
    version integer NOT NULL,
    default_locale text NOT NULL,
    locales jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by text DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT templates_locale_check CHECK ((default_locale ~ '^[A-Za-z0-9_-]{1,35}$'::text)),
    CONSTRAINT templates_locales_check CHECK (((jsonb_typeof(locales) = 'object'::text) AND (locales ? default_locale) AND (octet_length((locales)::text) <= 262144))),
    CONSTRAINT templates_name_check CHECK ((name ~ '^[A-Za-z0-9._:-]{1,128}$'::text)),
    CONSTRAINT templates_version_check CHECK ((version >= 1))
);

ALTER TABLE ONLY herald.templates
    ADD CONSTRAINT templates_pkey PRIMARY KEY (producer, name, version);

CREATE POLICY producer_own ON herald.templates TO herald_producer USING ((producer = ( SELECT herald.acting_producer() AS acting_producer))) WITH CHECK ((producer = ( SELECT herald.acting_producer() AS acting_producer)));

CREATE POLICY staff_read ON herald.templates FOR SELECT TO herald_operator, herald_auditor USING (true);

ALTER TABLE herald.templates ENABLE ROW LEVEL SECURITY;

GRANT SELECT ON TABLE herald.templates TO herald_operator;
GRANT SELECT ON TABLE herald.templates TO herald_auditor;
GRANT SELECT ON TABLE herald.templates TO herald_producer;

GRANT INSERT(producer) ON TABLE herald.templates TO herald_producer;

GRANT INSERT(name) ON TABLE herald.templates TO herald_producer;

GRANT INSERT(version) ON TABLE herald.templates TO herald_producer;

GRANT INSERT(default_locale) ON TABLE herald.templates TO herald_producer;

GRANT INSERT(locales) ON TABLE herald.templates TO herald_producer;


--
--

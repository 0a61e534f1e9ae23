-- +goose Up
-- Templates: an intent may name a template and give data instead
-- of finished content; the dispatcher renders it at delivery, in the
-- recipient's locale.
--
-- One row is one version of one producer's template, with every locale's
-- text in `locales`, a JSON object keyed by locale:
--
--   {"en": {"sms": {"body": "..."},
--           "email": {"subject": "...", "text": "...", "html": "..."},
--           "webhook": {"any": "JSON, whose strings are templates"}},
--    "pt-BR": {...}}
--
-- Versions are immutable: nobody but the engine's owner may UPDATE or
-- DELETE a row, so the version a notification was accepted with (kept in
-- its records.payload_json) renders the same text however long the
-- notification waits. Publishing is an INSERT of the next version; the
-- current version of a template is its highest. internal/content parses
-- and checks the text (herald templates apply refuses a template that does
-- not parse; an intent naming one inserted by hand that does not is
-- refused at intake).
CREATE TABLE herald.templates (
    producer text NOT NULL DEFAULT (herald.acting_producer()),
    name text NOT NULL,
    version integer NOT NULL,
    default_locale text NOT NULL,
    locales jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL DEFAULT session_user,
    PRIMARY KEY (producer, name, version),
    CONSTRAINT templates_name_check CHECK (name ~ '^[A-Za-z0-9._:-]{1,128}$'),
    CONSTRAINT templates_version_check CHECK (version >= 1),
    CONSTRAINT templates_locale_check CHECK (default_locale ~ '^[A-Za-z0-9_-]{1,35}$'),
    CONSTRAINT templates_locales_check CHECK (
        jsonb_typeof(locales) = 'object' AND locales ? default_locale AND octet_length(locales::text) <= 262144)
);

-- A producer manages its own templates (publishes versions, reads them);
-- operators and auditors read every producer's. No role but the owner may
-- change or delete a version: that is the guarantee above. created_by is
-- stamped by its default: INSERT is granted on the other columns only.
GRANT SELECT ON herald.templates TO herald_producer, herald_operator, herald_auditor;
GRANT INSERT (producer, name, version, default_locale, locales) ON herald.templates TO herald_producer;
ALTER TABLE herald.templates ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_own ON herald.templates TO herald_producer
    USING (producer = (SELECT herald.acting_producer()))
    WITH CHECK (producer = (SELECT herald.acting_producer()));
CREATE POLICY staff_read ON herald.templates FOR SELECT TO herald_operator, herald_auditor USING (true);

-- +goose Down
DROP TABLE IF EXISTS herald.templates;

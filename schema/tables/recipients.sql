-- herald.recipients as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.recipients (
    user_id text NOT NULL,
    email text DEFAULT ''::text NOT NULL,
    phone text DEFAULT ''::text NOT NULL,
    webhook_url text DEFAULT ''::text NOT NULL,
    locale text DEFAULT ''::text NOT NULL,
    opted_out text[] DEFAULT '{}'::text[] NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    owner text DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT recipients_email_check CHECK (((email = ''::text) OR ((octet_length(email) <= 254) AND (email ~ '^[^[:space:][:cntrl:]]+@[^@[:space:][:cntrl:]]+$'::text)))),
    CONSTRAINT recipients_locale_check CHECK ((locale ~ '^[A-Za-z0-9_-]{0,35}$'::text)),
    CONSTRAINT recipients_opted_out_check CHECK ((opted_out <@ ARRAY['email'::text, 'sms'::text, 'webhook'::text])),
    CONSTRAINT recipients_phone_check CHECK (((phone = ''::text) OR (phone ~ '^\+[1-9][0-9]{6,14}$'::text))),
    CONSTRAINT recipients_user_id_check CHECK (((user_id <> ''::text) AND (char_length(user_id) <= 255) AND (user_id = btrim(user_id)) AND (user_id !~ '[[:cntrl:]]'::text))),
    CONSTRAINT recipients_webhook_url_check CHECK (((webhook_url = ''::text) OR ((octet_length(webhook_url) <= 2048) AND (webhook_url ~ '^https?://[^[:space:][:cntrl:]/?#@]+[^[:space:][:cntrl:]]*$'::text))))
);

ALTER TABLE ONLY herald.recipients
    ADD CONSTRAINT recipients_pkey PRIMARY KEY (owner, user_id);

CREATE POLICY directory_shared ON herald.recipients TO herald_directory USING ((owner = ''::text)) WITH CHECK ((owner = ''::text));

CREATE POLICY producer_own ON herald.recipients TO herald_producer USING ((owner = ( SELECT herald.acting_producer() AS acting_producer))) WITH CHECK ((owner = ( SELECT herald.acting_producer() AS acting_producer)));

ALTER TABLE herald.recipients ENABLE ROW LEVEL SECURITY;

CREATE POLICY staff_read ON herald.recipients FOR SELECT TO herald_operator, herald_auditor USING (true);

GRANT SELECT ON TABLE herald.recipients TO herald_operator;
GRANT SELECT ON TABLE herald.recipients TO herald_auditor;
GRANT SELECT,INSERT ON TABLE herald.recipients TO herald_producer;
GRANT SELECT,INSERT ON TABLE herald.recipients TO herald_directory;

GRANT UPDATE(email) ON TABLE herald.recipients TO herald_producer;
GRANT UPDATE(email) ON TABLE herald.recipients TO herald_directory;

GRANT UPDATE(phone) ON TABLE herald.recipients TO herald_producer;
GRANT UPDATE(phone) ON TABLE herald.recipients TO herald_directory;

GRANT UPDATE(webhook_url) ON TABLE herald.recipients TO herald_producer;
GRANT UPDATE(webhook_url) ON TABLE herald.recipients TO herald_directory;

GRANT UPDATE(locale) ON TABLE herald.recipients TO herald_producer;
GRANT UPDATE(locale) ON TABLE herald.recipients TO herald_directory;

GRANT UPDATE(opted_out) ON TABLE herald.recipients TO herald_producer;
GRANT UPDATE(opted_out) ON TABLE herald.recipients TO herald_directory;

GRANT UPDATE(updated_at) ON TABLE herald.recipients TO herald_producer;
GRANT UPDATE(updated_at) ON TABLE herald.recipients TO herald_directory;


--
--

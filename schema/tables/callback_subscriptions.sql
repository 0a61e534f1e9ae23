-- herald.callback_subscriptions as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.callback_subscriptions (
    producer text NOT NULL,
    url text NOT NULL,
    events text[] DEFAULT '{}'::text[] NOT NULL,
    secret text,
    bearer_token text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT callback_subscriptions_auth_check CHECK (((secret IS NULL) <> (bearer_token IS NULL))),
    CONSTRAINT callback_subscriptions_bearer_token_check CHECK (((bearer_token IS NULL) OR (((length(bearer_token) >= 16) AND (length(bearer_token) <= 4096)) AND (bearer_token ~ '^[!-~]+$'::text)))),
    CONSTRAINT callback_subscriptions_events_check CHECK ((events <@ ARRAY['published'::text, 'delivered'::text, 'undelivered'::text, 'dead_lettered'::text, 'skipped'::text, 'canceled'::text, 'expired'::text])),
    CONSTRAINT callback_subscriptions_producer_check CHECK ((producer <> ''::text)),
    CONSTRAINT callback_subscriptions_secret_check CHECK (((secret IS NULL) OR (secret ~ '^whsec_[A-Za-z0-9+/]{22,}={0,2}$'::text))),
    CONSTRAINT callback_subscriptions_url_check CHECK (((octet_length(url) <= 2048) AND (url ~ '^https?://[^[:space:][:cntrl:]/?#@]+[^[:space:][:cntrl:]]*$'::text)))
);

ALTER TABLE ONLY herald.callback_subscriptions
    ADD CONSTRAINT callback_subscriptions_pkey PRIMARY KEY (producer);

ALTER TABLE herald.callback_subscriptions ENABLE ROW LEVEL SECURITY;

CREATE POLICY producer_read ON herald.callback_subscriptions FOR SELECT TO herald_producer USING ((producer = ( SELECT herald.acting_producer() AS acting_producer)));

CREATE POLICY staff_read ON herald.callback_subscriptions FOR SELECT TO herald_operator, herald_auditor USING (true);

GRANT SELECT(producer) ON TABLE herald.callback_subscriptions TO herald_producer;
GRANT SELECT(producer) ON TABLE herald.callback_subscriptions TO herald_operator;
GRANT SELECT(producer) ON TABLE herald.callback_subscriptions TO herald_auditor;

GRANT SELECT(url) ON TABLE herald.callback_subscriptions TO herald_producer;
GRANT SELECT(url) ON TABLE herald.callback_subscriptions TO herald_operator;
GRANT SELECT(url) ON TABLE herald.callback_subscriptions TO herald_auditor;

GRANT SELECT(events) ON TABLE herald.callback_subscriptions TO herald_producer;
GRANT SELECT(events) ON TABLE herald.callback_subscriptions TO herald_operator;
GRANT SELECT(events) ON TABLE herald.callback_subscriptions TO herald_auditor;

GRANT SELECT(created_at) ON TABLE herald.callback_subscriptions TO herald_producer;
GRANT SELECT(created_at) ON TABLE herald.callback_subscriptions TO herald_operator;
GRANT SELECT(created_at) ON TABLE herald.callback_subscriptions TO herald_auditor;

GRANT SELECT(updated_at) ON TABLE herald.callback_subscriptions TO herald_producer;
GRANT SELECT(updated_at) ON TABLE herald.callback_subscriptions TO herald_operator;
GRANT SELECT(updated_at) ON TABLE herald.callback_subscriptions TO herald_auditor;


--
--

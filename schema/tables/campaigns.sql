-- herald.campaigns as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.campaigns (
    producer text NOT NULL,
    campaign text NOT NULL,
    send_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    cancel_requested_at timestamp with time zone,
    canceled_by text,
    cancel_reason text,
    cancel_cursor text DEFAULT ''::text NOT NULL,
    cancel_retry_from text,
    cancel_sweeps integer DEFAULT 0 NOT NULL,
    canceled_routes bigint DEFAULT 0 NOT NULL,
    canceled_at timestamp with time zone,
    CONSTRAINT campaigns_campaign_check CHECK ((campaign ~ '^[A-Za-z0-9._:-]{1,128}$'::text))
);

ALTER TABLE ONLY herald.campaigns
    ADD CONSTRAINT campaigns_pkey PRIMARY KEY (producer, campaign);

ALTER TABLE herald.campaigns ENABLE ROW LEVEL SECURITY;

CREATE POLICY producer_read ON herald.campaigns FOR SELECT TO herald_producer USING ((producer = ( SELECT herald.acting_producer() AS acting_producer)));

CREATE POLICY staff_read ON herald.campaigns FOR SELECT TO herald_operator, herald_auditor USING (true);

GRANT SELECT ON TABLE herald.campaigns TO herald_operator;
GRANT SELECT ON TABLE herald.campaigns TO herald_auditor;
GRANT SELECT ON TABLE herald.campaigns TO herald_producer;


--
--

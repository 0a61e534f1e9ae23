-- herald.malformed_intents as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.malformed_intents (
    stream_entry_id text NOT NULL,
    notification_type text DEFAULT ''::text NOT NULL,
    producer text DEFAULT ''::text NOT NULL,
    idempotency_key text DEFAULT ''::text NOT NULL,
    failure_code text NOT NULL,
    failure_message text NOT NULL,
    raw_fields jsonb NOT NULL,
    recorded_at timestamp with time zone NOT NULL,
    submitted_by text DEFAULT ''::text NOT NULL
);

ALTER TABLE ONLY herald.malformed_intents
    ADD CONSTRAINT malformed_intents_pkey PRIMARY KEY (stream_entry_id);

CREATE INDEX malformed_intents_listing_idx ON herald.malformed_intents USING btree (recorded_at DESC, stream_entry_id DESC);

ALTER TABLE herald.malformed_intents ENABLE ROW LEVEL SECURITY;

CREATE POLICY operator_purge ON herald.malformed_intents FOR DELETE TO herald_operator USING (true);

CREATE POLICY producer_read ON herald.malformed_intents FOR SELECT TO herald_producer USING ((submitted_by = ( SELECT herald.acting_producer() AS acting_producer)));

CREATE POLICY staff_read ON herald.malformed_intents FOR SELECT TO herald_operator, herald_auditor USING (true);

GRANT SELECT,DELETE ON TABLE herald.malformed_intents TO herald_operator;
GRANT SELECT ON TABLE herald.malformed_intents TO herald_auditor;
GRANT SELECT ON TABLE herald.malformed_intents TO herald_producer;


--
--

-- herald.dead_letters as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.dead_letters (
    notification_id text NOT NULL,
    route_id text NOT NULL,
    channel text NOT NULL,
    recipient_ref text NOT NULL,
    final_attempt_count integer NOT NULL,
    max_attempts integer NOT NULL,
    failure_classification text NOT NULL,
    failure_message text NOT NULL,
    recovery_hint text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    provider text DEFAULT ''::text NOT NULL
);

ALTER TABLE ONLY herald.dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (notification_id, route_id);

CREATE INDEX dead_letters_listing_idx ON herald.dead_letters USING btree (created_at DESC, notification_id DESC, route_id DESC);

CREATE INDEX dead_letters_recipient_idx ON herald.dead_letters USING btree (recipient_ref, created_at);

ALTER TABLE herald.dead_letters ENABLE ROW LEVEL SECURITY;

CREATE POLICY operator_write ON herald.dead_letters TO herald_operator USING (true) WITH CHECK (true);

CREATE POLICY producer_read ON herald.dead_letters FOR SELECT TO herald_producer USING ((EXISTS ( SELECT 1
   FROM herald.records rec
  WHERE (rec.notification_id = dead_letters.notification_id))));

CREATE POLICY staff_read ON herald.dead_letters FOR SELECT TO herald_operator, herald_auditor USING (true);

GRANT SELECT ON TABLE herald.dead_letters TO herald_producer;
GRANT SELECT,DELETE,UPDATE ON TABLE herald.dead_letters TO herald_operator;
GRANT SELECT ON TABLE herald.dead_letters TO herald_auditor;


--
--

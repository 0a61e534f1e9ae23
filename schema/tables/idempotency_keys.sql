-- herald.idempotency_keys as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.idempotency_keys (
    producer text NOT NULL,
    idempotency_key text NOT NULL,
    notification_id text NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

COMMENT ON TABLE herald.idempotency_keys IS 'One row per idempotency key held: the notification that holds it and until when. Its primary key is the idempotency check of every door.';

COMMENT ON COLUMN herald.idempotency_keys.expires_at IS 'When the key''s window ends (the record''s idempotency_expires_at): after it the key is free, and maintenance deletes the row.';

ALTER TABLE ONLY herald.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (producer, idempotency_key);

ALTER TABLE herald.idempotency_keys ENABLE ROW LEVEL SECURITY;

CREATE POLICY producer_insert ON herald.idempotency_keys FOR INSERT TO herald_producer WITH CHECK ((producer = ( SELECT herald.acting_producer() AS acting_producer)));

CREATE POLICY producer_read ON herald.idempotency_keys FOR SELECT TO herald_producer USING ((producer = ( SELECT herald.acting_producer() AS acting_producer)));

CREATE POLICY staff_read ON herald.idempotency_keys FOR SELECT TO herald_operator, herald_auditor USING (true);

GRANT SELECT ON TABLE herald.idempotency_keys TO herald_operator;
GRANT SELECT ON TABLE herald.idempotency_keys TO herald_auditor;
GRANT SELECT,INSERT ON TABLE herald.idempotency_keys TO herald_producer;


--
--

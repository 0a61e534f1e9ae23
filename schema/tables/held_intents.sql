-- herald.held_intents as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.held_intents (
    id bigint NOT NULL,
    producer text NOT NULL,
    idempotency_key text NOT NULL,
    notification_type text DEFAULT ''::text NOT NULL,
    body text NOT NULL,
    rule_id bigint NOT NULL,
    rule text NOT NULL,
    part text DEFAULT ''::text NOT NULL,
    submitted_by text DEFAULT SESSION_USER NOT NULL,
    held_at timestamp with time zone DEFAULT now() NOT NULL,
    notification_id text,
    CONSTRAINT held_intents_body_check CHECK (((octet_length(body) <= 262144) AND ((body)::json IS NOT NULL)))
);

ALTER TABLE herald.held_intents ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.held_intents_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY herald.held_intents
    ADD CONSTRAINT held_intents_key_unique UNIQUE (producer, idempotency_key);

ALTER TABLE ONLY herald.held_intents
    ADD CONSTRAINT held_intents_pkey PRIMARY KEY (id);

CREATE INDEX held_intents_held_at_idx ON herald.held_intents USING btree (held_at, id);

ALTER TABLE herald.held_intents ENABLE ROW LEVEL SECURITY;

CREATE POLICY producer_read ON herald.held_intents FOR SELECT TO herald_producer USING ((producer = ( SELECT herald.acting_producer() AS acting_producer)));

CREATE POLICY staff_read ON herald.held_intents FOR SELECT TO herald_operator, herald_auditor USING (true);

GRANT SELECT ON TABLE herald.held_intents TO herald_operator;
GRANT SELECT ON TABLE herald.held_intents TO herald_auditor;
GRANT SELECT ON TABLE herald.held_intents TO herald_producer;


--
--

-- herald.inbound_messages as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.inbound_messages (
    id bigint NOT NULL,
    provider text NOT NULL,
    from_addr text DEFAULT ''::text NOT NULL,
    to_addr text DEFAULT ''::text NOT NULL,
    body text DEFAULT ''::text NOT NULL,
    data_coding smallint DEFAULT 0 NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT inbound_messages_size_check CHECK (((length(provider) <= 200) AND (length(from_addr) <= 64) AND (length(to_addr) <= 64) AND (length(body) <= 65536)))
);

ALTER TABLE herald.inbound_messages ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.inbound_messages_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY herald.inbound_messages
    ADD CONSTRAINT inbound_messages_pkey PRIMARY KEY (id);

CREATE INDEX inbound_messages_received_idx ON herald.inbound_messages USING btree (received_at DESC);

GRANT SELECT ON TABLE herald.inbound_messages TO herald_operator;
GRANT SELECT ON TABLE herald.inbound_messages TO herald_auditor;


--
--

-- herald.intake as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.intake (
    id bigint NOT NULL,
    body text NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    submitted_by text DEFAULT SESSION_USER NOT NULL,
    reviewed boolean DEFAULT false NOT NULL
);

ALTER TABLE herald.intake ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.intake_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY herald.intake
    ADD CONSTRAINT intake_pkey PRIMARY KEY (id);

CREATE TRIGGER intake_notify AFTER INSERT ON herald.intake FOR EACH STATEMENT EXECUTE FUNCTION herald.intake_notify();

GRANT SELECT ON TABLE herald.intake TO herald_operator;
GRANT SELECT ON TABLE herald.intake TO herald_auditor;

GRANT INSERT(body) ON TABLE herald.intake TO herald_producer;
GRANT INSERT(body) ON TABLE herald.intake TO herald_relay;


--
--

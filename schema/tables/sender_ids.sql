-- herald.sender_ids as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.sender_ids (
    producer text NOT NULL,
    sender text NOT NULL,
    note text DEFAULT ''::text NOT NULL,
    approved_at timestamp with time zone DEFAULT now() NOT NULL,
    approved_by text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT sender_ids_note_check CHECK ((length(note) <= 1000)),
    CONSTRAINT sender_ids_producer_check CHECK ((producer ~ '^[A-Za-z0-9._:-]{1,128}$'::text)),
    CONSTRAINT sender_ids_sender_check CHECK ((((sender ~ '^[A-Za-z0-9]{1,11}$'::text) AND (sender ~ '[A-Za-z]'::text)) OR (sender ~ '^\+?[0-9]{1,15}$'::text)))
);

ALTER TABLE ONLY herald.sender_ids
    ADD CONSTRAINT sender_ids_pkey PRIMARY KEY (producer, sender);

CREATE POLICY producer_read ON herald.sender_ids FOR SELECT TO herald_producer USING ((producer = ( SELECT herald.acting_producer() AS acting_producer)));

ALTER TABLE herald.sender_ids ENABLE ROW LEVEL SECURITY;

CREATE POLICY staff_read ON herald.sender_ids FOR SELECT TO herald_operator, herald_auditor USING (true);

GRANT SELECT ON TABLE herald.sender_ids TO herald_operator;
GRANT SELECT ON TABLE herald.sender_ids TO herald_auditor;
GRANT SELECT ON TABLE herald.sender_ids TO herald_producer;


--
--

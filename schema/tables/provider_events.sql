-- herald.provider_events as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.provider_events (
    id bigint NOT NULL,
    provider text NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    event text NOT NULL,
    detail text DEFAULT ''::text NOT NULL,
    CONSTRAINT provider_events_event_check CHECK ((event = ANY (ARRAY['circuit_opened'::text, 'circuit_closed'::text])))
);

ALTER TABLE herald.provider_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.provider_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY herald.provider_events
    ADD CONSTRAINT provider_events_pkey PRIMARY KEY (id);

CREATE INDEX provider_events_provider_at_idx ON herald.provider_events USING btree (provider, at DESC);

GRANT SELECT ON TABLE herald.provider_events TO herald_operator;
GRANT SELECT ON TABLE herald.provider_events TO herald_auditor;


--
--

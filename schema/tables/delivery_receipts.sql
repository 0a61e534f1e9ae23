-- herald.delivery_receipts as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.delivery_receipts (
    id bigint NOT NULL,
    provider text NOT NULL,
    provider_message_id text DEFAULT ''::text NOT NULL,
    status text DEFAULT ''::text NOT NULL,
    error_code text DEFAULT ''::text NOT NULL,
    raw text DEFAULT ''::text NOT NULL,
    source text DEFAULT 'sql'::text NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    state text DEFAULT 'new'::text NOT NULL,
    next_match_at timestamp with time zone DEFAULT now() NOT NULL,
    match_attempts integer DEFAULT 0 NOT NULL,
    delivery_status text,
    notification_id text,
    route_id text,
    matched_at timestamp with time zone,
    attempt integer,
    CONSTRAINT delivery_receipts_delivery_status_check CHECK (((delivery_status IS NULL) OR (delivery_status = ANY (ARRAY['delivered'::text, 'undelivered'::text, 'expired'::text, 'unknown'::text])))),
    CONSTRAINT delivery_receipts_size_check CHECK (((length(provider) <= 200) AND (length(provider_message_id) <= 200) AND (length(status) <= 200) AND (length(error_code) <= 200) AND (length(raw) <= 65536))),
    CONSTRAINT delivery_receipts_source_check CHECK ((source = ANY (ARRAY['http'::text, 'smpp'::text, 'sql'::text]))),
    CONSTRAINT delivery_receipts_state_check CHECK ((state = ANY (ARRAY['new'::text, 'matched'::text, 'duplicate'::text, 'unmatched'::text, 'malformed'::text])))
);

COMMENT ON COLUMN herald.delivery_receipts.attempt IS 'The attempt of its route the receipt was matched to; NULL until matched, and for receipts matched before migration 00030.';

ALTER TABLE herald.delivery_receipts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.delivery_receipts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY herald.delivery_receipts
    ADD CONSTRAINT delivery_receipts_pkey PRIMARY KEY (id);

CREATE INDEX delivery_receipts_due_idx ON herald.delivery_receipts USING btree (next_match_at) WHERE (state = 'new'::text);

CREATE INDEX delivery_receipts_message_idx ON herald.delivery_receipts USING btree (provider, provider_message_id);

CREATE INDEX delivery_receipts_notification_idx ON herald.delivery_receipts USING btree (notification_id) WHERE (notification_id IS NOT NULL);

CREATE INDEX delivery_receipts_unmatched_idx ON herald.delivery_receipts USING btree (received_at DESC) WHERE (state = ANY (ARRAY['unmatched'::text, 'malformed'::text]));

CREATE TRIGGER delivery_receipts_notify AFTER INSERT ON herald.delivery_receipts REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION herald.delivery_receipts_notify();

GRANT SELECT ON TABLE herald.delivery_receipts TO herald_operator;
GRANT SELECT ON TABLE herald.delivery_receipts TO herald_auditor;

GRANT INSERT(provider) ON TABLE herald.delivery_receipts TO herald_operator;
GRANT INSERT(provider) ON TABLE herald.delivery_receipts TO herald_relay;

GRANT INSERT(provider_message_id) ON TABLE herald.delivery_receipts TO herald_operator;
GRANT INSERT(provider_message_id) ON TABLE herald.delivery_receipts TO herald_relay;

GRANT INSERT(status) ON TABLE herald.delivery_receipts TO herald_operator;
GRANT INSERT(status) ON TABLE herald.delivery_receipts TO herald_relay;

GRANT INSERT(error_code) ON TABLE herald.delivery_receipts TO herald_operator;
GRANT INSERT(error_code) ON TABLE herald.delivery_receipts TO herald_relay;

GRANT INSERT(raw) ON TABLE herald.delivery_receipts TO herald_operator;
GRANT INSERT(raw) ON TABLE herald.delivery_receipts TO herald_relay;


--
--

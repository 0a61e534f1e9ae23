-- herald.records_default as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.records_default (
    notification_id text NOT NULL,
    notification_type text NOT NULL,
    producer text NOT NULL,
    audience_kind text NOT NULL,
    recipient_user_ids jsonb DEFAULT '[]'::jsonb NOT NULL,
    payload_json text NOT NULL,
    idempotency_key text NOT NULL,
    request_fingerprint text NOT NULL,
    request_id text DEFAULT ''::text NOT NULL,
    trace_id text DEFAULT ''::text NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    accepted_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    idempotency_expires_at timestamp with time zone NOT NULL,
    channels text[] DEFAULT '{}'::text[] NOT NULL,
    priority smallint DEFAULT 0 NOT NULL,
    send_at timestamp with time zone,
    expires_at timestamp with time zone,
    callback_url text DEFAULT ''::text NOT NULL,
    campaign text,
    callback_of text,
    metadata jsonb,
    CONSTRAINT records_audience_kind_check CHECK ((audience_kind = ANY (ARRAY['users'::text, 'addresses'::text, 'mixed'::text]))),
    CONSTRAINT records_callback_url_check CHECK (((callback_url = ''::text) OR ((octet_length(callback_url) <= 2048) AND (callback_url ~ '^https?://[^[:space:][:cntrl:]/?#@]+[^[:space:][:cntrl:]]*$'::text)))),
    CONSTRAINT records_campaign_check CHECK ((campaign ~ '^[A-Za-z0-9._:-]{1,128}$'::text)),
    CONSTRAINT records_channels_check CHECK ((channels <@ ARRAY['email'::text, 'sms'::text, 'webhook'::text, 'callback'::text])),
    CONSTRAINT records_metadata_check CHECK (((metadata IS NULL) OR ((jsonb_typeof(metadata) = 'object'::text) AND (octet_length((metadata)::text) <= 8192) AND ((jsonb_array_length(jsonb_path_query_array(metadata, '$.*'::jsonpath)) >= 1) AND (jsonb_array_length(jsonb_path_query_array(metadata, '$.*'::jsonpath)) <= 32)) AND (NOT jsonb_path_exists(metadata, '$.*?(@.type() != "string")'::jsonpath))))),
    CONSTRAINT records_priority_check CHECK ((priority = ANY (ARRAY[0, 1]))),
    CONSTRAINT records_producer_check CHECK (((producer <> ''::text) AND (idempotency_key <> ''::text))),
    CONSTRAINT records_recipient_user_ids_check CHECK ((jsonb_typeof(recipient_user_ids) = 'array'::text))
);

COMMENT ON TABLE herald.records_default IS 'The records partition of ids no range holds: ids not made by herald, or from a clock far off. Retention deletes its rows one by one.';

ALTER TABLE ONLY herald.records ATTACH PARTITION herald.records_default DEFAULT;

ALTER TABLE ONLY herald.records_default
    ADD CONSTRAINT records_default_pkey PRIMARY KEY (notification_id);

CREATE INDEX records_default_callback_of_idx ON herald.records_default USING btree (callback_of) WHERE (callback_of IS NOT NULL);

CREATE INDEX records_default_idempotency_expires_at_idx ON herald.records_default USING btree (idempotency_expires_at) WHERE ((idempotency_expires_at - accepted_at) > '7 days'::interval);

CREATE INDEX records_default_producer_campaign_notification_id_idx ON herald.records_default USING btree (producer, campaign, notification_id) WHERE (campaign IS NOT NULL);

ALTER INDEX herald.records_callback_of_idx ATTACH PARTITION herald.records_default_callback_of_idx;

ALTER INDEX herald.records_long_window_idx ATTACH PARTITION herald.records_default_idempotency_expires_at_idx;

ALTER INDEX herald.records_pkey ATTACH PARTITION herald.records_default_pkey;

ALTER INDEX herald.records_campaign_idx ATTACH PARTITION herald.records_default_producer_campaign_notification_id_idx;

GRANT SELECT ON TABLE herald.records_default TO herald_operator;
GRANT SELECT ON TABLE herald.records_default TO herald_auditor;


--
--

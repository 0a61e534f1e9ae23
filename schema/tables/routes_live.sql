-- herald.routes_live as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.routes_live (
    notification_id text NOT NULL,
    route_id text NOT NULL,
    channel text NOT NULL,
    recipient_ref text NOT NULL,
    status text NOT NULL,
    attempt_count integer DEFAULT 0 NOT NULL,
    max_attempts integer NOT NULL,
    next_attempt_at timestamp with time zone,
    resolved_email text DEFAULT ''::text NOT NULL,
    resolved_locale text DEFAULT ''::text NOT NULL,
    last_error_classification text DEFAULT ''::text NOT NULL,
    last_error_message text DEFAULT ''::text NOT NULL,
    last_error_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    published_at timestamp with time zone,
    dead_lettered_at timestamp with time zone,
    skipped_at timestamp with time zone,
    priority smallint DEFAULT 0 NOT NULL,
    expires_at timestamp with time zone,
    sms_encoding text DEFAULT ''::text NOT NULL,
    sms_segments smallint DEFAULT 0 NOT NULL,
    provider_message_id text DEFAULT ''::text NOT NULL,
    canceled_at timestamp with time zone,
    lane text DEFAULT ''::text NOT NULL,
    providers text[],
    receipt_key text,
    delivery_status text,
    delivery_status_at timestamp with time zone,
    delivery_error text DEFAULT ''::text NOT NULL,
    delivery_error_permanent boolean,
    notify_producer boolean DEFAULT false NOT NULL,
    lease_until timestamp with time zone,
    finished_at timestamp with time zone,
    receipt_parts text[],
    part_delivery_statuses text[],
    receipt_keyed_at timestamp with time zone,
    CONSTRAINT routes_attempts_check CHECK (((attempt_count >= 0) AND ((max_attempts >= 0) AND (max_attempts <= 100)))),
    CONSTRAINT routes_channel_check CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text, 'webhook'::text, 'callback'::text]))),
    CONSTRAINT routes_delivery_status_check CHECK (((delivery_status IS NULL) OR (delivery_status = ANY (ARRAY['delivered'::text, 'undelivered'::text, 'expired'::text, 'unknown'::text])))),
    CONSTRAINT routes_live_unfinished CHECK ((finished_at IS NULL)),
    CONSTRAINT routes_priority_check CHECK ((priority = ANY (ARRAY[0, 1]))),
    CONSTRAINT routes_schedulable_check CHECK (((next_attempt_at IS NOT NULL) = (status = ANY (ARRAY['pending'::text, 'claimed'::text, 'failed'::text])))),
    CONSTRAINT routes_sms_check CHECK (((sms_segments >= 0) AND (sms_encoding = ANY (ARRAY[''::text, 'gsm7'::text, 'ucs2'::text])))),
    CONSTRAINT routes_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'claimed'::text, 'failed'::text, 'published'::text, 'dead_letter'::text, 'skipped'::text, 'canceled'::text])))
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_vacuum_cost_delay='0', fillfactor='50');

COMMENT ON TABLE herald.routes_live IS 'The routes partition of routes not finished (finished_at NULL): in flight, due, failed, dead-lettered; and every route from before migration 00025.';

ALTER TABLE ONLY herald.routes ATTACH PARTITION herald.routes_live DEFAULT;

ALTER TABLE ONLY herald.routes_live
    ADD CONSTRAINT routes_pkey PRIMARY KEY (notification_id, route_id);

CREATE INDEX routes_due_idx ON herald.routes_live USING btree (channel, lane, priority, next_attempt_at) WHERE (next_attempt_at IS NOT NULL);

CREATE INDEX routes_live_receipt_parts_idx ON herald.routes_live USING gin (receipt_parts) WITH (fastupdate=off) WHERE (receipt_parts IS NOT NULL);

CREATE INDEX routes_live_recipient_ref_created_at_idx ON herald.routes_live USING btree (recipient_ref, created_at);

CREATE INDEX routes_receipt_key_idx ON herald.routes_live USING btree (receipt_key) WHERE (receipt_key IS NOT NULL);

ALTER INDEX herald.routes_receipt_parts_idx ATTACH PARTITION herald.routes_live_receipt_parts_idx;

ALTER INDEX herald.routes_recipient_idx ATTACH PARTITION herald.routes_live_recipient_ref_created_at_idx;

GRANT SELECT ON TABLE herald.routes_live TO herald_operator;
GRANT SELECT ON TABLE herald.routes_live TO herald_auditor;


--
--

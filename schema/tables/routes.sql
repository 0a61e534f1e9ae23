-- herald.routes as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.routes (
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
    CONSTRAINT routes_priority_check CHECK ((priority = ANY (ARRAY[0, 1]))),
    CONSTRAINT routes_schedulable_check CHECK (((next_attempt_at IS NOT NULL) = (status = ANY (ARRAY['pending'::text, 'claimed'::text, 'failed'::text])))),
    CONSTRAINT routes_sms_check CHECK (((sms_segments >= 0) AND (sms_encoding = ANY (ARRAY[''::text, 'gsm7'::text, 'ucs2'::text])))),
    CONSTRAINT routes_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'claimed'::text, 'failed'::text, 'published'::text, 'dead_letter'::text, 'skipped'::text, 'canceled'::text])))
)
PARTITION BY RANGE (finished_at);

COMMENT ON TABLE herald.routes IS 'One row per channel and recipient of a record: in routes_live while it can be delivered or replayed, in its finished week''s partition (routes_fYYYYMMDD) once terminal.';

COMMENT ON COLUMN herald.routes.finished_at IS 'When the route became terminal (published, skipped, canceled): its partition''s key. NULL while it can still be delivered or replayed, and on routes finished before migration 00025.';

COMMENT ON COLUMN herald.routes.receipt_parts IS 'The receipt key ("<provider> <message id>") of every part of a message sent in parts, in part order; NULL for one part (receipt_key).';

COMMENT ON COLUMN herald.routes.part_delivery_statuses IS 'Per part, in part order, the delivery status its receipts reported ('''' while none). The route''s delivery_status is undelivered if any part is, else expired if any is, else delivered if any is, else unknown.';

COMMENT ON COLUMN herald.routes.receipt_keyed_at IS 'When the attempt that got the provider''s message id(s) was claimed: a receipt belongs to the most recent route keyed at or before it arrived.';

CREATE INDEX routes_receipt_parts_idx ON ONLY herald.routes USING gin (receipt_parts) WITH (fastupdate=off) WHERE (receipt_parts IS NOT NULL);

CREATE INDEX routes_recipient_idx ON ONLY herald.routes USING btree (recipient_ref, created_at);

CREATE TRIGGER routes_callback AFTER UPDATE OF status, delivery_status ON herald.routes FOR EACH ROW WHEN ((new.notify_producer AND (((old.status IS DISTINCT FROM new.status) AND (new.status = ANY (ARRAY['published'::text, 'dead_letter'::text, 'skipped'::text, 'canceled'::text]))) OR ((old.delivery_status IS DISTINCT FROM new.delivery_status) AND (new.delivery_status = ANY (ARRAY['delivered'::text, 'undelivered'::text, 'expired'::text])))))) EXECUTE FUNCTION herald.routes_callback_enqueue();

CREATE TRIGGER routes_callback_finished AFTER INSERT ON herald.routes FOR EACH ROW WHEN ((new.notify_producer AND (new.finished_at IS NOT NULL) AND ((new.status = ANY (ARRAY['published'::text, 'skipped'::text, 'canceled'::text])) OR (new.delivery_status = ANY (ARRAY['delivered'::text, 'undelivered'::text, 'expired'::text]))))) EXECUTE FUNCTION herald.routes_callback_enqueue();

CREATE POLICY operator_write ON herald.routes TO herald_operator USING (true) WITH CHECK (true);

CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer WITH CHECK ((herald.notification_is_mine(notification_id) AND (channel <> 'callback'::text) AND herald.routes_address_ok(channel, recipient_ref) AND (status = 'pending'::text) AND (attempt_count = 0) AND (published_at IS NULL) AND (dead_lettered_at IS NULL) AND (skipped_at IS NULL) AND (canceled_at IS NULL) AND (last_error_at IS NULL) AND (last_error_classification = ''::text) AND (last_error_message = ''::text) AND (provider_message_id = ''::text) AND (lane = '!vet'::text) AND (providers IS NULL) AND (receipt_key IS NULL) AND (delivery_status IS NULL) AND (delivery_status_at IS NULL) AND (delivery_error = ''::text) AND (delivery_error_permanent IS NULL) AND (finished_at IS NULL) AND (receipt_parts IS NULL) AND (part_delivery_statuses IS NULL) AND (receipt_keyed_at IS NULL)));

CREATE POLICY producer_read ON herald.routes FOR SELECT TO herald_producer USING ((EXISTS ( SELECT 1
   FROM herald.records rec
  WHERE (rec.notification_id = routes.notification_id))));

ALTER TABLE herald.routes ENABLE ROW LEVEL SECURITY;

CREATE POLICY staff_read ON herald.routes FOR SELECT TO herald_operator, herald_auditor USING (true);

GRANT SELECT,UPDATE ON TABLE herald.routes TO herald_operator;
GRANT SELECT ON TABLE herald.routes TO herald_auditor;
GRANT SELECT,INSERT ON TABLE herald.routes TO herald_producer;


--
--

-- +goose Up
-- What seed 003 lacked for scheduling, the SQL intake door and recipient
-- resolution. Each change below says why it exists.

-- Priority, schedule and expiry are properties of the intent; they are kept on
-- the record for Get and the operator views, and copied onto each route so
-- the claim never needs the record to decide what is due.
ALTER TABLE herald.records
    ADD COLUMN channels text[] NOT NULL DEFAULT '{}',
    ADD COLUMN priority smallint NOT NULL DEFAULT 0,
    ADD COLUMN send_at timestamptz,
    ADD COLUMN expires_at timestamptz;

-- priority: 0 transactional, 1 bulk; lower is claimed first.
-- sms_encoding / sms_segments: computed once at intake (GSM-7 or UCS-2), so
-- recording them costs no extra write at delivery.
-- provider_message_id: what the channel's provider called the delivery (SMTP
-- queue id, SMS provider message id), for an operator chasing a complaint.
ALTER TABLE herald.routes
    ADD COLUMN priority smallint NOT NULL DEFAULT 0,
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN sms_encoding text NOT NULL DEFAULT '',
    ADD COLUMN sms_segments smallint NOT NULL DEFAULT 0,
    ADD COLUMN provider_message_id text NOT NULL DEFAULT '',
    ADD COLUMN canceled_at timestamptz,
    ADD CONSTRAINT routes_status_check CHECK (status IN
        ('pending', 'claimed', 'failed', 'published', 'dead_letter', 'skipped', 'canceled')),
    -- The scheduler invariant, enforced: next_attempt_at is non-NULL exactly
    -- while the route is a scheduling candidate (claimed means leased: the
    -- lease's end is its next_attempt_at, so a dead worker's route comes due).
    ADD CONSTRAINT routes_schedulable_check CHECK (
        (next_attempt_at IS NOT NULL) = (status IN ('pending', 'claimed', 'failed')));

-- The dispatcher claims per channel (each channel has its own concurrency),
-- highest priority first, then oldest due. One narrow partial index serves
-- exactly that scan; terminal rows never enter it.
DROP INDEX herald.routes_due_idx;
CREATE INDEX routes_due_idx ON herald.routes (channel, priority, next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;

-- Seed 003's status and channel indexes are dropped: every claim and every
-- completion changes status, so each of these indexes took a new entry on
-- every state change of every route (no update of routes can be HOT while
-- next_attempt_at is indexed). The operator views read non-terminal routes
-- through routes_due_idx and dead routes through dead_letters instead.
DROP INDEX herald.routes_status_idx;
DROP INDEX herald.routes_channel_idx;

-- intake is the SQL door: anyone allowed may INSERT a raw intent as text (any
-- language, or psql). The intake worker validates each entry and, in one
-- transaction, accepts it into records + routes or records it in
-- malformed_intents, and deletes it from here.
CREATE TABLE herald.intake (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);

-- +goose StatementBegin
CREATE FUNCTION herald.intake_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- One wake-up per statement, not per row: a bulk INSERT sends one hint.
    PERFORM pg_notify('herald_intake', '');
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER intake_notify AFTER INSERT ON herald.intake
    FOR EACH STATEMENT EXECUTE FUNCTION herald.intake_notify();

-- recipients is the directory that routes addressed to a user id resolve
-- through at delivery time. Producers upsert it; opted_out lists channels the
-- user has opted out of.
CREATE TABLE herald.recipients (
    user_id text PRIMARY KEY,
    email text NOT NULL DEFAULT '',
    phone text NOT NULL DEFAULT '',
    webhook_url text NOT NULL DEFAULT '',
    locale text NOT NULL DEFAULT '',
    opted_out text[] NOT NULL DEFAULT '{}',
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- audit_log: every replay, cancel and purge leaves a row: who, when, why, what.
CREATE TABLE herald.audit_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT now(),
    actor text NOT NULL,
    action text NOT NULL,
    reason text NOT NULL DEFAULT '',
    filter jsonb NOT NULL DEFAULT '{}'::jsonb,
    affected integer NOT NULL,
    details jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX audit_log_at_idx ON herald.audit_log (at DESC);

-- +goose Down
DROP TABLE IF EXISTS herald.audit_log;
DROP TABLE IF EXISTS herald.recipients;
DROP TABLE IF EXISTS herald.intake;
DROP FUNCTION IF EXISTS herald.intake_notify();
DROP INDEX IF EXISTS herald.routes_due_idx;
CREATE INDEX routes_due_idx ON herald.routes (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX routes_status_idx ON herald.routes (status);
CREATE INDEX routes_channel_idx ON herald.routes (channel);
ALTER TABLE herald.routes
    DROP CONSTRAINT routes_schedulable_check,
    DROP CONSTRAINT routes_status_check,
    DROP COLUMN canceled_at,
    DROP COLUMN provider_message_id,
    DROP COLUMN sms_segments,
    DROP COLUMN sms_encoding,
    DROP COLUMN expires_at,
    DROP COLUMN priority;
ALTER TABLE herald.records
    DROP COLUMN expires_at,
    DROP COLUMN send_at,
    DROP COLUMN priority,
    DROP COLUMN channels;

-- +goose Up
-- Mobile-originated messages: a deliver_sm that is not a
-- delivery receipt is a message someone sent to one of the senders' numbers
-- (a STOP, a reply). The SMPP driver stores it here before it answers the
-- SMSC, so none is dropped; operators read them. (Acting on them, as an
-- opt-out list would, is not herald's yet.)
CREATE TABLE herald.inbound_messages (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider text NOT NULL,
    from_addr text NOT NULL DEFAULT '',
    to_addr text NOT NULL DEFAULT '',
    body text NOT NULL DEFAULT '',
    data_coding smallint NOT NULL DEFAULT 0,
    received_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT inbound_messages_size_check CHECK (
        length(provider) <= 200 AND length(from_addr) <= 64 AND length(to_addr) <= 64 AND length(body) <= 65536)
);
CREATE INDEX inbound_messages_received_idx ON herald.inbound_messages (received_at DESC);
GRANT SELECT ON herald.inbound_messages TO herald_operator, herald_auditor;

-- +goose Down
DROP TABLE IF EXISTS herald.inbound_messages;

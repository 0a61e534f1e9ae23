-- +goose Up
-- sender_ids: the senders (SMS originators) an operator approved for a
-- producer (seed 002's registered and approved sender ids). An intent's
-- from_sender must be one of its producer's, or the accept path refuses it
-- (sender_not_approved). A row exists while the sender is approved:
-- approve inserts it, revoke deletes it, and each leaves an audit row
-- (herald.sender_id_approve, herald.sender_id_revoke), which keeps the
-- history. The primary key is what the accept path's one lookup per batch
-- reads.
CREATE TABLE herald.sender_ids (
    producer text NOT NULL,
    sender text NOT NULL,
    note text NOT NULL DEFAULT '',
    approved_at timestamptz NOT NULL DEFAULT now(),
    approved_by text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (producer, sender),
    -- The same rules as the Go door's (intake.SenderKindOf): 1 to 11
    -- letters and digits with a letter, or up to 15 digits, "+" first for
    -- an international number.
    CONSTRAINT sender_ids_sender_check CHECK (
        sender ~ '^[A-Za-z0-9]{1,11}$' AND sender ~ '[A-Za-z]'
        OR sender ~ '^\+?[0-9]{1,15}$'),
    CONSTRAINT sender_ids_producer_check CHECK (producer ~ '^[A-Za-z0-9._:-]{1,128}$'),
    CONSTRAINT sender_ids_note_check CHECK (length(note) <= 1000)
);

-- A producer reads its own senders (the Go door checks an intent in the
-- producer's transaction); operators and auditors read all. Nobody writes
-- but the engine: operators approve and revoke through the audited
-- functions.
GRANT SELECT ON herald.sender_ids TO herald_producer, herald_operator, herald_auditor;
ALTER TABLE herald.sender_ids ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_read ON herald.sender_ids FOR SELECT TO herald_producer
    USING (producer = (SELECT herald.acting_producer()));
CREATE POLICY staff_read ON herald.sender_ids FOR SELECT TO herald_operator, herald_auditor USING (true);

-- +goose Down
DROP TABLE herald.sender_ids;

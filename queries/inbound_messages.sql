-- Queries of herald.inbound_messages: mobile-originated messages the SMPP
-- driver received (migration 00015).

-- name: InboundMessageInsert :one
-- Stores one inbound message, before the SMSC is answered.
INSERT INTO herald.inbound_messages (provider, from_addr, to_addr, body, data_coding, received_at)
VALUES (@provider::text, @from_addr::text, @to_addr::text, @body::text, @data_coding::smallint,
    coalesce(sqlc.narg('now')::timestamptz, now()))
RETURNING id;

-- name: InboundMessageInsertMany :execrows
-- Stores a batch of inbound messages in one statement: the SMPP driver's
-- group commit (receipt.Group), as ReceiptInsertMany is for receipts. The
-- arrays are parallel, one element per message.
INSERT INTO herald.inbound_messages (provider, from_addr, to_addr, body, data_coding, received_at)
SELECT
    unnest(@providers::text[]),
    unnest(@from_addrs::text[]),
    unnest(@to_addrs::text[]),
    unnest(@bodies::text[]),
    unnest(@data_codings::smallint[]),
    coalesce(sqlc.narg('now')::timestamptz, now());

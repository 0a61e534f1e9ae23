-- name: SenderIDApproved :many
-- The pairs of (producers[i], senders[i]) that are approved, among those
-- given: the accept path's one lookup for a batch whose intents name a
-- sender. Row-level security shows a producer only its own.
SELECT s.producer, s.sender
FROM herald.sender_ids AS s
JOIN (SELECT unnest(@producers::text[]) AS producer, unnest(@senders::text[]) AS sender) AS w
    ON s.producer = w.producer AND s.sender = w.sender;

-- name: SenderIDList :many
-- The approved senders the caller may read, of one producer or ('') all.
SELECT producer, sender, note, approved_at, approved_by, created_at
FROM herald.sender_ids
WHERE @producer::text = '' OR producer = @producer::text
ORDER BY producer, sender;

-- name: SenderIDApprove :one
-- Approves a sender for a producer, audited (herald.sender_id_approve).
SELECT herald.sender_id_approve(@producer::text, @sender::text, @actor::text, @note::text)::boolean AS approved;

-- name: SenderIDRevoke :one
-- Revokes a sender's approval, audited (herald.sender_id_revoke).
SELECT herald.sender_id_revoke(@producer::text, @sender::text, @actor::text, @reason::text)::boolean AS revoked;

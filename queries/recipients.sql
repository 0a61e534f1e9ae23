-- name: RecipientUpsert :exec
-- Creates or replaces one user's directory entry; routes addressed to the
-- user resolve through it at delivery time.
INSERT INTO herald.recipients (user_id, email, phone, webhook_url, locale, opted_out, updated_at)
VALUES (
    @user_id, @email, @phone, @webhook_url, @locale, @opted_out::text[],
    coalesce(sqlc.narg('now')::timestamptz, now())
)
ON CONFLICT (user_id) DO UPDATE
SET email = excluded.email,
    phone = excluded.phone,
    webhook_url = excluded.webhook_url,
    locale = excluded.locale,
    opted_out = excluded.opted_out,
    updated_at = excluded.updated_at;

-- name: RecipientGet :one
-- One user's directory entry.
SELECT *
FROM herald.recipients
WHERE user_id = @user_id;

-- ---------------------------------------------------------------------------
-- Dispatcher section (internal/dispatch): delivery-time resolution.
-- ---------------------------------------------------------------------------

-- name: RecipientGetMany :many
-- The directory entries of a claimed batch's users, in one primary-key
-- lookup per id. Ids without an entry are simply absent from the result.
SELECT user_id, email, phone, webhook_url, locale, opted_out
FROM herald.recipients
WHERE user_id = ANY(@user_ids::text[]);

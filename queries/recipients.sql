-- name: RecipientUpsert :exec
-- Creates or replaces one user's directory entry: the connecting producer's
-- own entry (owner NULL: session_user, the login), or the shared
-- directory's (owner ''), which a herald_directory login keeps. Routes
-- addressed to the user resolve through it at delivery time. Row-level
-- security holds a producer to its own entries and a directory login to the
-- shared ones; the column-level UPDATE grant is what ON CONFLICT DO UPDATE
-- needs, and no more.
INSERT INTO herald.recipients (owner, user_id, email, phone, webhook_url, locale, opted_out, updated_at)
VALUES (
    coalesce(sqlc.narg('owner')::text, session_user), @user_id, @email, @phone, @webhook_url, @locale,
    @opted_out::text[], coalesce(sqlc.narg('now')::timestamptz, now())
)
ON CONFLICT (owner, user_id) DO UPDATE
SET email = excluded.email,
    phone = excluded.phone,
    webhook_url = excluded.webhook_url,
    locale = excluded.locale,
    opted_out = excluded.opted_out,
    updated_at = excluded.updated_at;

-- name: RecipientDelete :one
-- Deletes one of the caller's entries, or of the shared directory's
-- (schema function herald.recipient_delete), and says whether there was one.
SELECT herald.recipient_delete(@user_id::text, @shared::boolean)::boolean AS deleted;

-- ---------------------------------------------------------------------------
-- Dispatcher section (internal/dispatch): delivery-time resolution.
-- ---------------------------------------------------------------------------

-- name: RecipientGetMany :many
-- The directory entries of a claimed batch's (producer, user id) pairs: the
-- producer's own entry for the user if it has one, else the shared
-- directory's. Each pair is at most two primary-key probes, (producer, id)
-- and ('', id); DISTINCT ON keeps the own entry, which sorts first because
-- '' sorts before every producer name. Pairs without an entry are simply
-- absent from the result.
SELECT DISTINCT ON (k.producer, k.user_id)
    k.producer::text AS producer, r.user_id, r.email, r.phone, r.webhook_url, r.locale, r.opted_out
FROM (
    SELECT unnest(@producers::text[]) AS producer, unnest(@user_ids::text[]) AS user_id
) AS k
JOIN herald.recipients r ON r.user_id = k.user_id AND r.owner IN (k.producer, '')
ORDER BY k.producer, k.user_id, r.owner DESC;

-- name: RecipientGetOwn :one
-- One of the caller's own directory entries (owner @owner, the acting
-- producer), for the HTTP API's GET; row-level security holds the caller
-- to its own entries besides.
SELECT user_id, email, phone, webhook_url, locale, opted_out
FROM herald.recipients
WHERE owner = @owner AND user_id = @user_id;

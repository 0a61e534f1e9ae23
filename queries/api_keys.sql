-- Queries of herald.api_keys: the HTTP API's keys (internal/api). Keys are
-- written only through the schema functions herald.api_key_create and
-- herald.api_key_revoke, which operators execute and which write the audit
-- row; the API reads nothing here itself: herald.acting_producer() does.

-- name: APIKeyCreate :one
-- Stores a new key of @producer as its SHA-256 and display prefix, audited
-- (schema function herald.api_key_create).
SELECT k.id::bigint AS id, k.created_at::timestamptz AS created_at
FROM herald.api_key_create(@producer::text, @key_hash::bytea, @key_prefix::text, @actor::text, @reason::text) AS k;

-- name: APIKeyRevoke :one
-- Revokes key @id of @producer, audited, and returns when it was revoked
-- (schema function herald.api_key_revoke; no_data_found for an id that is
-- not @producer's key).
SELECT herald.api_key_revoke(@producer::text, @id::bigint, @actor::text, @reason::text)::timestamptz AS revoked_at;

-- name: APIKeyList :many
-- The keys, of one producer or of all, oldest first; never a hash.
SELECT id, producer, key_prefix, created_at, created_by, revoked_at, last_used_at
FROM herald.api_keys
WHERE sqlc.narg('producer')::text IS NULL OR producer = sqlc.narg('producer')::text
ORDER BY producer, id;

-- name: APIKeyAuthenticate :one
-- Sets the transaction's key (herald.api_key, reset at its end) and returns
-- the producer it acts as: '' when the key is unknown or revoked. The
-- subquery runs first (its volatile set_config keeps it from being pulled
-- up), so acting_producer reads the key just set.
SELECT coalesce(herald.acting_producer(), '')::text AS producer
FROM (SELECT set_config('herald.api_key', @api_key::text, true)) AS s;

-- name: APIKeyTouch :exec
-- Records that the transaction's key was used (last_used_at, at most once
-- a minute; schema function herald.api_key_touch).
SELECT herald.api_key_touch();

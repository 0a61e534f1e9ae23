-- Queries of herald.providers: the configured instances of each channel's
-- drivers, written only through herald.routing_apply (RoutingApply in
-- routing_state.sql) and read by internal/routing.

-- name: ProviderList :many
-- Every provider, by name: part of the routing table internal/routing
-- loads in one REPEATABLE READ transaction with the rules and the version.
SELECT *
FROM herald.providers
ORDER BY name;

-- name: ProviderListOpenCircuits :many
-- The providers whose circuit is open now (herald.provider_circuits), for
-- `herald routing test`. A circuit whose cool-down has passed counts as
-- closed even before a serve process closes it. Reads every circuit: one
-- row per provider.
SELECT c.provider, c.open_until::timestamptz AS open_until, c.reason
FROM herald.provider_circuits c
WHERE c.state = 'open'
    AND c.open_until > coalesce(sqlc.narg('now')::timestamptz, now())
ORDER BY c.provider;

-- name: ProviderStateSet :one
-- Sets a provider's state (herald.provider_state_set: audited, the
-- routing version bumped, serve processes told).
SELECT s.name::text AS name, s.new_state::text AS state, s.previous_state::text AS previous_state,
    s.changed::boolean AS changed, s.changed_at::timestamptz AS changed_at
FROM herald.provider_state_set(@provider::text, @state::text, @actor::text, @reason::text) AS s;

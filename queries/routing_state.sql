-- Queries of herald.routing_state, the one row whose version says which
-- providers and rules are current, and of routing_apply, which replaces
-- them and bumps it.

-- name: RoutingStateGet :one
-- The current version (0 before the first apply), when it was applied and
-- by which login. Cheap enough to poll every few seconds.
SELECT version, applied_at, applied_by
FROM herald.routing_state;

-- name: RoutingApply :many
-- Replaces every provider and rule with doc's in one transaction (schema
-- function herald.routing_apply, which operators may execute): it takes a
-- transaction-level advisory lock so that applies run one at a time, and,
-- when something changed and dry_run is false, writes the audit row
-- (action routing_apply), bumps routing_state.version and NOTIFYs
-- herald_routing. Returns what changed (or would), by kind and name; no
-- rows when doc matches the database. A rule naming a provider of another
-- channel fails with foreign_key_violation (23503).
SELECT a.kind::text AS kind, a.name::text AS name, a.change::text AS change
FROM herald.routing_apply(@doc::jsonb, @actor::text, @reason::text, @dry_run::boolean) AS a;

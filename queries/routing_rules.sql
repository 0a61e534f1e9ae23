-- Queries of herald.routing_rules: each channel's rules, in order, written
-- only through herald.routing_apply (RoutingApply in routing_state.sql).

-- name: RoutingRuleList :many
-- Every rule, per channel in position order (the primary key's order): the
-- first whose matchers all match a route decides its provider.
SELECT *
FROM herald.routing_rules
ORDER BY channel, position;

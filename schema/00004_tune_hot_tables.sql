-- +goose Up
-- Storage settings for herald.routes, the table every route churns through:
-- one insert, then two updates (claim, complete), neither of which can be
-- HOT because both change next_attempt_at, which routes_due_idx indexes.
-- Chosen by measurement with `herald bench`, against the defaults: more
-- routes delivered per second and less WAL per route (the figures are in
-- this file's history: `git log --follow schema/00004_tune_hot_tables.sql`).
--
-- fillfactor = 70 leaves room on each page for a route's next versions, so
-- the claim's and the completion's new tuples land on the page they left
-- instead of competing with the producers' inserts to extend the relation
-- (the bench's wait-event samples showed Lock:extend on those updates),
-- and pruning on the page reclaims their space without vacuum. The table
-- starts 30% larger per live row; the due index is unchanged.
--
-- The autovacuum settings make vacuum follow the churn: with the default
-- scale factor (0.2) a table of a million routes waits for 200,000 dead
-- tuples; 0.02 vacuums after 20,000, with no cost delay so it keeps up,
-- and the insert threshold keeps the visibility map fresh for index-only
-- reads of the due index (RouteNextDue, the backlog metrics).
ALTER TABLE herald.routes SET (
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0
);

-- +goose Down
ALTER TABLE herald.routes RESET (
    fillfactor,
    autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_insert_scale_factor,
    autovacuum_vacuum_cost_delay
);

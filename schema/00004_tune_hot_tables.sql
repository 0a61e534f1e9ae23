-- +goose Up
-- Storage settings for herald.routes, the table every route churns through:
-- one insert, then two updates (claim, complete), neither of which can be
-- HOT because both change next_attempt_at, which routes_due_idx indexes.
-- Chosen by measurement with `herald bench` (100,000 intents, one webhook
-- route each, no-op channel, submit batches of 1,000, fsync on, 2 CPUs,
-- three alternating rounds per variant on one cluster):
--
--   variant                          delivered/s            WAL per route
--   default (fillfactor 100)         5,946  7,405  7,007    2,630 2,609 2,560 B
--   fillfactor 70 + autovacuum below 10,377 15,498 14,100   2,416 2,438 2,416 B
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

-- +goose Up
-- Dead letters no longer carry a foreign key to their route. The key's
-- ON DELETE CASCADE cost every route retention deletes a trigger that ran
-- a query on dead_letters (SPI): a third of RecordDeleteFinished's time
-- for a batch of 1,000 (EXPLAIN ANALYZE: 9.3 ms of 28 ms), paid by every
-- finished route although finished routes have no dead letter, and the
-- key's check cost every dead letter written a query on routes. What the
-- key guaranteed holds by construction instead, as for routes and records
-- (migration 00005):
--   * a dead letter is only ever inserted by the completion that moves its
--     route to dead_letter (RouteComplete), in the same statement, so its
--     route exists;
--   * routes are only ever deleted by retention (RecordDeleteFinished,
--     RecordDeleteDeadLettered), which deletes the dead letters of the
--     records it deletes in the same statement, with one index scan of
--     dead_letters' primary key per batch instead of one query per route.
-- An operator deleting routes by hand must delete their dead letters too.
ALTER TABLE herald.dead_letters DROP CONSTRAINT dead_letters_notification_id_route_id_fkey;

-- +goose Down
ALTER TABLE herald.dead_letters
    ADD CONSTRAINT dead_letters_notification_id_route_id_fkey FOREIGN KEY (notification_id, route_id)
    REFERENCES herald.routes (notification_id, route_id) ON DELETE CASCADE;

-- +goose Up
-- Routes no longer carry a foreign key to their record. The key cost every
-- accepted route a trigger that ran a query on records (SPI) and took a
-- FOR KEY SHARE lock on the record, which writes the record's tuple header
-- and a WAL record: Postgres CPU and WAL paid by every route (herald bench
-- and perf measured them; the figures are in this file's history). What
-- the key guaranteed holds by construction instead:
--   * a route is only ever inserted by RecordInsertMany, in the statement
--     that inserts its record (routes are joined to the records that
--     statement inserted);
--   * records are only ever deleted by retention (RecordDeleteFinished,
--     RecordDeleteDeadLettered), which deletes their routes in the same
--     statement; the routes' own key from dead_letters still cascades.
-- An operator deleting records by hand must delete their routes too.
ALTER TABLE herald.routes DROP CONSTRAINT routes_notification_id_fkey;

-- +goose Down
ALTER TABLE herald.routes
    ADD CONSTRAINT routes_notification_id_fkey FOREIGN KEY (notification_id)
    REFERENCES herald.records (notification_id) ON DELETE CASCADE;

-- +goose Up
-- Providers may use the smpp driver: SMS submitted to an SMSC
-- over SMPP 3.4. Its settings, like every driver's, hold references to
-- credentials only ({"smpp": {"password": {"env": ...}}}).
ALTER TABLE herald.providers DROP CONSTRAINT providers_driver_check;
ALTER TABLE herald.providers ADD CONSTRAINT providers_driver_check
    CHECK (driver IN ('webhook', 'smtp', 'sms-http', 'smpp', 'log', 'discard'));

-- +goose Down
-- Fails while a provider uses smpp: remove it (herald providers apply)
-- before migrating down.
ALTER TABLE herald.providers DROP CONSTRAINT providers_driver_check;
ALTER TABLE herald.providers ADD CONSTRAINT providers_driver_check
    CHECK (driver IN ('webhook', 'smtp', 'sms-http', 'log', 'discard'));

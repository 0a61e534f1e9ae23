-- +goose Up
-- An operator takes a provider out of routing without editing the providers
-- file: state says whether routing may send it new attempts (enabled),
-- sends it none while the attempts it already holds finish (draining), or
-- sends it nothing at all (disabled). Only herald.provider_state_set
-- changes it, audited; herald providers apply keeps it, so exporting the
-- file and applying it again changes nothing.
ALTER TABLE herald.providers
    ADD COLUMN state text NOT NULL DEFAULT 'enabled',
    ADD COLUMN state_reason text NOT NULL DEFAULT '',
    ADD COLUMN state_changed_at timestamptz,
    ADD CONSTRAINT providers_state_check CHECK (state IN ('enabled', 'draining', 'disabled')),
    ADD CONSTRAINT providers_state_reason_check CHECK (length(state_reason) <= 1000);

-- Failovers, counted where they happen: each serve process adds, per
-- bucket and provider that failed, how many routes it sent on to which
-- provider ({"sms/backup": 12}), with its health counts; one upsert per
-- flush, no write per route.
ALTER TABLE herald.provider_health
    ADD COLUMN failovers jsonb NOT NULL DEFAULT '{}';

COMMENT ON COLUMN herald.provider_health.failovers IS 'Routes whose attempt at this provider failed transiently and whose next attempt routing sent to another provider, by that provider: {"sms/backup": 12}.';

-- +goose Down
ALTER TABLE herald.provider_health DROP COLUMN failovers;
ALTER TABLE herald.providers
    DROP COLUMN state_changed_at,
    DROP COLUMN state_reason,
    DROP COLUMN state;

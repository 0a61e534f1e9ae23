-- herald.provider_health as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.provider_health (
    provider text NOT NULL,
    bucket timestamp with time zone NOT NULL,
    delivered bigint DEFAULT 0 NOT NULL,
    transient bigint DEFAULT 0 NOT NULL,
    permanent bigint DEFAULT 0 NOT NULL,
    throttled bigint DEFAULT 0 NOT NULL,
    latency_seconds_sum double precision DEFAULT 0 NOT NULL,
    latency_seconds_max double precision DEFAULT 0 NOT NULL,
    unavailable bigint DEFAULT 0 NOT NULL,
    unavailable_reason text DEFAULT ''::text NOT NULL,
    failovers jsonb DEFAULT '{}'::jsonb NOT NULL
);

COMMENT ON COLUMN herald.provider_health.throttled IS 'Routes that waited for the provider''s cap, and attempts the provider answered with a request to slow down (SMPP ESME_RTHROTTLED or ESME_RMSGQFUL, HTTP 429): never counted as transient failures.';

COMMENT ON COLUMN herald.provider_health.unavailable IS 'Health rounds (one a second per serve process) in which the provider could not send at all.';

COMMENT ON COLUMN herald.provider_health.unavailable_reason IS 'Why the provider could not send, as last seen in the bucket (e.g. the SMSC refused the bind: ESME_RINVPASWD).';

COMMENT ON COLUMN herald.provider_health.failovers IS 'Routes whose attempt at this provider failed transiently and whose next attempt routing sent to another provider, by that provider: {"sms/backup": 12}.';

ALTER TABLE ONLY herald.provider_health
    ADD CONSTRAINT provider_health_pkey PRIMARY KEY (provider, bucket);

GRANT SELECT ON TABLE herald.provider_health TO herald_operator;
GRANT SELECT ON TABLE herald.provider_health TO herald_auditor;


--
--

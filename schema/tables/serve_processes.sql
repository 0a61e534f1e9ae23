-- herald.serve_processes as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.serve_processes (
    id text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    version text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    heartbeat_interval interval NOT NULL,
    ready boolean NOT NULL,
    not_ready_reason text DEFAULT ''::text NOT NULL,
    parts jsonb DEFAULT '{}'::jsonb NOT NULL,
    stopped_at timestamp with time zone,
    CONSTRAINT serve_processes_interval_check CHECK ((heartbeat_interval > '00:00:00'::interval)),
    CONSTRAINT serve_processes_reason_check CHECK ((length(not_ready_reason) <= 2000))
)
WITH (fillfactor='50');

COMMENT ON TABLE herald.serve_processes IS 'One row per herald serve process: its readiness at its last heartbeat. Stale when heartbeat_at is older than three heartbeat_intervals and stopped_at is null.';

ALTER TABLE ONLY herald.serve_processes
    ADD CONSTRAINT serve_processes_pkey PRIMARY KEY (id);

GRANT SELECT ON TABLE herald.serve_processes TO herald_operator;
GRANT SELECT ON TABLE herald.serve_processes TO herald_auditor;


--
--

-- +goose Up
-- serve_processes: one row per herald serve process, kept by the process
-- itself, so that the console and `herald status` list every serve with
-- its readiness without reaching each one's metrics address. A process
-- inserts its row when its engine starts, updates heartbeat_at, ready and
-- not_ready_reason every heartbeat_interval (what its /readyz would answer
-- then), and sets stopped_at when it stops cleanly; a process that dies
-- leaves heartbeat_at to go stale, which readers judge against its own
-- interval. Maintenance deletes the rows stopped or silent for a day.
--
-- id is the process's for its life: host, pid and start time. The engine
-- writes as the table's owner; operators and auditors read; producers see
-- nothing. Every heartbeat updates the row in place: with room left in
-- each page the update stays HOT.
CREATE TABLE herald.serve_processes (
    id text PRIMARY KEY,
    host text NOT NULL,
    pid integer NOT NULL,
    version text NOT NULL,
    started_at timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    heartbeat_interval interval NOT NULL,
    ready boolean NOT NULL,
    not_ready_reason text NOT NULL DEFAULT '',
    parts jsonb NOT NULL DEFAULT '{}',
    stopped_at timestamptz,
    CONSTRAINT serve_processes_interval_check CHECK (heartbeat_interval > '0'::interval),
    CONSTRAINT serve_processes_reason_check CHECK (length(not_ready_reason) <= 2000)
) WITH (fillfactor = 50);

COMMENT ON TABLE herald.serve_processes IS 'One row per herald serve process: its readiness at its last heartbeat. Stale when heartbeat_at is older than three heartbeat_intervals and stopped_at is null.';

GRANT SELECT ON herald.serve_processes TO herald_operator, herald_auditor;

-- +goose Down
DROP TABLE herald.serve_processes;

-- Queries about streaming replication: where a read that may leave the
-- primary goes (internal/connstr's ConnectRead).

-- name: ReplicationPrimaryPosition :one
-- The primary's WAL insert position: everything committed on it so far,
-- asynchronous commits not yet flushed included, lies before it. A
-- replica that has replayed up to it shows every one of those commits.
SELECT pg_current_wal_insert_lsn()::text AS lsn;

-- name: ReplicationReplayState :one
-- How far a standby has replayed, against @target (a primary's position,
-- ReplicationPrimaryPosition): whether it is a standby at all, whether it
-- has replayed up to @target, whether replay is paused (then it will not
-- get there by waiting), and how long ago the last transaction it
-- replayed was committed on the primary (-1: none since it started),
-- which bounds how stale it is from above while it is behind. Every
-- function here may be called by any login.
SELECT
    pg_is_in_recovery()::boolean AS in_recovery,
    coalesce(pg_last_wal_replay_lsn() >= (@target::text)::pg_lsn, false)::boolean AS caught_up,
    (CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END)::boolean AS paused,
    coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), -1)::float8 AS replay_age_seconds;

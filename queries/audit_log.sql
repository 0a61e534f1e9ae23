-- Queries of herald.audit_log. Rows are written only through the schema
-- functions herald.audit_append (AuditInsert, DeadLetterReplay) and
-- herald.notification_cancel (RouteCancelByNotification), which stamp the
-- database login; no role may insert into the table directly.

-- name: AuditInsert :one
-- Writes one audit row (schema function herald.audit_append): for a replay
-- that moved nothing, or one queued as a River job.
SELECT a.id::bigint AS id, a.logged_at::timestamptz AS at
FROM herald.audit_append(
    @actor::text, @action::text, @reason::text, @filter::jsonb, @affected::integer,
    @details::jsonb || jsonb_build_object('db_user', session_user::text),
    sqlc.narg('now')::timestamptz) AS a;

-- name: AuditSummaryByReplay :one
-- What the audit log says one replay (all its batches, across restarts)
-- has done: the batches written and the routes they moved. No row for a
-- replay that has not written a batch yet (so first_at and last_at are
-- never NULL).
SELECT
    count(*)::bigint AS batches,
    coalesce(sum(affected), 0)::bigint AS affected,
    min(at)::timestamptz AS first_at,
    max(at)::timestamptz AS last_at
FROM herald.audit_log
WHERE action = 'dead_letter_replay'
    AND details @> jsonb_build_object('replay_id', @replay_id::text)
HAVING count(*) > 0;

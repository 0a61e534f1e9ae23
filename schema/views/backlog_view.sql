-- The backlog is in routes_live: said so, the view reads routes_due_idx
-- there and nothing of the finished weeks (which have no due index).
CREATE OR REPLACE VIEW herald.backlog_view AS
SELECT r.channel,
    r.status,
    count(*) AS routes,
    count(*) FILTER (WHERE r.due_at <= now()) AS due,
    min(r.due_at) FILTER (WHERE r.due_at <= now()) AS oldest_due_at,
    coalesce(now() - min(r.due_at) FILTER (WHERE r.due_at <= now()), interval '0') AS lag,
    min(r.due_at) FILTER (WHERE r.due_at > now()) AS next_due_at
FROM (
    SELECT routes.channel, routes.status,
        CASE WHEN routes.status = 'claimed' THEN coalesce(routes.lease_until, routes.next_attempt_at)
            ELSE routes.next_attempt_at END AS due_at
    FROM herald.routes
    WHERE routes.next_attempt_at IS NOT NULL AND routes.finished_at IS NULL
) AS r
GROUP BY r.channel, r.status;

GRANT SELECT ON TABLE herald.backlog_view TO herald_operator;
GRANT SELECT ON TABLE herald.backlog_view TO herald_auditor;

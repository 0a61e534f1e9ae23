-- +goose Up
-- What an operator or an auditor reads with psql alone (DESIGN.md invariant
-- 6), and the roles an administrator grants to logins. README's "Operating
-- herald" section shows an example query for each object created here.

-- dead_letter_view: one row per dead route, with what its notification was
-- and why it died. recipient_ref is shown as stored (a user id, or an address
-- for a direct recipient): the view is for operators and auditors, who may
-- read everything; producers are not granted it.
CREATE VIEW herald.dead_letter_view AS
SELECT
    d.notification_id,
    d.route_id,
    rec.notification_type,
    rec.producer,
    d.recipient_ref,
    d.channel,
    d.final_attempt_count AS attempts,
    d.max_attempts,
    d.failure_classification AS classification,
    d.failure_message AS message,
    d.recovery_hint,
    rec.accepted_at,
    coalesce(r.last_error_at, d.created_at) AS last_failed_at,
    d.created_at AS dead_lettered_at
FROM herald.dead_letters d
JOIN herald.routes r ON r.notification_id = d.notification_id AND r.route_id = d.route_id
JOIN herald.records rec ON rec.notification_id = d.notification_id;

-- backlog_view: the routes still to deliver, per channel and status. It reads
-- routes_due_idx only (every column is in it and only scheduling candidates
-- are), so it is cheap however many finished routes the table holds. due
-- counts the routes whose time has come (a claimed route is due when its
-- lease has run out: its worker died); lag is how late the most overdue of
-- them is, zero when none is late.
CREATE VIEW herald.backlog_view AS
SELECT
    channel,
    status,
    count(*) AS routes,
    count(*) FILTER (WHERE next_attempt_at <= now()) AS due,
    min(next_attempt_at) FILTER (WHERE next_attempt_at <= now()) AS oldest_due_at,
    coalesce(now() - min(next_attempt_at) FILTER (WHERE next_attempt_at <= now()), interval '0') AS lag,
    min(next_attempt_at) FILTER (WHERE next_attempt_at > now()) AS next_due_at
FROM herald.routes
WHERE next_attempt_at IS NOT NULL
GROUP BY channel, status;

-- malformed_view: the intake entries the validator refused, newest first
-- (along malformed_intents_listing_idx).
CREATE VIEW herald.malformed_view AS
SELECT
    stream_entry_id,
    recorded_at,
    failure_code,
    failure_message,
    producer,
    notification_type,
    idempotency_key,
    raw_fields
FROM herald.malformed_intents
ORDER BY recorded_at DESC, stream_entry_id DESC;

-- notification_timeline: what happened to one notification, in order: its
-- acceptance, each route's creation, its last failure, its outcome, its
-- next scheduled attempt, and the replays and cancels from the audit log
-- (which it scans: audit_log stays small, and this is for one person's
-- question). herald keeps no row per attempt (each would cost a write per
-- delivery), so a route's earlier failures are summarised by its attempt
-- count and its last error. Runs with the caller's privileges.
-- +goose StatementBegin
CREATE FUNCTION herald.notification_timeline(id text)
RETURNS TABLE (
    at timestamptz,
    route_id text,
    channel text,
    event text,
    attempt integer,
    detail text
)
LANGUAGE sql STABLE
AS $$
    SELECT e.at, e.route_id, e.channel, e.event, e.attempt, e.detail
    FROM (
        SELECT rec.accepted_at AS at, 0 AS ord, '' AS route_id, '' AS channel, 'accepted' AS event, 0 AS attempt,
            format('type %s from %s, channels %s, priority %s', rec.notification_type, rec.producer,
                array_to_string(rec.channels, ','), rec.priority) AS detail
        FROM herald.records rec
        WHERE rec.notification_id = notification_timeline.id
        UNION ALL
        SELECT r.created_at, 1, r.route_id, r.channel, 'routed', 0,
            format('to %s, max attempts %s', r.recipient_ref,
                CASE WHEN r.max_attempts = 0 THEN 'channel default' ELSE r.max_attempts::text END)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id
        UNION ALL
        -- The last failure, unless it is the one that dead-lettered the route
        -- (shown below with its recovery hint).
        SELECT r.last_error_at, 2, r.route_id, r.channel, 'failed', r.attempt_count,
            format('%s: %s', r.last_error_classification, r.last_error_message)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id
            AND r.last_error_at IS NOT NULL
            AND (r.dead_lettered_at IS NULL OR r.last_error_at < r.dead_lettered_at)
        UNION ALL
        SELECT r.published_at, 3, r.route_id, r.channel, 'published', r.attempt_count,
            CASE WHEN r.provider_message_id <> '' THEN 'provider id ' || r.provider_message_id ELSE '' END
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.published_at IS NOT NULL
        UNION ALL
        SELECT coalesce(d.created_at, r.dead_lettered_at), 3, r.route_id, r.channel, 'dead_lettered',
            coalesce(d.final_attempt_count, r.attempt_count),
            CASE WHEN d.notification_id IS NULL
                THEN format('%s: %s', r.last_error_classification, r.last_error_message)
                ELSE format('%s: %s (hint: %s)', d.failure_classification, d.failure_message, d.recovery_hint)
            END
        FROM herald.routes r
        LEFT JOIN herald.dead_letters d ON d.notification_id = r.notification_id AND d.route_id = r.route_id
        WHERE r.notification_id = notification_timeline.id AND r.dead_lettered_at IS NOT NULL
        UNION ALL
        SELECT r.skipped_at, 3, r.route_id, r.channel, 'skipped', r.attempt_count,
            format('%s: %s', r.last_error_classification, r.last_error_message)
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.skipped_at IS NOT NULL
        UNION ALL
        SELECT r.canceled_at, 3, r.route_id, r.channel, 'canceled', r.attempt_count, ''
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.canceled_at IS NOT NULL
        UNION ALL
        -- Replays and cancels name the routes they moved in details.routes.
        SELECT a.at, 4, x.route_id, x.channel, a.action, 0,
            format('by %s: %s', a.actor, a.reason)
        FROM herald.audit_log a
        CROSS JOIN LATERAL jsonb_to_recordset(a.details -> 'routes')
            AS x(notification_id text, route_id text, channel text)
        WHERE a.details @> jsonb_build_object('routes', jsonb_build_array(jsonb_build_object('notification_id', notification_timeline.id)))
            AND x.notification_id = notification_timeline.id
        UNION ALL
        -- The client's cancels name the notification in their filter.
        SELECT a.at, 4, '', '', a.action, 0,
            format('by %s: %s (%s routes)', a.actor, a.reason, a.affected)
        FROM herald.audit_log a
        WHERE a.filter @> jsonb_build_object('notification_id', notification_timeline.id)
        UNION ALL
        SELECT r.next_attempt_at, 5, r.route_id, r.channel,
            CASE r.status WHEN 'claimed' THEN 'lease_ends' ELSE 'next_attempt' END,
            r.attempt_count + CASE r.status WHEN 'claimed' THEN 0 ELSE 1 END, r.status
        FROM herald.routes r
        WHERE r.notification_id = notification_timeline.id AND r.next_attempt_at IS NOT NULL
    ) AS e
    ORDER BY e.at, e.ord, e.route_id;
$$;
-- +goose StatementEnd

-- notification_owned_by tells a producer's row-level security policy whether
-- a notification belongs to the producer named who. It is SECURITY DEFINER
-- and VOLATILE on purpose: volatile, so that it sees the record inserted
-- earlier in the same statement (RecordInsertMany inserts records and their
-- routes in one statement, and a plain EXISTS in the policy would not see the
-- new record); security definer, so that it reads records past their own
-- policy. It says only yes or no.
-- +goose StatementBegin
CREATE FUNCTION herald.notification_owned_by(nid text, who text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM herald.records WHERE notification_id = nid AND producer = who);
END;
$$;
-- +goose StatementEnd

-- The roles. Roles belong to the whole cluster, not to this database, and
-- many databases (every test database, or several herald installations) may
-- share one cluster: create each only if it is missing, and tolerate a
-- concurrent migration creating it first. A migrating login without
-- CREATEROLE works too when an administrator created the three roles first.
-- +goose StatementBegin
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['herald_producer', 'herald_operator', 'herald_auditor'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created by a concurrent migration of another database
            END;
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

GRANT USAGE ON SCHEMA herald TO herald_producer, herald_operator, herald_auditor;

-- herald_producer submits through both doors and reads its own
-- notifications. Its identity is its role name: a record is its own when
-- records.producer = current_user, so a producer's login is named after the
-- producer. current_user, unlike a session setting, cannot be spoofed (a
-- login can SET ROLE only to roles it is a member of) and needs nothing from
-- a connection pool.
GRANT INSERT ON herald.intake TO herald_producer;
GRANT SELECT, INSERT ON herald.records TO herald_producer;
GRANT SELECT, INSERT, UPDATE ON herald.routes TO herald_producer;
GRANT SELECT ON herald.dead_letters TO herald_producer;
GRANT SELECT, INSERT, UPDATE ON herald.recipients TO herald_producer;
-- The client's Cancel writes its audit row in the cancel's transaction.
GRANT INSERT ON herald.audit_log TO herald_producer;
REVOKE ALL ON FUNCTION herald.notification_owned_by(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.notification_owned_by(text, text) TO herald_producer;

-- herald_operator reads everything, replays dead letters (routes back to
-- pending, dead_letters rows deleted), cancels routes, purges malformed
-- intents, and writes the audit log; it enqueues bulk replays as River jobs
-- through dead_letter_replay_enqueue below. The audit log's identity column
-- needs no sequence privilege.
GRANT SELECT ON ALL TABLES IN SCHEMA herald TO herald_operator, herald_auditor;
GRANT UPDATE ON herald.routes TO herald_operator;
-- (A replay locks dead_letters rows FOR UPDATE, which takes UPDATE.)
GRANT UPDATE, DELETE ON herald.dead_letters TO herald_operator;
GRANT DELETE ON herald.malformed_intents TO herald_operator;
GRANT INSERT ON herald.audit_log TO herald_operator;
REVOKE ALL ON FUNCTION herald.notification_timeline(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.notification_timeline(text) TO herald_operator, herald_auditor;

-- River's tables are created after herald's migrations (and re-created by
-- River's own), so both roles read them through the migrating role's default
-- privileges (a bulk replay's progress is also its River job's output).
ALTER DEFAULT PRIVILEGES IN SCHEMA herald GRANT SELECT ON TABLES TO herald_operator, herald_auditor;

-- dead_letter_replay_enqueue queues a bulk replay as a River job (kind
-- herald_replay, worked by internal/operator's ReplayWorker in `herald
-- serve`). It is SECURITY DEFINER so that the operator needs no privilege on
-- River's tables (River's own insert takes UPDATE for its unique-job upsert);
-- it inserts exactly the row River's insert would for this job, which River's
-- producers pick up at their next poll. args is the job's JSON (ReplayArgs);
-- it must name an actor and a replay id.
-- +goose StatementBegin
CREATE FUNCTION herald.dead_letter_replay_enqueue(args jsonb)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job_id bigint;
BEGIN
    IF jsonb_typeof(args) IS DISTINCT FROM 'object'
        OR coalesce(args ->> 'actor', '') = ''
        OR coalesce(args ->> 'replay_id', '') = '' THEN
        RAISE EXCEPTION 'replay job args must name an actor and a replay_id'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO herald.river_job (args, kind, max_attempts, priority, queue, metadata)
    VALUES (args, 'herald_replay', 10, 1, 'default', '{}')
    RETURNING id INTO job_id;
    RETURN job_id;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.dead_letter_replay_enqueue(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.dead_letter_replay_enqueue(jsonb) TO herald_operator;

-- Row-level security. The engine runs as the role that owns these tables
-- (the one that ran the migrations), and an owner bypasses RLS (no FORCE
-- here), so claims and completes pay nothing for it; only logins granted
-- herald_producer are filtered. Operators and auditors see every row.
ALTER TABLE herald.records ENABLE ROW LEVEL SECURITY;
ALTER TABLE herald.routes ENABLE ROW LEVEL SECURITY;
ALTER TABLE herald.dead_letters ENABLE ROW LEVEL SECURITY;

CREATE POLICY producer_own ON herald.records TO herald_producer
    USING (producer = current_user)
    WITH CHECK (producer = current_user);
CREATE POLICY producer_read ON herald.routes FOR SELECT TO herald_producer
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = routes.notification_id));
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (herald.notification_owned_by(notification_id, current_user));
-- A producer may only cancel its own routes (the client's Cancel).
CREATE POLICY producer_cancel ON herald.routes FOR UPDATE TO herald_producer
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = routes.notification_id))
    WITH CHECK (status = 'canceled');
CREATE POLICY producer_read ON herald.dead_letters FOR SELECT TO herald_producer
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = dead_letters.notification_id));

CREATE POLICY staff_read ON herald.records FOR SELECT TO herald_operator, herald_auditor USING (true);
CREATE POLICY staff_read ON herald.routes FOR SELECT TO herald_operator, herald_auditor USING (true);
CREATE POLICY staff_read ON herald.dead_letters FOR SELECT TO herald_operator, herald_auditor USING (true);
CREATE POLICY operator_write ON herald.routes FOR ALL TO herald_operator USING (true) WITH CHECK (true);
CREATE POLICY operator_write ON herald.dead_letters FOR ALL TO herald_operator USING (true) WITH CHECK (true);

-- +goose Down
-- The roles stay: other databases of the cluster may use them (DROP ROLE
-- would fail there, or strand their grants). Only this database's grants,
-- policies and objects go.
DROP POLICY IF EXISTS operator_write ON herald.dead_letters;
DROP POLICY IF EXISTS operator_write ON herald.routes;
DROP POLICY IF EXISTS staff_read ON herald.dead_letters;
DROP POLICY IF EXISTS staff_read ON herald.routes;
DROP POLICY IF EXISTS staff_read ON herald.records;
DROP POLICY IF EXISTS producer_read ON herald.dead_letters;
DROP POLICY IF EXISTS producer_cancel ON herald.routes;
DROP POLICY IF EXISTS producer_insert ON herald.routes;
DROP POLICY IF EXISTS producer_read ON herald.routes;
DROP POLICY IF EXISTS producer_own ON herald.records;
ALTER TABLE herald.dead_letters DISABLE ROW LEVEL SECURITY;
ALTER TABLE herald.routes DISABLE ROW LEVEL SECURITY;
ALTER TABLE herald.records DISABLE ROW LEVEL SECURITY;
ALTER DEFAULT PRIVILEGES IN SCHEMA herald REVOKE SELECT ON TABLES FROM herald_operator, herald_auditor;
REVOKE ALL ON ALL TABLES IN SCHEMA herald FROM herald_producer, herald_operator, herald_auditor;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA herald FROM herald_producer, herald_operator, herald_auditor;
REVOKE ALL ON SCHEMA herald FROM herald_producer, herald_operator, herald_auditor;
DROP FUNCTION IF EXISTS herald.dead_letter_replay_enqueue(jsonb);
DROP FUNCTION IF EXISTS herald.notification_owned_by(text, text);
DROP FUNCTION IF EXISTS herald.notification_timeline(text);
DROP VIEW IF EXISTS herald.malformed_view;
DROP VIEW IF EXISTS herald.backlog_view;
DROP VIEW IF EXISTS herald.dead_letter_view;

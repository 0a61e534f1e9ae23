-- +goose Up
-- Routes are partitioned by the week they finished in, so that
-- retention drops a finished week's routes whole instead of deleting them
-- row by row, and the engine's hot path still sees one table.
--
-- herald.routes is PARTITION BY RANGE (finished_at), a new column: NULL
-- while a route can still be delivered or replayed (pending, claimed,
-- failed, dead_letter), set when it becomes terminal (published, skipped,
-- canceled). Postgres keeps NULLs of a RANGE key in the DEFAULT partition,
-- routes_live, which is the old table itself (its indexes keep their
-- names). Finished routes live in routes_fYYYYMMDD, one per UTC week from
-- Monday, made ahead by maintenance (herald.routes_weeks_create).
--
-- Every statement of the claim and the completion says
-- `finished_at IS NULL`, which Postgres prunes at plan time, generic plans
-- included, to routes_live alone: no statement of the hot path sets up or
-- locks another partition, and a tuple id the claim returns names one row
-- (a ctid is unique only within a partition). routes_live holds the routes
-- in flight and the dead letters, so it stays small and hot.
--
-- A completion to a terminal status sets finished_at, and Postgres moves
-- the row: a delete from routes_live and an insert into the week's
-- partition. The old non-HOT completion already wrote a new heap tuple and
-- a routes_pkey entry; the move writes the same two, in the week's
-- partition. A receipt that sends a published route back to be retried
-- clears finished_at and moves it back.
--
-- A moved row fires DELETE and INSERT triggers, not UPDATE triggers, so
-- the status callbacks of a route that finishes are enqueued by an INSERT
-- trigger on the finished partitions (routes_callback_finished); a route
-- only ever arrives there by such a move, since routes are inserted
-- pending.
--
-- A statement that changes a route concurrently with its move fails with
-- a serialization failure (40001: "tuple to be updated was already moved
-- to another partition"), where it used to see the new version. Its
-- caller tries again and finds the route where it now is: the dispatcher's
-- claim and completion do, and notification_cancel does itself.
--
-- A partitioned table's UNIQUE must contain its partition key, so the
-- parent has no primary key: each partition has its own on
-- (notification_id, route_id). A route is inserted once, with its record
-- (whose primary key refuses the second), into routes_live, and moves
-- between partitions only by UPDATE, which deletes where it inserts.
--
-- Rows from before this migration stay in routes_live with finished_at
-- NULL, terminal or not, and are deleted row by row by retention as
-- before, with their records.

ALTER TABLE herald.routes ADD COLUMN finished_at timestamptz;

-- Views over routes are bound to the table itself, which becomes a
-- partition below: each is saved (definition, options, comment, grants),
-- dropped, and made again over the new parent.
-- +goose StatementBegin
DO $$
DECLARE
    v record;
BEGIN
    CREATE TEMP TABLE saved_views ON COMMIT DROP AS
    WITH RECURSIVE dep(oid) AS (
        SELECT DISTINCT r.ev_class
        FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
        WHERE d.classid = 'pg_rewrite'::regclass
            AND d.refobjid = 'herald.routes'::regclass
            AND r.ev_class <> 'herald.routes'::regclass
        UNION
        SELECT r.ev_class
        FROM dep JOIN pg_depend d ON d.refobjid = dep.oid AND d.classid = 'pg_rewrite'::regclass
        JOIN pg_rewrite r ON r.oid = d.objid
        WHERE r.ev_class <> dep.oid
    )
    SELECT c.oid AS old_oid, c.relname, pg_get_viewdef(c.oid) AS def, c.reloptions,
        obj_description(c.oid, 'pg_class') AS comment,
        (SELECT array_agg(format('GRANT %s ON herald.%I TO %I', a.privilege_type, c.relname, g.rolname))
         FROM aclexplode(c.relacl) a JOIN pg_roles g ON g.oid = a.grantee
         WHERE a.grantee <> c.relowner) AS grants
    FROM pg_class c
    WHERE c.oid IN (SELECT oid FROM dep);
    FOR v IN SELECT * FROM saved_views ORDER BY old_oid DESC LOOP
        EXECUTE format('DROP VIEW herald.%I', v.relname);
    END LOOP;
END
$$;
-- +goose StatementEnd

DROP TRIGGER routes_callback ON herald.routes;
DROP POLICY producer_read ON herald.routes;
DROP POLICY producer_insert ON herald.routes;
DROP POLICY operator_write ON herald.routes;
DROP POLICY staff_read ON herald.routes;
ALTER TABLE herald.routes DISABLE ROW LEVEL SECURITY;
ALTER TABLE herald.routes RENAME TO routes_live;
-- Partitions are reached through their parent only: producers have no
-- grant on them, operators write through the parent, staff read them (the
-- schema's default privileges).
REVOKE ALL ON herald.routes_live FROM herald_producer;
REVOKE UPDATE ON herald.routes_live FROM herald_operator;

-- The parent: the same columns in the same order, defaults and CHECK
-- constraints included.
CREATE TABLE herald.routes (LIKE herald.routes_live INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
    PARTITION BY RANGE (finished_at);
COMMENT ON TABLE herald.routes IS
    'One row per channel and recipient of a record: in routes_live while it can be delivered or replayed, in its finished week''s partition (routes_fYYYYMMDD) once terminal.';
COMMENT ON COLUMN herald.routes.finished_at IS
    'When the route became terminal (published, skipped, canceled): its partition''s key. NULL while it can still be delivered or replayed, and on routes finished before migration 00025.';
-- routes_live never holds a finished route: a week is made without a scan
-- of it (the CHECK proves it holds nothing of the week), and a route that
-- finishes in a week with no partition is refused (23514) rather than
-- left in routes_live. Weeks are made two ahead, so that takes a
-- fortnight without maintenance.
ALTER TABLE herald.routes_live ADD CONSTRAINT routes_live_unfinished CHECK (finished_at IS NULL);
ALTER TABLE herald.routes ATTACH PARTITION herald.routes_live DEFAULT;
COMMENT ON TABLE herald.routes_live IS
    'The routes partition of routes not finished (finished_at NULL): in flight, due, failed, dead-lettered; and every route from before migration 00025.';

GRANT SELECT, INSERT ON herald.routes TO herald_producer;
GRANT SELECT, UPDATE ON herald.routes TO herald_operator;
GRANT SELECT ON herald.routes TO herald_auditor;
ALTER TABLE herald.routes ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_read ON herald.routes FOR SELECT TO herald_producer
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = routes.notification_id));
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (herald.notification_is_mine(notification_id) AND channel <> 'callback'
        AND herald.routes_address_ok(channel, recipient_ref) AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '' AND providers IS NULL AND receipt_key IS NULL
        AND delivery_status IS NULL AND delivery_status_at IS NULL AND delivery_error = ''
        AND delivery_error_permanent IS NULL AND finished_at IS NULL);
CREATE POLICY operator_write ON herald.routes TO herald_operator USING (true) WITH CHECK (true);
CREATE POLICY staff_read ON herald.routes FOR SELECT TO herald_operator, herald_auditor USING (true);

-- Status callbacks: an update within a partition fires the UPDATE trigger
-- as before (a dead letter, a receipt on a published route); a route that
-- finishes moves, and fires the INSERT trigger of its week's partition.
CREATE TRIGGER routes_callback AFTER UPDATE OF status, delivery_status ON herald.routes
    FOR EACH ROW
    WHEN (NEW.notify_producer AND (
        (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('published', 'dead_letter', 'skipped', 'canceled'))
        OR (OLD.delivery_status IS DISTINCT FROM NEW.delivery_status
            AND NEW.delivery_status IN ('delivered', 'undelivered', 'expired'))))
    EXECUTE FUNCTION herald.routes_callback_enqueue();
CREATE TRIGGER routes_callback_finished AFTER INSERT ON herald.routes
    FOR EACH ROW
    WHEN (NEW.notify_producer AND NEW.finished_at IS NOT NULL AND (
        NEW.status IN ('published', 'skipped', 'canceled')
        OR NEW.delivery_status IN ('delivered', 'undelivered', 'expired')))
    EXECUTE FUNCTION herald.routes_callback_enqueue();

-- +goose StatementBegin
DO $$
DECLARE
    v record;
    g text;
BEGIN
    FOR v IN SELECT * FROM saved_views ORDER BY old_oid LOOP
        EXECUTE format('CREATE VIEW herald.%I %s AS %s', v.relname,
            CASE WHEN v.reloptions IS NULL THEN '' ELSE 'WITH (' || array_to_string(v.reloptions, ', ') || ')' END,
            v.def);
        IF v.comment IS NOT NULL THEN
            EXECUTE format('COMMENT ON VIEW herald.%I IS %L', v.relname, v.comment);
        END IF;
        FOREACH g IN ARRAY coalesce(v.grants, '{}') LOOP
            EXECUTE g;
        END LOOP;
    END LOOP;
END
$$;
-- +goose StatementEnd

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

-- The week partitions. A week is [Monday 00:00 UTC, the next Monday).
-- +goose StatementBegin
CREATE FUNCTION herald.routes_weeks_create(first_day date, last_day date, wait interval DEFAULT '1s')
RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $fn$
-- Makes the finished-route partitions of the weeks holding first_day
-- through last_day that do not exist yet, and returns how many it made.
-- Each is made on its own, with its indexes, and attached: that locks the
-- parent in SHARE UPDATE EXCLUSIVE mode (the engine goes on) and
-- routes_live in ACCESS EXCLUSIVE mode for an instant (no scan: its CHECK
-- says it holds no finished route). wait bounds each lock wait
-- (lock_timeout); a run that gives way fails with 55P03 and the next makes
-- the rest.
DECLARE
    w date;
    made integer := 0;
    name text;
BEGIN
    PERFORM set_config('lock_timeout', (extract(epoch FROM wait) * 1000)::bigint::text || 'ms', true);
    FOR w IN SELECT g::date FROM generate_series(date_trunc('week', first_day::timestamp),
            date_trunc('week', last_day::timestamp), interval '7 days') AS g LOOP
        name := 'routes_f' || to_char(w, 'YYYYMMDD');
        CONTINUE WHEN to_regclass('herald.' || name) IS NOT NULL;
        -- Finished routes change only by a receipt, which leaves every
        -- indexed column as it was: room for its HOT update on the page.
        EXECUTE format('CREATE TABLE herald.%I (LIKE herald.routes INCLUDING DEFAULTS INCLUDING CONSTRAINTS)'
            ' WITH (fillfactor = 90)', name);
        EXECUTE format('ALTER TABLE herald.%I ADD CONSTRAINT %I PRIMARY KEY (notification_id, route_id)',
            name, name || '_pkey');
        EXECUTE format('CREATE INDEX %I ON herald.%I (receipt_key) WHERE receipt_key IS NOT NULL',
            name || '_receipt_key_idx', name);
        EXECUTE format('ALTER TABLE herald.routes ATTACH PARTITION herald.%I FOR VALUES FROM (%L) TO (%L)',
            name, (w::timestamp AT TIME ZONE 'UTC'), ((w + 7)::timestamp AT TIME ZONE 'UTC'));
        EXECUTE format('COMMENT ON TABLE herald.%I IS %L', name,
            format('The routes that finished in the week from %s (UTC): dropped whole by retention.', w));
        made := made + 1;
    END LOOP;
    RETURN made;
END;
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION herald.routes_weeks_drop(before timestamptz, wait interval DEFAULT '100ms')
RETURNS TABLE (week date, routes bigint)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $fn$
-- Drops the oldest finished-route partition if its week ended at or
-- before `before`, and returns its Monday and about how many routes it
-- held (the planner's estimate, reltuples: counting them would read the
-- week); no row when there is none to drop. One week per call, so that
-- its caller's transaction holds the parent's lock for one drop: a drop
-- locks the parent in ACCESS EXCLUSIVE mode for an instant. wait bounds
-- the wait for it (the claim and the completion queue behind a waiting
-- drop), and a drop that gives way fails with 55P03 and is tried by the
-- next run.
DECLARE
    p record;
BEGIN
    PERFORM set_config('lock_timeout', (extract(epoch FROM wait) * 1000)::bigint::text || 'ms', true);
    SELECT c.relname, to_date(substr(c.relname, 9), 'YYYYMMDD') AS w, greatest(c.reltuples, 0)::bigint AS n
    INTO p
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'herald.routes'::regclass AND c.relname ~ '^routes_f[0-9]{8}$'
    ORDER BY 2
    LIMIT 1;
    IF NOT FOUND OR ((p.w + 7)::timestamp AT TIME ZONE 'UTC') > before THEN
        RETURN;
    END IF;
    EXECUTE format('DROP TABLE herald.%I', p.relname);
    week := p.w;
    routes := p.n;
    RETURN NEXT;
END;
$fn$;
-- +goose StatementEnd

SELECT herald.routes_weeks_create(current_date, current_date + 14);

-- Partitions are made and dropped by maintenance, which runs as the owner.
REVOKE ALL ON FUNCTION herald.routes_weeks_create(date, date, interval),
    herald.routes_weeks_drop(timestamptz, interval) FROM PUBLIC;

-- A cancel racing a route's move (its completion) is tried again.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_cancel(nid text, actor text, reason text, at timestamptz DEFAULT NULL)
RETURNS TABLE (route_id text, channel text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := coalesce(notification_cancel.at, now());
    owner text;
    moved jsonb;
    n integer;
    tries integer := 0;
BEGIN
    SELECT producer INTO owner FROM herald.records WHERE notification_id = nid;
    -- coalesce: with no acting producer the comparison is NULL, and so
    -- would the whole condition be, which IF takes for false.
    IF NOT FOUND OR NOT (coalesce(owner = herald.acting_producer(), false)
            OR pg_has_role(session_user, 'herald_operator', 'MEMBER')
            OR pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER')) THEN
        RAISE EXCEPTION 'notification % not found', nid USING ERRCODE = 'no_data_found';
    END IF;
    IF coalesce(notification_cancel.actor, '') = '' THEN
        RAISE EXCEPTION 'a cancel must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    LOOP
        BEGIN
            WITH c AS (
                UPDATE herald.routes r
                SET status = 'canceled', next_attempt_at = NULL, canceled_at = t, updated_at = t,
                    finished_at = t
                WHERE r.notification_id = nid AND r.status IN ('pending', 'claimed', 'failed')
                    AND r.finished_at IS NULL
                RETURNING r.route_id, r.channel
            )
            SELECT coalesce(jsonb_agg(jsonb_build_object('route_id', c.route_id, 'channel', c.channel) ORDER BY c.route_id), '[]'),
                count(*)
            INTO moved, n
            FROM c;
            EXIT;
        EXCEPTION WHEN serialization_failure THEN
            -- A route of the notification finished (moved) while this
            -- statement waited for it: again, with a new snapshot, in read
            -- committed. Under a snapshot isolation the caller retries.
            tries := tries + 1;
            IF tries >= 5 OR current_setting('transaction_isolation') <> 'read committed' THEN
                RAISE;
            END IF;
        END;
    END LOOP;
    INSERT INTO herald.audit_log (at, actor, action, reason, filter, affected, details)
    VALUES (t, notification_cancel.actor, 'cancel', coalesce(notification_cancel.reason, ''),
        jsonb_build_object('notification_id', nid), n,
        jsonb_build_object('route_ids', (SELECT coalesce(jsonb_agg(e -> 'route_id'), '[]') FROM jsonb_array_elements(moved) e)));
    RETURN QUERY SELECT e ->> 'route_id', e ->> 'channel' FROM jsonb_array_elements(moved) e;
END;
$$;
-- +goose StatementEnd

-- A campaign's cancel moves what it cancels, and tries again a statement
-- that raced a route's move.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.campaign_cancel_batch(producer text, campaign text, actor text, reason text,
    batch_size integer DEFAULT 5000, at timestamptz DEFAULT NULL)
RETURNS TABLE (canceled bigint, in_flight bigint, done boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := coalesce(campaign_cancel_batch.at, now());
    p text := campaign_cancel_batch.producer;
    c text := campaign_cancel_batch.campaign;
    camp herald.campaigns;
    ids text[];
    n bigint;
    left_ids text[];
    first_left text;
    sweep_over boolean;
    tries integer := 0;
BEGIN
    IF NOT herald.campaign_may_act(p) THEN
        RAISE EXCEPTION 'campaign % of % not found', c, p USING ERRCODE = 'no_data_found';
    END IF;
    IF coalesce(campaign_cancel_batch.actor, '') = '' THEN
        RAISE EXCEPTION 'a cancel must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(campaign_cancel_batch.batch_size, 0) < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The campaign's row, locked for the call: cancels of one campaign run
    -- one batch at a time, and the first waits for the accepts that joined
    -- the campaign before it (campaign_join's FOR SHARE) to commit.
    UPDATE herald.campaigns AS k
    SET cancel_requested_at = coalesce(k.cancel_requested_at, t),
        canceled_by = coalesce(k.canceled_by, campaign_cancel_batch.actor),
        cancel_reason = coalesce(k.cancel_reason, coalesce(campaign_cancel_batch.reason, ''))
    WHERE k.producer = p AND k.campaign = c
    RETURNING k.* INTO camp;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'campaign % of % not found', c, p USING ERRCODE = 'no_data_found';
    END IF;
    IF camp.canceled_at IS NOT NULL THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint, true;
        RETURN;
    END IF;

    -- The next batch of the campaign's records, after the cursor
    -- (records_campaign_idx, a range scan from the cursor: each record is
    -- read once per sweep, however many batches there are).
    SELECT array_agg(x.notification_id ORDER BY x.notification_id) INTO ids
    FROM (
        SELECT r.notification_id
        FROM herald.records r
        WHERE r.producer = p AND r.campaign = c AND r.notification_id > camp.cancel_cursor
        ORDER BY r.notification_id
        LIMIT campaign_cancel_batch.batch_size
    ) AS x;
    ids := coalesce(ids, '{}');
    sweep_over := cardinality(ids) < campaign_cancel_batch.batch_size;

    -- Cancel what has not gone out. The ANY is an index condition on the
    -- routes' primary key; SKIP LOCKED passes over the routes a dispatcher
    -- holds right now.
    -- A canceled route finishes and moves to its week's partition (00025);
    -- a route that finished (moved) while this statement locked it fails
    -- the statement with 40001, which is tried again here with a new
    -- snapshot (read committed), where that route is no longer live.
    LOOP
        BEGIN
            WITH target AS (
                SELECT rt.notification_id, rt.route_id
                FROM herald.routes rt
                WHERE rt.notification_id = ANY (ids)
                    AND rt.finished_at IS NULL
                    AND (rt.status IN ('pending', 'failed') OR (rt.status = 'claimed' AND coalesce(rt.lease_until, rt.next_attempt_at) <= t))
                FOR UPDATE SKIP LOCKED
            ),
            moved AS (
                UPDATE herald.routes rt
                SET status = 'canceled', next_attempt_at = NULL, canceled_at = t, updated_at = t, lane = '',
                    finished_at = t
                FROM target
                WHERE rt.notification_id = ANY (ids)
                    AND rt.finished_at IS NULL
                    AND rt.notification_id = target.notification_id AND rt.route_id = target.route_id
                RETURNING 1
            )
            SELECT count(*) INTO n FROM moved;
            EXIT;
        EXCEPTION WHEN serialization_failure THEN
            tries := tries + 1;
            IF tries >= 5 OR current_setting('transaction_isolation') <> 'read committed' THEN
                RAISE;
            END IF;
        END;
    END LOOP;

    -- What is left in flight in this batch: routes not terminal after the
    -- update (claimed, or locked by a dispatcher and so skipped above).
    -- This statement's snapshot is newer than the update's, so it sees the
    -- update's own rows as canceled.
    SELECT array_agg(DISTINCT rt.notification_id) INTO left_ids
    FROM herald.routes rt
    WHERE rt.notification_id = ANY (ids) AND rt.status IN ('pending', 'claimed', 'failed')
        AND rt.finished_at IS NULL;
    left_ids := coalesce(left_ids, '{}');
    SELECT min(x) INTO first_left FROM unnest(left_ids) AS x;

    IF n > 0 OR camp.cancel_cursor = '' AND camp.cancel_sweeps = 0 THEN
        INSERT INTO herald.audit_log (at, actor, action, reason, filter, affected, details)
        VALUES (t, campaign_cancel_batch.actor, 'campaign_cancel', coalesce(campaign_cancel_batch.reason, ''),
            jsonb_build_object('producer', p, 'campaign', c), n,
            jsonb_build_object('sweep', camp.cancel_sweeps + 1, 'after', camp.cancel_cursor,
                'through', coalesce(ids[cardinality(ids)], camp.cancel_cursor), 'in_flight', cardinality(left_ids)));
    END IF;

    IF NOT sweep_over THEN
        UPDATE herald.campaigns AS k
        SET cancel_cursor = ids[cardinality(ids)],
            cancel_retry_from = CASE WHEN first_left IS NULL THEN k.cancel_retry_from
                ELSE least(k.cancel_retry_from, first_left) END,
            canceled_routes = k.canceled_routes + n
        WHERE k.producer = p AND k.campaign = c;
        RETURN QUERY SELECT n, cardinality(left_ids)::bigint, false;
        RETURN;
    END IF;

    -- The sweep is over. Start the next at the first record that had a
    -- route in flight (the cursor is exclusive: the greatest id before it),
    -- or finish.
    first_left := least(camp.cancel_retry_from, first_left);
    IF first_left IS NULL THEN
        UPDATE herald.campaigns AS k
        SET cancel_cursor = coalesce(ids[cardinality(ids)], k.cancel_cursor), cancel_retry_from = NULL,
            cancel_sweeps = k.cancel_sweeps + 1, canceled_routes = k.canceled_routes + n, canceled_at = t
        WHERE k.producer = p AND k.campaign = c;
        RETURN QUERY SELECT n, 0::bigint, true;
        RETURN;
    END IF;
    UPDATE herald.campaigns AS k
    SET cancel_cursor = coalesce((
            SELECT max(r.notification_id) FROM herald.records r
            WHERE r.producer = p AND r.campaign = c AND r.notification_id < first_left), ''),
        cancel_retry_from = NULL,
        cancel_sweeps = k.cancel_sweeps + 1,
        canceled_routes = k.canceled_routes + n
    WHERE k.producer = p AND k.campaign = c;
    RETURN QUERY SELECT n, cardinality(left_ids)::bigint, false;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.campaign_cancel_batch(producer text, campaign text, actor text, reason text,
    batch_size integer DEFAULT 5000, at timestamptz DEFAULT NULL)
RETURNS TABLE (canceled bigint, in_flight bigint, done boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := coalesce(campaign_cancel_batch.at, now());
    p text := campaign_cancel_batch.producer;
    c text := campaign_cancel_batch.campaign;
    camp herald.campaigns;
    ids text[];
    n bigint;
    left_ids text[];
    first_left text;
    sweep_over boolean;
BEGIN
    IF NOT herald.campaign_may_act(p) THEN
        RAISE EXCEPTION 'campaign % of % not found', c, p USING ERRCODE = 'no_data_found';
    END IF;
    IF coalesce(campaign_cancel_batch.actor, '') = '' THEN
        RAISE EXCEPTION 'a cancel must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(campaign_cancel_batch.batch_size, 0) < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The campaign's row, locked for the call: cancels of one campaign run
    -- one batch at a time, and the first waits for the accepts that joined
    -- the campaign before it (campaign_join's FOR SHARE) to commit.
    UPDATE herald.campaigns AS k
    SET cancel_requested_at = coalesce(k.cancel_requested_at, t),
        canceled_by = coalesce(k.canceled_by, campaign_cancel_batch.actor),
        cancel_reason = coalesce(k.cancel_reason, coalesce(campaign_cancel_batch.reason, ''))
    WHERE k.producer = p AND k.campaign = c
    RETURNING k.* INTO camp;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'campaign % of % not found', c, p USING ERRCODE = 'no_data_found';
    END IF;
    IF camp.canceled_at IS NOT NULL THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint, true;
        RETURN;
    END IF;

    -- The next batch of the campaign's records, after the cursor
    -- (records_campaign_idx, a range scan from the cursor: each record is
    -- read once per sweep, however many batches there are).
    SELECT array_agg(x.notification_id ORDER BY x.notification_id) INTO ids
    FROM (
        SELECT r.notification_id
        FROM herald.records r
        WHERE r.producer = p AND r.campaign = c AND r.notification_id > camp.cancel_cursor
        ORDER BY r.notification_id
        LIMIT campaign_cancel_batch.batch_size
    ) AS x;
    ids := coalesce(ids, '{}');
    sweep_over := cardinality(ids) < campaign_cancel_batch.batch_size;

    -- Cancel what has not gone out. The ANY is an index condition on the
    -- routes' primary key; SKIP LOCKED passes over the routes a dispatcher
    -- holds right now.
    WITH target AS (
        SELECT rt.notification_id, rt.route_id
        FROM herald.routes rt
        WHERE rt.notification_id = ANY (ids)
            AND (rt.status IN ('pending', 'failed') OR (rt.status = 'claimed' AND coalesce(rt.lease_until, rt.next_attempt_at) <= t))
        FOR UPDATE SKIP LOCKED
    ),
    moved AS (
        UPDATE herald.routes rt
        SET status = 'canceled', next_attempt_at = NULL, canceled_at = t, updated_at = t, lane = ''
        FROM target
        WHERE rt.notification_id = ANY (ids)
            AND rt.notification_id = target.notification_id AND rt.route_id = target.route_id
        RETURNING 1
    )
    SELECT count(*) INTO n FROM moved;

    -- What is left in flight in this batch: routes not terminal after the
    -- update (claimed, or locked by a dispatcher and so skipped above).
    -- This statement's snapshot is newer than the update's, so it sees the
    -- update's own rows as canceled.
    SELECT array_agg(DISTINCT rt.notification_id) INTO left_ids
    FROM herald.routes rt
    WHERE rt.notification_id = ANY (ids) AND rt.status IN ('pending', 'claimed', 'failed');
    left_ids := coalesce(left_ids, '{}');
    SELECT min(x) INTO first_left FROM unnest(left_ids) AS x;

    IF n > 0 OR camp.cancel_cursor = '' AND camp.cancel_sweeps = 0 THEN
        INSERT INTO herald.audit_log (at, actor, action, reason, filter, affected, details)
        VALUES (t, campaign_cancel_batch.actor, 'campaign_cancel', coalesce(campaign_cancel_batch.reason, ''),
            jsonb_build_object('producer', p, 'campaign', c), n,
            jsonb_build_object('sweep', camp.cancel_sweeps + 1, 'after', camp.cancel_cursor,
                'through', coalesce(ids[cardinality(ids)], camp.cancel_cursor), 'in_flight', cardinality(left_ids)));
    END IF;

    IF NOT sweep_over THEN
        UPDATE herald.campaigns AS k
        SET cancel_cursor = ids[cardinality(ids)],
            cancel_retry_from = CASE WHEN first_left IS NULL THEN k.cancel_retry_from
                ELSE least(k.cancel_retry_from, first_left) END,
            canceled_routes = k.canceled_routes + n
        WHERE k.producer = p AND k.campaign = c;
        RETURN QUERY SELECT n, cardinality(left_ids)::bigint, false;
        RETURN;
    END IF;

    -- The sweep is over. Start the next at the first record that had a
    -- route in flight (the cursor is exclusive: the greatest id before it),
    -- or finish.
    first_left := least(camp.cancel_retry_from, first_left);
    IF first_left IS NULL THEN
        UPDATE herald.campaigns AS k
        SET cancel_cursor = coalesce(ids[cardinality(ids)], k.cancel_cursor), cancel_retry_from = NULL,
            cancel_sweeps = k.cancel_sweeps + 1, canceled_routes = k.canceled_routes + n, canceled_at = t
        WHERE k.producer = p AND k.campaign = c;
        RETURN QUERY SELECT n, 0::bigint, true;
        RETURN;
    END IF;
    UPDATE herald.campaigns AS k
    SET cancel_cursor = coalesce((
            SELECT max(r.notification_id) FROM herald.records r
            WHERE r.producer = p AND r.campaign = c AND r.notification_id < first_left), ''),
        cancel_retry_from = NULL,
        cancel_sweeps = k.cancel_sweeps + 1,
        canceled_routes = k.canceled_routes + n
    WHERE k.producer = p AND k.campaign = c;
    RETURN QUERY SELECT n, cardinality(left_ids)::bigint, false;
END;
$$;
-- +goose StatementEnd

-- Back to one table: routes_live, with every finished week's rows copied
-- into it, under its old name.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald.notification_cancel(nid text, actor text, reason text, at timestamptz DEFAULT NULL)
RETURNS TABLE (route_id text, channel text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := coalesce(notification_cancel.at, now());
    owner text;
    moved jsonb;
    n integer;
BEGIN
    SELECT producer INTO owner FROM herald.records WHERE notification_id = nid;
    -- coalesce: with no acting producer the comparison is NULL, and so
    -- would the whole condition be, which IF takes for false.
    IF NOT FOUND OR NOT (coalesce(owner = herald.acting_producer(), false)
            OR pg_has_role(session_user, 'herald_operator', 'MEMBER')
            OR pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER')) THEN
        RAISE EXCEPTION 'notification % not found', nid USING ERRCODE = 'no_data_found';
    END IF;
    IF coalesce(notification_cancel.actor, '') = '' THEN
        RAISE EXCEPTION 'a cancel must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH c AS (
        UPDATE herald.routes r
        SET status = 'canceled', next_attempt_at = NULL, canceled_at = t, updated_at = t
        WHERE r.notification_id = nid AND r.status IN ('pending', 'claimed', 'failed')
        RETURNING r.route_id, r.channel
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object('route_id', c.route_id, 'channel', c.channel) ORDER BY c.route_id), '[]'),
        count(*)
    INTO moved, n
    FROM c;
    INSERT INTO herald.audit_log (at, actor, action, reason, filter, affected, details)
    VALUES (t, notification_cancel.actor, 'cancel', coalesce(notification_cancel.reason, ''),
        jsonb_build_object('notification_id', nid), n,
        jsonb_build_object('route_ids', (SELECT coalesce(jsonb_agg(e -> 'route_id'), '[]') FROM jsonb_array_elements(moved) e)));
    RETURN QUERY SELECT e ->> 'route_id', e ->> 'channel' FROM jsonb_array_elements(moved) e;
END;
$$;
-- +goose StatementEnd
DROP FUNCTION herald.routes_weeks_create(date, date, interval);
DROP FUNCTION herald.routes_weeks_drop(timestamptz, interval);

-- +goose StatementBegin
DO $$
DECLARE
    v record;
    p record;
BEGIN
    CREATE TEMP TABLE saved_views ON COMMIT DROP AS
    WITH RECURSIVE dep(oid) AS (
        SELECT DISTINCT r.ev_class
        FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
        WHERE d.classid = 'pg_rewrite'::regclass
            AND d.refobjid = 'herald.routes'::regclass
            AND r.ev_class <> 'herald.routes'::regclass
        UNION
        SELECT r.ev_class
        FROM dep JOIN pg_depend d ON d.refobjid = dep.oid AND d.classid = 'pg_rewrite'::regclass
        JOIN pg_rewrite r ON r.oid = d.objid
        WHERE r.ev_class <> dep.oid
    )
    -- backlog_view's condition on finished_at (above) goes with it.
    SELECT c.oid AS old_oid, c.relname,
        regexp_replace(pg_get_viewdef(c.oid), '\s+AND \(routes\.finished_at IS NULL\)', '', 'g') AS def, c.reloptions,
        obj_description(c.oid, 'pg_class') AS comment,
        (SELECT array_agg(format('GRANT %s ON herald.%I TO %I', a.privilege_type, c.relname, g.rolname))
         FROM aclexplode(c.relacl) a JOIN pg_roles g ON g.oid = a.grantee
         WHERE a.grantee <> c.relowner) AS grants
    FROM pg_class c
    WHERE c.oid IN (SELECT oid FROM dep);
    FOR v IN SELECT * FROM saved_views ORDER BY old_oid DESC LOOP
        EXECUTE format('DROP VIEW herald.%I', v.relname);
    END LOOP;
    ALTER TABLE herald.routes DETACH PARTITION herald.routes_live;
    ALTER TABLE herald.routes_live DROP CONSTRAINT routes_live_unfinished;
    FOR p IN
        SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'herald.routes'::regclass
    LOOP
        EXECUTE format('INSERT INTO herald.routes_live SELECT * FROM herald.%I', p.relname);
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP TABLE herald.routes;
ALTER TABLE herald.routes_live RENAME TO routes;
ALTER TABLE herald.routes DROP COLUMN finished_at;
COMMENT ON TABLE herald.routes IS NULL;
GRANT SELECT, INSERT ON herald.routes TO herald_producer;
GRANT SELECT, UPDATE ON herald.routes TO herald_operator;
GRANT SELECT ON herald.routes TO herald_auditor;
ALTER TABLE herald.routes ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_read ON herald.routes FOR SELECT TO herald_producer
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = routes.notification_id));
CREATE POLICY producer_insert ON herald.routes FOR INSERT TO herald_producer
    WITH CHECK (herald.notification_is_mine(notification_id) AND channel <> 'callback'
        AND herald.routes_address_ok(channel, recipient_ref) AND status = 'pending' AND attempt_count = 0
        AND published_at IS NULL AND dead_lettered_at IS NULL AND skipped_at IS NULL AND canceled_at IS NULL
        AND last_error_at IS NULL AND last_error_classification = '' AND last_error_message = ''
        AND provider_message_id = '' AND lane = '' AND providers IS NULL AND receipt_key IS NULL
        AND delivery_status IS NULL AND delivery_status_at IS NULL AND delivery_error = ''
        AND delivery_error_permanent IS NULL);
CREATE POLICY operator_write ON herald.routes TO herald_operator USING (true) WITH CHECK (true);
CREATE POLICY staff_read ON herald.routes FOR SELECT TO herald_operator, herald_auditor USING (true);
CREATE TRIGGER routes_callback AFTER UPDATE OF status, delivery_status ON herald.routes
    FOR EACH ROW
    WHEN (NEW.notify_producer AND (
        (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('published', 'dead_letter', 'skipped', 'canceled'))
        OR (OLD.delivery_status IS DISTINCT FROM NEW.delivery_status
            AND NEW.delivery_status IN ('delivered', 'undelivered', 'expired'))))
    EXECUTE FUNCTION herald.routes_callback_enqueue();
-- +goose StatementBegin
DO $$
DECLARE
    v record;
    g text;
BEGIN
    FOR v IN SELECT * FROM saved_views ORDER BY old_oid LOOP
        EXECUTE format('CREATE VIEW herald.%I %s AS %s', v.relname,
            CASE WHEN v.reloptions IS NULL THEN '' ELSE 'WITH (' || array_to_string(v.reloptions, ', ') || ')' END,
            v.def);
        IF v.comment IS NOT NULL THEN
            EXECUTE format('COMMENT ON VIEW herald.%I IS %L', v.relname, v.comment);
        END IF;
        FOREACH g IN ARRAY coalesce(v.grants, '{}') LOOP
            EXECUTE g;
        END LOOP;
    END LOOP;
END
$$;
-- +goose StatementEnd

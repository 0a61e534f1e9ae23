-- +goose Up
-- Campaigns: a producer's intents grouped under one id,
-- scheduled as one (one send_at for every intent of the campaign, seed
-- 002's "scheduled" state), shown with their progress, and canceled as one,
-- in batches, audited.
--
-- Where a campaign lives. records.campaign names it (NULL for an intent
-- without one); herald.campaigns holds one row per (producer, campaign):
-- its schedule and the state of its cancel. Routes are not touched: the
-- dispatcher's claim and completion do not know campaigns exist, so an
-- intent without a campaign, and a campaign's routes too, pay nothing new
-- per route. A campaign's routes are found through its records
-- (records_campaign_idx, partial: records without a campaign are not in
-- it, so their inserts pay no index entry) and then each record's routes
-- by the routes' primary key.

ALTER TABLE herald.records ADD COLUMN campaign text;

-- A campaign's records in notification id order: what a cancel walks in
-- batches (keyset, from its cursor) and what the progress view joins.
-- Records are written once and never updated, so the index does not bloat
-- as routes change state. Partial: records without a campaign pay nothing.
CREATE INDEX records_campaign_idx ON herald.records (producer, campaign, notification_id)
    WHERE campaign IS NOT NULL;

-- The same rule as the Go door's (intake.Validate), held by the database
-- for a record written with plain SQL.
ALTER TABLE herald.records
    ADD CONSTRAINT records_campaign_check CHECK (campaign ~ '^[A-Za-z0-9._:-]{1,128}$');

-- campaigns: one row per (producer, campaign), created by the first accept
-- of one of its intents (herald.campaign_join). send_at is the campaign's
-- schedule, NULL for "now": every intent of the campaign must carry the
-- same one. A cancel sets cancel_requested_at (after which no new intent
-- joins the campaign), moves cancel_cursor along the campaign's records
-- batch by batch, and sets canceled_at when no route of it is left to
-- cancel.
CREATE TABLE herald.campaigns (
    producer text NOT NULL,
    campaign text NOT NULL,
    send_at timestamptz,
    created_at timestamptz NOT NULL,
    cancel_requested_at timestamptz,
    canceled_by text,
    cancel_reason text,
    -- The last notification id the cancel's current sweep has passed
    -- ('' before the first batch): a cancel interrupted anywhere goes on
    -- from here.
    cancel_cursor text NOT NULL DEFAULT '',
    -- The smallest notification id of this sweep with a route left in
    -- flight (claimed by a dispatcher, or locked by one right now); the
    -- next sweep starts there. NULL: none so far.
    cancel_retry_from text,
    cancel_sweeps integer NOT NULL DEFAULT 0,
    canceled_routes bigint NOT NULL DEFAULT 0,
    canceled_at timestamptz,
    PRIMARY KEY (producer, campaign),
    CONSTRAINT campaigns_campaign_check CHECK (campaign ~ '^[A-Za-z0-9._:-]{1,128}$')
);

-- Producers read their own campaigns; operators and auditors read all
-- (00003's default privileges grant them SELECT). Nobody but the engine
-- writes: producers join and cancel through the functions below.
ALTER TABLE herald.campaigns ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON herald.campaigns TO herald_producer;
CREATE POLICY producer_read ON herald.campaigns FOR SELECT TO herald_producer
    USING (producer = (SELECT herald.acting_producer()));
CREATE POLICY staff_read ON herald.campaigns FOR SELECT TO herald_operator, herald_auditor USING (true);

-- campaign_may_act says whether the caller may act for producer's
-- campaigns: it is that producer (its login, or an API key of it), an
-- operator, or the engine (the schema's owner).
-- +goose StatementBegin
CREATE FUNCTION herald.campaign_may_act(producer text)
RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(campaign_may_act.producer = herald.acting_producer(), false)
        OR pg_has_role(session_user, 'herald_operator', 'MEMBER')
        OR pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER');
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.campaign_may_act(text) FROM PUBLIC;

-- campaign_join is what accept calls, in its own transaction, before it
-- inserts the records of intents that name a campaign: it creates each
-- (producer, campaign) that does not exist yet with the given send_at (the
-- first element given for a pair wins) and returns every pair's row,
-- locked FOR SHARE until the accept commits. The lock is what makes a
-- cancel safe against a racing accept: the cancel's first step updates the
-- campaign's row, so it waits for every accept that joined before it, and
-- every accept after it sees cancel_requested_at and refuses its intents.
-- Many accepts of one campaign share the lock and do not wait on each
-- other. A producer may join only its own campaigns (the engine, accepting
-- the SQL door's entries, any); another producer's name fails with
-- insufficient_privilege, as the records' insert policy would.
-- +goose StatementBegin
CREATE FUNCTION herald.campaign_join(producers text[], campaigns text[], send_ats timestamptz[], at timestamptz DEFAULT NULL)
RETURNS TABLE (producer text, campaign text, send_at timestamptz, canceled boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := coalesce(campaign_join.at, now());
BEGIN
    -- The producer itself (its login or API key), or the engine: an
    -- operator may cancel campaigns but submits nothing.
    IF NOT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER')
            AND EXISTS (SELECT 1 FROM unnest(campaign_join.producers) AS p(name)
                WHERE p.name IS DISTINCT FROM herald.acting_producer()) THEN
        RAISE EXCEPTION 'may not submit for another producer' USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO herald.campaigns (producer, campaign, send_at, created_at)
    SELECT DISTINCT ON (w.producer, w.campaign) w.producer, w.campaign, w.send_at, t
    FROM unnest(campaign_join.producers, campaign_join.campaigns, campaign_join.send_ats)
        WITH ORDINALITY AS w(producer, campaign, send_at, n)
    ORDER BY w.producer, w.campaign, w.n
    ON CONFLICT (producer, campaign) DO NOTHING;
    -- In (producer, campaign) order, so that two accepts sharing campaigns
    -- take their locks in the same order.
    RETURN QUERY
    SELECT c.producer, c.campaign, c.send_at, c.cancel_requested_at IS NOT NULL
    FROM herald.campaigns c
    WHERE (c.producer, c.campaign) IN (
        SELECT w.producer, w.campaign FROM unnest(campaign_join.producers, campaign_join.campaigns) AS w(producer, campaign))
    ORDER BY c.producer, c.campaign
    FOR SHARE;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.campaign_join(text[], text[], timestamptz[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.campaign_join(text[], text[], timestamptz[], timestamptz) TO herald_producer;

-- campaign_cancel_batch does one batch of a campaign's cancel, in the
-- caller's transaction (call it outside one: each call is then a short
-- transaction of its own). The first call records the request (who, why,
-- when); every call cancels the routes of up to batch_size of the
-- campaign's records after the cursor that have not gone out (pending, or
-- failed and waiting for a retry), writes an audit row (action
-- campaign_cancel) for what it canceled, and moves the cursor on.
--
-- Safe against dispatchers. The routes are locked FOR UPDATE SKIP LOCKED:
-- a route a dispatcher is claiming right now is skipped, never waited for,
-- and a claimed route (in flight: handed to a channel, or about to be) is
-- left to finish. Its completion then makes it published (it went out) or
-- failed, and a later sweep cancels it. So a route is either delivered or
-- canceled, never both: a cancel never fences out a delivery in flight, as
-- the single notification's cancel does. A claimed route whose lease has
-- run out (lease_until, 00019; next_attempt_at for a route claimed before
-- 00019) is canceled, as a dispatcher would claim it again: its worker is
-- taken for dead, and a late completion of it is fenced out (at-least-once
-- already counts that delivery as one that may repeat).
--
-- Sweeps. When the cursor reaches the campaign's last record, the sweep is
-- over; if it left routes in flight, the next sweep starts at the first
-- record that had one (cancel_retry_from), else the cancel is done
-- (canceled_at set). Other campaigns are not touched, and no lock is held
-- past the call. Returns the routes this call canceled, the routes it left
-- in flight, and whether the cancel is done. An unknown campaign, or one
-- the caller may not cancel, fails with no_data_found; an empty actor with
-- invalid_parameter_value. Calling it again after it is done changes
-- nothing and returns done.
-- +goose StatementBegin
CREATE FUNCTION herald.campaign_cancel_batch(producer text, campaign text, actor text, reason text,
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
REVOKE ALL ON FUNCTION herald.campaign_cancel_batch(text, text, text, text, integer, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.campaign_cancel_batch(text, text, text, text, integer, timestamptz)
    TO herald_producer, herald_operator;

-- campaign_cancel is the whole cancel for psql: CALL
-- herald.campaign_cancel('producer', 'campaign', 'actor', 'reason'); runs
-- campaign_cancel_batch until it is done, committing after each batch, so
-- no transaction is long (call it outside a transaction block: inside one
-- it cannot commit and fails). It waits a tenth of a second whenever only
-- routes in flight are left. Interrupted, it is resumed by calling it
-- again. It runs with the caller's privileges: the batch function decides
-- what the caller may cancel. (No SET search_path clause: a procedure with
-- one may not commit; every name in it is qualified instead.)
-- +goose StatementBegin
CREATE PROCEDURE herald.campaign_cancel(producer text, campaign text, actor text, reason text,
    batch_size integer DEFAULT 5000)
LANGUAGE plpgsql
AS $$
DECLARE
    b record;
BEGIN
    LOOP
        SELECT * INTO b FROM herald.campaign_cancel_batch(producer, campaign, actor, reason, batch_size);
        COMMIT;
        EXIT WHEN b.done;
        IF b.canceled = 0 AND b.in_flight > 0 THEN
            PERFORM pg_catalog.pg_sleep(0.1);
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON PROCEDURE herald.campaign_cancel(text, text, text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE herald.campaign_cancel(text, text, text, text, integer) TO herald_producer, herald_operator;

-- campaign_progress_view: each campaign with its routes counted by where
-- they stand, and its state as seed 002 names them: scheduled (send_at
-- ahead, nothing out yet), sending, completed (nothing left to do),
-- canceling (a cancel is under way) and canceled. pending counts routes
-- not out yet (pending, claimed, failed); published those that went out,
-- delivered those of them a receipt says reached the recipient; dead the
-- dead letters. It runs with the caller's privileges (security_invoker):
-- a producer sees its own campaigns, operators and auditors every one.
-- Filter on producer and campaign: the filter reaches records_campaign_idx.
-- It counts every route of the campaigns it shows (for a campaign of a
-- million routes, a second or so): a question for a person, not a loop.
CREATE VIEW herald.campaign_progress_view WITH (security_invoker = true) AS
SELECT
    c.producer,
    c.campaign,
    c.send_at,
    c.created_at,
    c.cancel_requested_at,
    c.canceled_by,
    c.cancel_reason,
    c.canceled_at,
    count(DISTINCT rec.notification_id)::bigint AS notifications,
    count(r.route_id)::bigint AS routes,
    count(*) FILTER (WHERE r.status IN ('pending', 'claimed', 'failed'))::bigint AS pending,
    count(*) FILTER (WHERE r.status = 'published')::bigint AS published,
    count(*) FILTER (WHERE r.delivery_status = 'delivered')::bigint AS delivered,
    count(*) FILTER (WHERE r.status = 'dead_letter')::bigint AS dead,
    count(*) FILTER (WHERE r.status = 'canceled')::bigint AS canceled,
    count(*) FILTER (WHERE r.status = 'skipped')::bigint AS skipped,
    CASE
        WHEN c.canceled_at IS NOT NULL THEN 'canceled'
        WHEN c.cancel_requested_at IS NOT NULL THEN 'canceling'
        -- Nothing left to do (with no route at all: retention removed
        -- them, the campaign having finished long ago).
        WHEN count(*) FILTER (WHERE r.status IN ('pending', 'claimed', 'failed')) = 0 THEN 'completed'
        WHEN c.send_at > now() AND count(*) FILTER (WHERE r.status IN ('published', 'dead_letter', 'skipped') OR r.attempt_count > 0) = 0
            THEN 'scheduled'
        ELSE 'sending'
    END AS state
FROM herald.campaigns c
LEFT JOIN herald.records rec ON rec.producer = c.producer AND rec.campaign = c.campaign
LEFT JOIN herald.routes r ON r.notification_id = rec.notification_id
GROUP BY c.producer, c.campaign;
GRANT SELECT ON herald.campaign_progress_view TO herald_producer;

-- +goose Down
DROP VIEW IF EXISTS herald.campaign_progress_view;
DROP PROCEDURE IF EXISTS herald.campaign_cancel(text, text, text, text, integer);
DROP FUNCTION IF EXISTS herald.campaign_cancel_batch(text, text, text, text, integer, timestamptz);
DROP FUNCTION IF EXISTS herald.campaign_join(text[], text[], timestamptz[], timestamptz);
DROP FUNCTION IF EXISTS herald.campaign_may_act(text);
DROP TABLE IF EXISTS herald.campaigns;
DROP INDEX IF EXISTS herald.records_campaign_idx;
ALTER TABLE herald.records DROP CONSTRAINT IF EXISTS records_campaign_check;
ALTER TABLE herald.records DROP COLUMN IF EXISTS campaign;

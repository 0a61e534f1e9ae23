-- A campaign's cancel moves what it cancels, and tries again a statement
-- that raced a route's move.
CREATE OR REPLACE FUNCTION herald.campaign_cancel_batch(producer text, campaign text, actor text, reason text,
    batch_size integer DEFAULT 5000, at timestamptz DEFAULT NULL)
RETURNS TABLE (canceled bigint, in_flight bigint, done boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    t timestamptz := CASE WHEN herald.caller_is_engine() THEN coalesce(campaign_cancel_batch.at, now()) ELSE now() END;
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
    -- A canceled route finishes and moves to its week's partition;
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

-- A campaign's cancel first updates the campaign's row, which waits for
-- the accepts holding it (campaign_join's FOR SHARE, in the producer's own
-- transaction). Each batch waits for it 1 s at most (55P03 past that);
-- its callers try again a few times and then name who holds it.
ALTER FUNCTION herald.campaign_cancel_batch(text, text, text, text, integer, timestamptz) SET lock_timeout = '1s';

REVOKE ALL ON FUNCTION herald.campaign_cancel_batch(producer text, campaign text, actor text, reason text, batch_size integer, at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.campaign_cancel_batch(producer text, campaign text, actor text, reason text, batch_size integer, at timestamp with time zone) TO herald_producer;
GRANT ALL ON FUNCTION herald.campaign_cancel_batch(producer text, campaign text, actor text, reason text, batch_size integer, at timestamp with time zone) TO herald_operator;

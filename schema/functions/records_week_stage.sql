CREATE OR REPLACE FUNCTION herald.records_week_stage(before timestamptz, merge_below bigint, wait interval DEFAULT '1s')
RETURNS TABLE (week date, records bigint, kept bigint, merged bigint)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    -- One backend: parallel workers would take the engine's cores. No
    -- sequential scan where an index does, and so no JIT: its compile
    -- would cost more than these statements (enable_seqscan's penalty
    -- lifts their cost past jit_above_cost). The week's kept records are
    -- a sprinkle of an old table, likely on disk: read by bitmap, in the
    -- table's order, with the reads ahead asked for together.
    SET max_parallel_workers_per_gather TO 0
    SET max_parallel_maintenance_workers TO 0
    SET enable_seqscan TO off
    SET enable_indexscan TO off
    SET effective_io_concurrency TO 64
    SET jit TO off
    AS $fn$
-- The first half of retiring the oldest week of records, if it ended at
-- or before `before` (records_week_swap is the second): makes its kept
-- partition, not attached yet, records_sYYYYMMDD (the week's Monday), with
-- the records of the week that must stay (a route left in any partition of
-- routes, or an idempotency window still open) and, when the kept
-- partition just below the week holds no more than twice as many rows as
-- this week keeps, or fewer than merge_below (the planner's estimate), all
-- of that one's rows, merged: the kept partitions grow geometrically, so a
-- row is copied a few times at most and they stay few. Returns the week's
-- Monday, how many records it held (counted when fewer than 100,000, else
-- the planner's estimate), how many of them it keeps and how many rows it
-- merged; no row when there is no week to retire. A staged partition made
-- before and not swapped in yet is kept as it is (its figures returned),
-- unless the kept partition it merged is no longer below the week.
--
-- It reads the tables it copies under a SHARE lock (nothing can write
-- them; the engine reads them) and locks nothing the engine writes: the
-- expensive half of a retirement, done once, however many times the swap
-- must wait for its lock.
DECLARE
    w herald.records_partitions_view%ROWTYPE;
    k herald.records_partitions_view%ROWTYPE;
    name text;
    v_lo text;
    n bigint;
    m bigint := 0;
    total bigint;
    stats jsonb;
BEGIN
    PERFORM set_config('lock_timeout', (extract(epoch FROM wait) * 1000)::bigint::text || 'ms', true);
    SELECT p.* INTO w FROM herald.records_partitions_view p WHERE p.kind = 'week' ORDER BY p.lo LIMIT 1;
    IF NOT FOUND OR w.hi > herald.id_floor(before) THEN
        RETURN;
    END IF;
    name := 'records_s' || substr(w.partition, 10);
    IF to_regclass('herald.' || name) IS NOT NULL THEN
        stats := obj_description(('herald.' || name)::regclass, 'pg_class')::jsonb;
        IF stats ->> 'merged_from' = '' OR EXISTS (SELECT 1 FROM herald.records_partitions_view p
                WHERE p.partition = stats ->> 'merged_from' AND p.kind = 'kept' AND p.hi = w.lo) THEN
            week := to_date(substr(w.partition, 10), 'YYYYMMDD');
            records := (stats ->> 'records')::bigint;
            kept := (stats ->> 'kept')::bigint;
            merged := (stats ->> 'merged')::bigint;
            RETURN NEXT;
            RETURN;
        END IF;
        EXECUTE format('DROP TABLE herald.%I', name);
    END IF;
    -- About how many this week keeps: its routes left (an index-only
    -- count of each routes partition's range).
    SELECT count(DISTINCT rt.notification_id) INTO n FROM herald.routes rt
    WHERE rt.notification_id >= w.lo AND rt.notification_id < w.hi;
    SELECT p.* INTO k FROM herald.records_partitions_view p
    WHERE p.kind = 'kept' AND p.hi = w.lo AND (p.rows_estimate < merge_below OR p.rows_estimate <= 2 * n);
    v_lo := CASE WHEN k.partition IS NULL THEN w.lo ELSE k.lo END;

    EXECUTE format('LOCK TABLE herald.%I IN SHARE MODE', w.partition);
    IF k.partition IS NOT NULL THEN
        EXECUTE format('LOCK TABLE herald.%I IN SHARE MODE', k.partition);
    END IF;
    EXECUTE format('CREATE TABLE herald.%I (LIKE herald.records INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
    -- The partition's bounds as a constraint, so the attach needs no scan.
    EXECUTE format('ALTER TABLE herald.%I ADD CONSTRAINT %I CHECK (notification_id IS NOT NULL%s AND notification_id < %L)',
        name, name || '_range', CASE WHEN v_lo IS NULL THEN '' ELSE format(' AND notification_id >= %L', v_lo) END, w.hi);
    -- The week is not read whole. The records with a route left: the
    -- routes of the week's records are one range of each routes
    -- partition's primary key, and the records are fetched by their own,
    -- together.
    EXECUTE format('INSERT INTO herald.%I SELECT r.* FROM herald.%I r
        WHERE r.notification_id = ANY (ARRAY(SELECT DISTINCT rt.notification_id FROM herald.routes rt
            WHERE rt.notification_id >= %L AND rt.notification_id < %L))', name, w.partition, w.lo, w.hi);
    GET DIAGNOSTICS n = ROW_COUNT;
    -- And those whose idempotency window is open: a week after the week
    -- ended, only a window longer than a week can be, and those records
    -- are in records_long_window_idx. Retired sooner, the week is read.
    -- (A record's accepted_at, the database's clock, and its id's time,
    -- the accepting process's, are taken to agree within the week.)
    IF herald.id_floor(now() - interval '7 days') >= w.hi THEN
        EXECUTE format('INSERT INTO herald.%I SELECT r.* FROM herald.%I r
            WHERE r.idempotency_expires_at - r.accepted_at > interval ''7 days'' AND r.idempotency_expires_at > now()
                AND r.notification_id NOT IN (SELECT x.notification_id FROM herald.%I x)', name, w.partition, name);
    ELSE
        EXECUTE format('INSERT INTO herald.%I SELECT r.* FROM herald.%I r
            WHERE r.idempotency_expires_at > now()
                AND r.notification_id NOT IN (SELECT x.notification_id FROM herald.%I x)', name, w.partition, name);
    END IF;
    GET DIAGNOSTICS m = ROW_COUNT;
    n := n + m;
    m := 0;
    -- How many it held: counted when small, else the planner's estimate
    -- (reading a large week to count it would cost what this spares).
    IF w.rows_estimate < 100000 THEN
        EXECUTE format('SELECT count(*) FROM herald.%I', w.partition) INTO total;
    ELSE
        total := w.rows_estimate;
    END IF;
    IF k.partition IS NOT NULL THEN
        EXECUTE format('INSERT INTO herald.%I SELECT * FROM herald.%I', name, k.partition);
        GET DIAGNOSTICS m = ROW_COUNT;
    END IF;
    EXECUTE format('ALTER TABLE herald.%I ADD CONSTRAINT %I PRIMARY KEY (notification_id)', name, name || '_pkey');
    EXECUTE format('CREATE INDEX %I ON herald.%I (producer, campaign, notification_id) WHERE campaign IS NOT NULL',
        name || '_campaign_idx', name);
    EXECUTE format('CREATE INDEX %I ON herald.%I (callback_of) WHERE callback_of IS NOT NULL',
        name || '_callback_of_idx', name);
    EXECUTE format('CREATE INDEX %I ON herald.%I (idempotency_expires_at)
        WHERE idempotency_expires_at - accepted_at > interval ''7 days''', name || '_long_window_idx', name);
    EXECUTE format('COMMENT ON TABLE herald.%I IS %L', name, jsonb_build_object(
        'merged_from', coalesce(k.partition, ''), 'records', total, 'kept', n, 'merged', m)::text);
    -- Its row count, which the next week's stage decides its merge on.
    EXECUTE format('ANALYZE herald.%I', name);
    week := to_date(substr(w.partition, 10), 'YYYYMMDD');
    records := total;
    kept := n;
    merged := m;
    RETURN NEXT;
END;
$fn$;

REVOKE ALL ON FUNCTION herald.records_week_stage(before timestamp with time zone, merge_below bigint, wait interval) FROM PUBLIC;

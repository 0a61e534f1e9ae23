CREATE OR REPLACE FUNCTION herald.records_week_swap(wait interval DEFAULT '100ms')
RETURNS TABLE (week date, records bigint, kept bigint, merged bigint)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET max_parallel_workers_per_gather TO 0
    SET enable_seqscan TO off
    SET jit TO off
    AS $fn$
-- The second half of retiring the oldest week of records: puts its staged
-- kept partition (records_week_stage) in the place of the week and of the
-- kept partition it merged, which are detached and renamed with the suffix
-- _gone, for herald.partitions_drop_gone to drop once this committed; the
-- staged partition becomes records_kYYYYMMDD. A week that keeps nothing
-- (and merged nothing) just goes, and its range is then no partition's. Returns what the stage
-- returned, the kept rows as they are now; no row when the oldest week has
-- no staged partition.
--
-- The staged rows are brought up to date first, under a SHARE lock on the
-- week and on the kept partition merged (nothing writes them meanwhile):
-- a record of the week that must stay and is not staged is added, a
-- merged row deleted since (row by row retention) goes, one inserted since
-- comes. Then the detach, the attach (the staged partition's constraint
-- spares its scan) and the renames lock records in ACCESS EXCLUSIVE mode
-- for an instant. wait bounds every lock wait; one that gives way fails
-- the call with 55P03, and the next call tries again from the staged
-- partition.
DECLARE
    w herald.records_partitions_view%ROWTYPE;
    k herald.records_partitions_view%ROWTYPE;
    staged text;
    name text;
    v_lo text;
    stats jsonb;
    n bigint;
    m bigint := 0;
BEGIN
    PERFORM set_config('lock_timeout', (extract(epoch FROM wait) * 1000)::bigint::text || 'ms', true);
    SELECT p.* INTO w FROM herald.records_partitions_view p WHERE p.kind = 'week' ORDER BY p.lo LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    staged := 'records_s' || substr(w.partition, 10);
    name := 'records_k' || substr(w.partition, 10);
    IF to_regclass('herald.' || staged) IS NULL THEN
        RETURN;
    END IF;
    stats := obj_description(('herald.' || staged)::regclass, 'pg_class')::jsonb;
    IF stats ->> 'merged_from' <> '' THEN
        SELECT p.* INTO k FROM herald.records_partitions_view p
        WHERE p.partition = stats ->> 'merged_from' AND p.kind = 'kept' AND p.hi = w.lo;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'staged partition % merges %, which is no longer the kept partition below %',
                staged, stats ->> 'merged_from', w.partition USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
    END IF;
    v_lo := CASE WHEN k.partition IS NULL THEN w.lo ELSE k.lo END;

    EXECUTE format('LOCK TABLE herald.%I IN SHARE MODE', w.partition);
    IF k.partition IS NOT NULL THEN
        EXECUTE format('LOCK TABLE herald.%I IN SHARE MODE', k.partition);
    END IF;
    -- Up to date: the week's records that must stay now (looked up in
    -- the week only for a route whose record is not staged)...
    EXECUTE format('INSERT INTO herald.%I SELECT r.* FROM herald.%I r
        WHERE r.notification_id = ANY (ARRAY(SELECT DISTINCT rt.notification_id FROM herald.routes rt
            WHERE rt.notification_id >= %L AND rt.notification_id < %L
                AND NOT EXISTS (SELECT 1 FROM herald.%I x WHERE x.notification_id = rt.notification_id)))',
        staged, w.partition, w.lo, w.hi, staged);
    IF herald.id_floor(now() - interval '7 days') >= w.hi THEN
        EXECUTE format('INSERT INTO herald.%I SELECT r.* FROM herald.%I r
            WHERE r.idempotency_expires_at - r.accepted_at > interval ''7 days'' AND r.idempotency_expires_at > now()
                AND NOT EXISTS (SELECT 1 FROM herald.%I x WHERE x.notification_id = r.notification_id)',
            staged, w.partition, staged);
    ELSE
        EXECUTE format('INSERT INTO herald.%I SELECT r.* FROM herald.%I r
            WHERE r.idempotency_expires_at > now()
                AND NOT EXISTS (SELECT 1 FROM herald.%I x WHERE x.notification_id = r.notification_id)',
            staged, w.partition, staged);
    END IF;
    -- ...and the merged partition's rows as they are now.
    IF k.partition IS NOT NULL THEN
        EXECUTE format('DELETE FROM herald.%I x WHERE x.notification_id < %L%s
                AND NOT EXISTS (SELECT 1 FROM herald.%I y WHERE y.notification_id = x.notification_id)',
            staged, k.hi, CASE WHEN k.lo IS NULL THEN '' ELSE format(' AND x.notification_id >= %L', k.lo) END,
            k.partition);
        EXECUTE format('INSERT INTO herald.%I SELECT y.* FROM herald.%I y
            WHERE NOT EXISTS (SELECT 1 FROM herald.%I x WHERE x.notification_id = y.notification_id)',
            staged, k.partition, staged);
        EXECUTE format('SELECT count(*) FROM herald.%I x WHERE x.notification_id < %L', staged, k.hi) INTO m;
    END IF;
    EXECUTE format('SELECT count(*) FROM herald.%I x WHERE x.notification_id >= %L', staged, w.lo) INTO n;

    EXECUTE format('ALTER TABLE herald.records DETACH PARTITION herald.%I', w.partition);
    EXECUTE format('ALTER TABLE herald.%I RENAME TO %I', w.partition, w.partition || '_gone');
    IF n + m = 0 THEN
        -- Nothing to keep: the week goes whole, and its range is held by
        -- no partition (records_default would take a stray id of it).
        EXECUTE format('ALTER TABLE herald.%I RENAME TO %I', staged, staged || '_gone');
        week := to_date(substr(w.partition, 10), 'YYYYMMDD');
        records := (stats ->> 'records')::bigint;
        kept := 0;
        merged := 0;
        RETURN NEXT;
        RETURN;
    END IF;
    IF k.partition IS NOT NULL THEN
        EXECUTE format('ALTER TABLE herald.records DETACH PARTITION herald.%I', k.partition);
        EXECUTE format('ALTER TABLE herald.%I RENAME TO %I', k.partition, k.partition || '_gone');
    END IF;
    EXECUTE format('ALTER TABLE herald.records ATTACH PARTITION herald.%I FOR VALUES FROM (%s) TO (%L)',
        staged, coalesce(quote_literal(v_lo), 'MINVALUE'), w.hi);
    EXECUTE format('ALTER TABLE herald.%I RENAME TO %I', staged, name);
    EXECUTE format('ALTER TABLE herald.%I RENAME CONSTRAINT %I TO %I', name, staged || '_range', name || '_range');
    EXECUTE format('ALTER INDEX herald.%I RENAME TO %I', staged || '_pkey', name || '_pkey');
    EXECUTE format('ALTER INDEX herald.%I RENAME TO %I', staged || '_campaign_idx', name || '_campaign_idx');
    EXECUTE format('ALTER INDEX herald.%I RENAME TO %I', staged || '_callback_of_idx', name || '_callback_of_idx');
    EXECUTE format('ALTER INDEX herald.%I RENAME TO %I', staged || '_long_window_idx', name || '_long_window_idx');
    EXECUTE format('COMMENT ON TABLE herald.%I IS %L', name,
        format('The records kept past retention, accepted before the week from %s ended (UTC).', to_date(substr(w.partition, 10), 'YYYYMMDD')));
    week := to_date(substr(w.partition, 10), 'YYYYMMDD');
    records := (stats ->> 'records')::bigint;
    kept := n;
    merged := m;
    RETURN NEXT;
END;
$fn$;

REVOKE ALL ON FUNCTION herald.records_week_swap(wait interval) FROM PUBLIC;

-- +goose Up
-- Records are partitioned by the week they were accepted in, so
-- that retention drops a week's records whole instead of deleting them row
-- by row, as routes go by the week they finished in (migration 00025).
--
-- herald.records is PARTITION BY RANGE (notification_id). A notification
-- id is a UUIDv7 whose text begins with the millisecond it was made at, so
-- the ids of a week are one range: [id_floor(Monday), id_floor(next
-- Monday)), UTC. Its partitions:
--
-- - records_wYYYYMMDD: a week's records (its Monday), made ahead by
--   maintenance (herald.records_weeks_create).
-- - records_kYYYYMMDD: the records kept from weeks retired up to that
--   week's (herald.records_week_stage, records_week_swap): a record that still has a route,
--   or whose idempotency window is still open. Small, and merged as they
--   come while they stay small.
-- - records_before: the table as it was before this migration (an
--   upgraded database; none on a new one), for ids before its floor, the
--   moment of the migration. Retention deletes its rows one by one, as
--   before, and merges it into the kept partition above it once small.
-- - records_default: DEFAULT, for an id no range holds (one not made by
--   herald, from a clock far off, or of a week not made in time). A week
--   made later takes its rows of that week in; retention deletes the rows
--   older than every week one by one.
--
-- The idempotency check does not depend on any of this: it is
-- idempotency_keys' primary key, one table for every week (migration
-- 00026). The primary key (notification_id) is the partition key, so it
-- holds across partitions: one notification id, one record.
--
-- A statement that names a notification id prunes to one partition
-- (Get, cancel, the timeline, the callback trigger); the claim's lookup of
-- each claimed route's record prunes at run time, per route, to one.
-- Statements that walk records in id order (the HTTP API's list,
-- retention's walk, campaign cancels) read the partitions' primary keys
-- merged in order.

-- Views over records are bound to the table itself, which becomes a
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
            AND d.refobjid = 'herald.records'::regclass
            AND r.ev_class <> 'herald.records'::regclass
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

DROP POLICY producer_read ON herald.records;
DROP POLICY producer_insert ON herald.records;
DROP POLICY staff_read ON herald.records;
ALTER TABLE herald.records DISABLE ROW LEVEL SECURITY;
ALTER TABLE herald.records RENAME TO records_before;
ALTER INDEX herald.records_pkey RENAME TO records_before_pkey;
ALTER INDEX herald.records_campaign_idx RENAME TO records_before_campaign_idx;
ALTER INDEX herald.records_callback_of_idx RENAME TO records_before_callback_of_idx;
-- Partitions are reached through their parent only: producers have no
-- grant on them, staff read them (the schema's default privileges).
REVOKE ALL ON herald.records_before FROM herald_producer;

-- The parent: the same columns in the same order, defaults, CHECK
-- constraints and comments included.
CREATE TABLE herald.records (LIKE herald.records_before
    INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS)
    PARTITION BY RANGE (notification_id);
COMMENT ON TABLE herald.records IS
    'One row per accepted notification, in the partition of the week it was accepted in (records_wYYYYMMDD) until retention retires the week; then, if it must stay, in a kept partition (records_kYYYYMMDD).';
ALTER TABLE herald.records ADD CONSTRAINT records_pkey PRIMARY KEY (notification_id);
CREATE INDEX records_campaign_idx ON herald.records (producer, campaign, notification_id) WHERE campaign IS NOT NULL;
CREATE INDEX records_callback_of_idx ON herald.records (callback_of) WHERE callback_of IS NOT NULL;
-- The records whose idempotency window is longer than a week (an accept
-- with the default 48 hours pays nothing for it: its record is not in
-- it). A week is retired a week or more after it ended, when every window
-- up to a week long is over: what it keeps for an open window it finds
-- here, without reading the week.
CREATE INDEX records_long_window_idx ON herald.records (idempotency_expires_at)
    WHERE idempotency_expires_at - accepted_at > interval '7 days';
CREATE TABLE herald.records_default PARTITION OF herald.records DEFAULT;
COMMENT ON TABLE herald.records_default IS
    'The records partition of ids no range holds: ids not made by herald, or from a clock far off. Retention deletes its rows one by one.';

GRANT SELECT, INSERT ON herald.records TO herald_producer;
GRANT SELECT ON herald.records TO herald_operator, herald_auditor;
ALTER TABLE herald.records ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_read ON herald.records FOR SELECT TO herald_producer
    USING (producer = (SELECT herald.acting_producer()));
CREATE POLICY producer_insert ON herald.records FOR INSERT TO herald_producer
    WITH CHECK (producer = (SELECT herald.acting_producer()) AND payload_json::json IS NOT NULL
        AND NOT ('callback' = ANY (channels)) AND callback_of IS NULL);
CREATE POLICY staff_read ON herald.records FOR SELECT TO herald_operator, herald_auditor USING (true);
-- The policies of other tables that read records, bound to the old table:
-- made to read the new parent.
ALTER POLICY producer_read ON herald.routes
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = routes.notification_id));
ALTER POLICY producer_read ON herald.dead_letters
    USING (EXISTS (SELECT 1 FROM herald.records rec WHERE rec.notification_id = dead_letters.notification_id));

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

-- The partitions with their bounds, for operators and for the functions
-- below: lo NULL is MINVALUE, and records_default has neither.
CREATE VIEW herald.records_partitions_view AS
SELECT c.relname::text AS partition,
    CASE WHEN c.relname ~ '^records_w[0-9]{8}$' THEN 'week'
        WHEN c.relname ~ '^records_k[0-9]{8}$' OR c.relname = 'records_before' THEN 'kept'
        WHEN pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT' THEN 'default'
        ELSE 'other' END AS kind,
    (regexp_match(pg_get_expr(c.relpartbound, c.oid),
        '^FOR VALUES FROM \((?:''([^'']*)''|MINVALUE)\) TO \((?:''([^'']*)''|MAXVALUE)\)$'))[1] AS lo,
    (regexp_match(pg_get_expr(c.relpartbound, c.oid),
        '^FOR VALUES FROM \((?:''([^'']*)''|MINVALUE)\) TO \((?:''([^'']*)''|MAXVALUE)\)$'))[2] AS hi,
    greatest(c.reltuples, 0)::bigint AS rows_estimate,
    pg_total_relation_size(c.oid) AS total_bytes
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'herald.records'::regclass;
COMMENT ON VIEW herald.records_partitions_view IS
    'records'' partitions: week (accepted that week), kept (kept past their week''s retirement), default; their id range [lo, hi) (NULL: unbounded), the planner''s row estimate and size.';
GRANT SELECT ON herald.records_partitions_view TO herald_operator, herald_auditor;

-- +goose StatementBegin
CREATE FUNCTION herald.records_weeks_create(first_day date, last_day date, wait interval DEFAULT '1s')
RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $fn$
-- Makes the record partitions of the weeks holding first_day through
-- last_day that do not exist yet, and returns how many it made; and the
-- weeks between the newest made and first_day, if there is a gap (made
-- while maintenance did not run, their records went to records_default).
-- A week's range is clamped to what no other partition holds (the first
-- week after an upgrade starts at the migration's floor). The rows
-- records_default holds in a week's range (from a clock that ran ahead,
-- or made while the week had no partition) move into it, so they go with
-- their week. Each week is made on its own, its indexes built before it
-- is attached: that locks the parent in SHARE UPDATE EXCLUSIVE mode (the
-- engine goes on) and records_default in ACCESS EXCLUSIVE mode while its
-- rows are checked (tiny: it holds what no week holds). wait bounds each
-- lock wait (lock_timeout); a run that gives way fails with 55P03 and the
-- next makes the rest.
DECLARE
    w date;
    made integer := 0;
    name text;
    v_lo text;
    v_hi text;
    v_x text;
    found_one boolean;
    newest date;
BEGIN
    PERFORM set_config('lock_timeout', (extract(epoch FROM wait) * 1000)::bigint::text || 'ms', true);
    SELECT max(to_date(substr(p.partition, 10), 'YYYYMMDD')) + 7 INTO newest
    FROM herald.records_partitions_view p WHERE p.kind = 'week';
    IF newest IS NOT NULL AND newest < first_day THEN
        first_day := newest;
    END IF;
    FOR w IN SELECT g::date FROM generate_series(date_trunc('week', first_day::timestamp),
            date_trunc('week', last_day::timestamp), interval '7 days') AS g LOOP
        name := 'records_w' || to_char(w, 'YYYYMMDD');
        CONTINUE WHEN to_regclass('herald.' || name) IS NOT NULL;
        v_lo := herald.id_floor(w::timestamp AT TIME ZONE 'UTC');
        v_hi := herald.id_floor((w + 7)::timestamp AT TIME ZONE 'UTC');
        -- Past any partition that holds v_lo...
        LOOP
            SELECT p.hi, true INTO v_x, found_one
            FROM herald.records_partitions_view p
            WHERE p.kind <> 'default' AND (p.lo IS NULL OR p.lo <= v_lo) AND (p.hi IS NULL OR p.hi > v_lo);
            EXIT WHEN NOT coalesce(found_one, false);
            found_one := false;
            IF v_x IS NULL THEN
                v_lo := v_hi; -- held up to MAXVALUE
                EXIT;
            END IF;
            v_lo := v_x;
        END LOOP;
        CONTINUE WHEN v_lo >= v_hi;
        -- ...and up to the next one.
        SELECT min(p.lo) INTO v_x FROM herald.records_partitions_view p
        WHERE p.kind <> 'default' AND p.lo > v_lo AND p.lo < v_hi;
        v_hi := coalesce(v_x, v_hi);
        EXECUTE format('CREATE TABLE herald.%I (LIKE herald.records INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
        IF EXISTS (SELECT 1 FROM herald.records_default d WHERE d.notification_id >= v_lo AND d.notification_id < v_hi) THEN
            -- Locked first, so that no row of the week comes in between.
            LOCK TABLE herald.records_default IN ACCESS EXCLUSIVE MODE;
            EXECUTE format('WITH moved AS (DELETE FROM herald.records_default d
                    WHERE d.notification_id >= %L AND d.notification_id < %L RETURNING d.*)
                INSERT INTO herald.%I SELECT * FROM moved', v_lo, v_hi, name);
        END IF;
        EXECUTE format('ALTER TABLE herald.%I ADD CONSTRAINT %I PRIMARY KEY (notification_id)', name, name || '_pkey');
        EXECUTE format('CREATE INDEX %I ON herald.%I (producer, campaign, notification_id) WHERE campaign IS NOT NULL',
            name || '_campaign_idx', name);
        EXECUTE format('CREATE INDEX %I ON herald.%I (callback_of) WHERE callback_of IS NOT NULL',
            name || '_callback_of_idx', name);
        EXECUTE format('CREATE INDEX %I ON herald.%I (idempotency_expires_at)
            WHERE idempotency_expires_at - accepted_at > interval ''7 days''', name || '_long_window_idx', name);
        EXECUTE format('ALTER TABLE herald.records ATTACH PARTITION herald.%I FOR VALUES FROM (%L) TO (%L)', name, v_lo, v_hi);
        EXECUTE format('COMMENT ON TABLE herald.%I IS %L', name,
            format('The records accepted in the week from %s (UTC): retired whole by retention.', w));
        made := made + 1;
    END LOOP;
    RETURN made;
END;
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION herald.records_week_stage(before timestamptz, merge_below bigint, wait interval DEFAULT '1s')
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
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION herald.records_week_swap(wait interval DEFAULT '100ms')
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
-- +goose StatementEnd

-- Finished routes' weeks go the same way now: detached and renamed in one
-- short transaction, dropped in another (routes_weeks_drop, of migration
-- 00025, dropped the week under the lock on routes).
DROP FUNCTION herald.routes_weeks_drop(timestamptz, interval);
-- +goose StatementBegin
CREATE FUNCTION herald.routes_weeks_detach(before timestamptz, wait interval DEFAULT '100ms')
RETURNS TABLE (week date, routes bigint)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $fn$
-- Detaches the oldest finished-route partition if its week ended at or
-- before `before`, renames it with the suffix _gone (for
-- herald.partitions_drop_gone), and returns its Monday and about how many
-- routes it held (reltuples); no row when there is none to detach. One
-- week per call: the detach locks routes in ACCESS EXCLUSIVE mode for an
-- instant. wait bounds the wait for it (the claim and the completion queue
-- behind a waiting detach), and a detach that gives way fails with 55P03
-- and is tried again by the next run.
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
    EXECUTE format('ALTER TABLE herald.routes DETACH PARTITION herald.%I', p.relname);
    EXECUTE format('ALTER TABLE herald.%I RENAME TO %I', p.relname, p.relname || '_gone');
    week := p.w;
    routes := p.n;
    RETURN NEXT;
END;
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION herald.partitions_drop_gone(wait interval DEFAULT '1s')
RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $fn$
-- Drops the tables that routes_weeks_detach and records_week_swap
-- detached (routes_f..._gone, records_w..._gone, records_k..._gone, no
-- longer partitions of anything), and a staged kept partition
-- (records_s...) whose week is gone, and returns how many. It locks only
-- them: nothing reads them any more.
DECLARE
    t text;
    n integer := 0;
BEGIN
    PERFORM set_config('lock_timeout', (extract(epoch FROM wait) * 1000)::bigint::text || 'ms', true);
    FOR t IN
        SELECT c.relname FROM pg_class c
        WHERE c.relnamespace = 'herald'::regnamespace AND c.relkind = 'r' AND NOT c.relispartition
            AND (c.relname ~ '^(routes_f|records_w|records_k|records_s)[0-9]{8}_gone$'
                OR (c.relname ~ '^records_s[0-9]{8}$'
                    AND to_regclass('herald.records_w' || substr(c.relname, 10)) IS NULL))
    LOOP
        EXECUTE format('DROP TABLE herald.%I', t);
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$fn$;
-- +goose StatementEnd

-- Partitions are made and retired by maintenance, which runs as the owner.
REVOKE ALL ON FUNCTION herald.records_weeks_create(date, date, interval),
    herald.records_week_stage(timestamptz, bigint, interval),
    herald.records_week_swap(interval),
    herald.routes_weeks_detach(timestamptz, interval),
    herald.partitions_drop_gone(interval) FROM PUBLIC;

-- The weeks from the migration's floor on: the first from the floor (an
-- upgrade's rows are all before it), then the week's end, and two more.
-- The old table's rows then move: those before the floor (all of them, but
-- for a clock that ran ahead) stay in it as the partition records_before,
-- the rest go through the parent to their partition. A new database has
-- no rows: records_before goes, and weeks before the floor can be made
-- (herald bench fills a history in them).
-- +goose StatementBegin
DO $$
DECLARE
    floor text := herald.id_floor(now());
    monday date := date_trunc('week', now() AT TIME ZONE 'UTC')::date;
    first text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM herald.records_before) THEN
        DROP TABLE herald.records_before;
        PERFORM herald.records_weeks_create(monday, monday + 14);
        RETURN;
    END IF;
    first := 'records_w' || to_char(monday, 'YYYYMMDD');
    EXECUTE format('CREATE TABLE herald.%I (LIKE herald.records INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', first);
    EXECUTE format('ALTER TABLE herald.%I ADD CONSTRAINT %I PRIMARY KEY (notification_id)', first, first || '_pkey');
    EXECUTE format('CREATE INDEX %I ON herald.%I (producer, campaign, notification_id) WHERE campaign IS NOT NULL',
        first || '_campaign_idx', first);
    EXECUTE format('CREATE INDEX %I ON herald.%I (callback_of) WHERE callback_of IS NOT NULL',
        first || '_callback_of_idx', first);
    EXECUTE format('CREATE INDEX %I ON herald.%I (idempotency_expires_at)
        WHERE idempotency_expires_at - accepted_at > interval ''7 days''', first || '_long_window_idx', first);
    EXECUTE format('ALTER TABLE herald.records ATTACH PARTITION herald.%I FOR VALUES FROM (%L) TO (%L)',
        first, floor, herald.id_floor((monday + 7)::timestamp AT TIME ZONE 'UTC'));
    EXECUTE format('COMMENT ON TABLE herald.%I IS %L', first,
        format('The records accepted in the week from %s (UTC), from migration 00027 on: retired whole by retention.', monday));
    PERFORM herald.records_weeks_create(monday + 7, monday + 14);
    WITH moved AS (
        DELETE FROM herald.records_before WHERE notification_id >= floor RETURNING *
    )
    INSERT INTO herald.records SELECT * FROM moved;
    EXECUTE format('ALTER TABLE herald.records_before ADD CONSTRAINT records_before_range CHECK (notification_id < %L)', floor);
    EXECUTE format('ALTER TABLE herald.records ATTACH PARTITION herald.records_before FOR VALUES FROM (MINVALUE) TO (%L)', floor);
    COMMENT ON TABLE herald.records_before IS
        'The records from before migration 00027 (their ids before its floor): retention deletes them one by one, then merges what stays into the kept partition above.';
END
$$;
-- +goose StatementEnd

-- +goose Down
-- Back to one table: every partition's rows copied into records_before
-- (or a new table, on a database that never had one), under its old name.
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
            AND d.refobjid = 'herald.records'::regclass
            AND r.ev_class <> 'herald.records'::regclass
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
    WHERE c.oid IN (SELECT oid FROM dep) AND c.relname <> 'records_partitions_view';
    DROP VIEW herald.records_partitions_view;
    FOR v IN SELECT * FROM saved_views ORDER BY old_oid DESC LOOP
        EXECUTE format('DROP VIEW herald.%I', v.relname);
    END LOOP;
    IF to_regclass('herald.records_before') IS NOT NULL THEN
        ALTER TABLE herald.records DETACH PARTITION herald.records_before;
        ALTER TABLE herald.records_before DROP CONSTRAINT records_before_range;
        -- The index the attach built on it, which the old table had not.
        FOR p IN
            SELECT i.indexrelid::regclass::text AS relname FROM pg_index i
            WHERE i.indrelid = 'herald.records_before'::regclass
                AND pg_get_indexdef(i.indexrelid) LIKE '%idempotency_expires_at - accepted_at%'
        LOOP
            EXECUTE format('DROP INDEX %s', p.relname);
        END LOOP;
    ELSE
        CREATE TABLE herald.records_before (LIKE herald.records
            INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS);
        ALTER TABLE herald.records_before ADD CONSTRAINT records_before_pkey PRIMARY KEY (notification_id);
        CREATE INDEX records_before_campaign_idx ON herald.records_before (producer, campaign, notification_id)
            WHERE campaign IS NOT NULL;
        CREATE INDEX records_before_callback_of_idx ON herald.records_before (callback_of)
            WHERE callback_of IS NOT NULL;
    END IF;
    FOR p IN
        SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'herald.records'::regclass
    LOOP
        EXECUTE format('INSERT INTO herald.records_before SELECT * FROM herald.%I', p.relname);
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP FUNCTION herald.records_weeks_create(date, date, interval);
DROP FUNCTION herald.records_week_stage(timestamptz, bigint, interval);
DROP FUNCTION herald.records_week_swap(interval);
SELECT herald.partitions_drop_gone();
DROP FUNCTION herald.partitions_drop_gone(interval);
DROP FUNCTION herald.routes_weeks_detach(timestamptz, interval);
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
REVOKE ALL ON FUNCTION herald.routes_weeks_drop(timestamptz, interval) FROM PUBLIC;
ALTER POLICY producer_read ON herald.routes
    USING (EXISTS (SELECT 1 FROM herald.records_before rec WHERE rec.notification_id = routes.notification_id));
ALTER POLICY producer_read ON herald.dead_letters
    USING (EXISTS (SELECT 1 FROM herald.records_before rec WHERE rec.notification_id = dead_letters.notification_id));
DROP TABLE herald.records;
ALTER TABLE herald.records_before RENAME TO records;
ALTER INDEX herald.records_before_pkey RENAME TO records_pkey;
ALTER INDEX herald.records_before_campaign_idx RENAME TO records_campaign_idx;
ALTER INDEX herald.records_before_callback_of_idx RENAME TO records_callback_of_idx;
COMMENT ON TABLE herald.records IS NULL;
GRANT SELECT, INSERT ON herald.records TO herald_producer;
GRANT SELECT ON herald.records TO herald_operator, herald_auditor;
ALTER TABLE herald.records ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_read ON herald.records FOR SELECT TO herald_producer
    USING (producer = (SELECT herald.acting_producer()));
CREATE POLICY producer_insert ON herald.records FOR INSERT TO herald_producer
    WITH CHECK (producer = (SELECT herald.acting_producer()) AND payload_json::json IS NOT NULL
        AND NOT ('callback' = ANY (channels)) AND callback_of IS NULL);
CREATE POLICY staff_read ON herald.records FOR SELECT TO herald_operator, herald_auditor USING (true);
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

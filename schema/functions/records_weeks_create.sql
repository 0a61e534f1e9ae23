CREATE OR REPLACE FUNCTION herald.records_weeks_create(first_day date, last_day date, wait interval DEFAULT '1s')
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

REVOKE ALL ON FUNCTION herald.records_weeks_create(first_day date, last_day date, wait interval) FROM PUBLIC;

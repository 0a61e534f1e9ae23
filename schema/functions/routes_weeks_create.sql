-- The week partitions. A week is [Monday 00:00 UTC, the next Monday).
CREATE OR REPLACE FUNCTION herald.routes_weeks_create(first_day date, last_day date, wait interval DEFAULT '1s')
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

REVOKE ALL ON FUNCTION herald.routes_weeks_create(first_day date, last_day date, wait interval) FROM PUBLIC;

CREATE OR REPLACE FUNCTION herald.partitions_drop_gone(wait interval DEFAULT '1s')
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

REVOKE ALL ON FUNCTION herald.partitions_drop_gone(wait interval) FROM PUBLIC;

CREATE OR REPLACE FUNCTION herald.routes_weeks_detach(before timestamptz, wait interval DEFAULT '100ms')
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

REVOKE ALL ON FUNCTION herald.routes_weeks_detach(before timestamp with time zone, wait interval) FROM PUBLIC;

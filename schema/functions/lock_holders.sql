-- lock_holders describes the other sessions holding a lock on any of rels
-- right now: each one's login, pid, lock mode and relation, and how long
-- its transaction has been open when the caller may see that (the login's
-- own sessions, or a member of pg_read_all_stats). What an engine or
-- operator action that gave up on a lock says about who held it. It reads
-- only what pg_locks and pg_stat_activity show every login, as its
-- caller; producers execute it too (a producer's own campaign_cancel).
CREATE OR REPLACE FUNCTION herald.lock_holders(rels regclass[]) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(string_agg(format('%s (pid %s) holds %s on %s%s',
            coalesce(a.usename::text, '?'), l.pid, l.mode, l.relation::regclass,
            CASE WHEN a.xact_start IS NULL THEN ''
                ELSE format(', in a transaction open %s', date_trunc('second', now() - a.xact_start)) END),
            '; ' ORDER BY a.xact_start NULLS FIRST, l.pid, l.mode),
        'no other session holds a lock on them now')
    FROM pg_locks l
    LEFT JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'relation' AND l.granted
        AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
        AND l.relation = ANY (lock_holders.rels)
        AND l.pid <> pg_backend_pid();
$$;

REVOKE ALL ON FUNCTION herald.lock_holders(rels regclass[]) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.lock_holders(rels regclass[]) TO herald_producer;
GRANT ALL ON FUNCTION herald.lock_holders(rels regclass[]) TO herald_operator;

-- +goose Up
-- Nothing a producer holds blocks the engine or an operator beyond a bound,
-- and no LISTEN tells a producer about another's traffic.
--
-- Any login may take any advisory lock key, and may LISTEN on, or NOTIFY,
-- any topic: PostgreSQL has no privilege for either. So the engine keeps no
-- advisory key (mutual exclusion is a row lock on a table producers hold
-- no privilege on, which they cannot lock), and its NOTIFY topics are named
-- after a random secret only the engine's login (and the staff who read
-- everything) can read.

-- ---------------------------------------------------------------------------
-- NOTIFY topics: base name, an underscore, and this database's secret.
-- ---------------------------------------------------------------------------

-- notify_secret holds the one random token the topics' names end in, made
-- here (gen_random_uuid draws on the server's strong random source). A
-- producer cannot read it, so it cannot LISTEN on a topic of the engine's
-- or NOTIFY one: a listener that does not know the name learns nothing.
-- The engine reads it (herald.notify_topic) to LISTEN; operators and
-- auditors read it by the schema's default grants, as they read everything.
CREATE TABLE herald.notify_secret (
    token text NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', ''),
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row)
);
INSERT INTO herald.notify_secret DEFAULT VALUES;
COMMENT ON TABLE herald.notify_secret IS
    'The random token the NOTIFY topics'' names end in (herald.notify_topic): unknown to producers, so they cannot LISTEN on or NOTIFY them.';

-- notify_topic returns the name of the NOTIFY topic base ('herald_routes',
-- 'herald_intake', 'herald_routing', 'herald_receipts'): what the engine
-- LISTENs on and its functions NOTIFY. Only the owner executes it.
-- +goose StatementBegin
CREATE FUNCTION herald.notify_topic(base text) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT notify_topic.base || '_' || s.token FROM herald.notify_secret s;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.notify_topic(text) FROM PUBLIC;

-- routes_wake sends the accept path's wake-up hint (the delivery channel
-- of new routes, '' for several) on the dispatchers' topic, or, when vet
-- is true (the routes were written by a login row security applies to,
-- so they wait in lane '!vet'), on the vetter's. A producer's Submit runs
-- the accept in its own transaction and login, so it notifies through
-- this function, which knows the topics' names and tells them no one. A
-- hint only wakes a reader to look: a producer that sends one by hand
-- learns nothing and moves nothing.
-- +goose StatementBegin
CREATE FUNCTION herald.routes_wake(payload text, vet boolean) RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_notify(herald.notify_topic(CASE WHEN routes_wake.vet THEN 'herald_vet' ELSE 'herald_routes' END),
        routes_wake.payload);
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.routes_wake(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.routes_wake(text, boolean) TO herald_producer;

-- Every function that notifies a fixed topic names it through
-- notify_topic instead. The trigger functions that producers, relays and
-- operators fire by their writes run as the owner, so that notify_topic
-- stays the owner's alone.
ALTER FUNCTION herald.intake_notify() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION herald.delivery_receipts_notify() SECURITY DEFINER;
-- +goose StatementBegin
DO $$
DECLARE
    f record;
    done text[] := '{}';
BEGIN
    FOR f IN SELECT p.oid, p.proname FROM pg_proc p
        WHERE p.pronamespace = 'herald'::regnamespace AND p.prosrc ~ $re$pg_notify\('herald_[a-z]+'$re$ LOOP
        EXECUTE regexp_replace(pg_get_functiondef(f.oid),
            $re$pg_notify\('(herald_[a-z]+)'$re$, $re$pg_notify(herald.notify_topic('\1')$re$, 'g');
        done := done || f.proname::text;
    END LOOP;
    IF NOT done @> ARRAY['intake_notify', 'routing_apply', 'delivery_receipts_notify', 'routes_callback_enqueue'] THEN
        RAISE EXCEPTION 'functions sending NOTIFY rewritten: %, not the four expected', done;
    END IF;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------
-- Locks: none a producer can take or hold for long.
-- ---------------------------------------------------------------------------

-- routing_apply serialises applies on routing_state's one row, which only
-- the owner may lock (FOR UPDATE needs UPDATE), instead of an advisory key
-- any login could hold.
-- +goose StatementBegin
DO $$
DECLARE
    def text := pg_get_functiondef('herald.routing_apply(jsonb, text, text, boolean)'::regprocedure);
BEGIN
    IF position('pg_advisory_xact_lock(hashtext(''herald.routing_apply''))' IN def) = 0 THEN
        RAISE EXCEPTION 'routing_apply takes no advisory lock to replace';
    END IF;
    EXECUTE replace(def, 'pg_advisory_xact_lock(hashtext(''herald.routing_apply''))',
        '1 FROM herald.routing_state FOR UPDATE');
END;
$$;
-- +goose StatementEnd

-- lock_holders describes the other sessions holding a lock on any of rels
-- right now: each one's login, pid, lock mode and relation, and how long
-- its transaction has been open when the caller may see that (the login's
-- own sessions, or a member of pg_read_all_stats). What an engine or
-- operator action that gave up on a lock says about who held it. It reads
-- only what pg_locks and pg_stat_activity show every login, as its
-- caller; producers execute it too (a producer's own campaign_cancel).
-- +goose StatementBegin
CREATE FUNCTION herald.lock_holders(rels regclass[]) RETURNS text
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
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.lock_holders(regclass[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.lock_holders(regclass[]) TO herald_producer, herald_operator;

-- A campaign's cancel first updates the campaign's row, which waits for
-- the accepts holding it (campaign_join's FOR SHARE, in the producer's own
-- transaction). Each batch waits for it 1 s at most (55P03 past that);
-- its callers try again a few times and then name who holds it.
ALTER FUNCTION herald.campaign_cancel_batch(text, text, text, text, integer, timestamptz) SET lock_timeout = '1s';

-- campaign_cancel, the whole cancel for psql, tries a batch that gave up
-- on its lock 5 times (about 5 s), then fails naming the holders.
-- +goose StatementBegin
CREATE OR REPLACE PROCEDURE herald.campaign_cancel(producer text, campaign text, actor text, reason text,
    batch_size integer DEFAULT 5000)
LANGUAGE plpgsql
AS $$
DECLARE
    b record;
    tries integer := 0;
BEGIN
    LOOP
        BEGIN
            SELECT * INTO b FROM herald.campaign_cancel_batch(producer, campaign, actor, reason, batch_size);
        EXCEPTION WHEN lock_not_available THEN
            tries := tries + 1;
            IF tries >= 5 THEN
                RAISE EXCEPTION 'campaign % of %: its row stayed locked for % tries of 1 s: %', campaign, producer, tries,
                    herald.lock_holders(ARRAY['herald.campaigns'::regclass])
                    USING ERRCODE = 'lock_not_available';
            END IF;
            CONTINUE;
        END;
        COMMIT;
        tries := 0;
        EXIT WHEN b.done;
        IF b.canceled = 0 AND b.in_flight > 0 THEN
            PERFORM pg_catalog.pg_sleep(0.1);
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE PROCEDURE herald.campaign_cancel(producer text, campaign text, actor text, reason text,
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
ALTER FUNCTION herald.campaign_cancel_batch(text, text, text, text, integer, timestamptz) RESET lock_timeout;
DROP FUNCTION herald.lock_holders(regclass[]);

-- +goose StatementBegin
DO $$
DECLARE
    def text := pg_get_functiondef('herald.routing_apply(jsonb, text, text, boolean)'::regprocedure);
BEGIN
    EXECUTE replace(def, '1 FROM herald.routing_state FOR UPDATE',
        'pg_advisory_xact_lock(hashtext(''herald.routing_apply''))');
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    f record;
BEGIN
    FOR f IN SELECT p.oid FROM pg_proc p
        WHERE p.pronamespace = 'herald'::regnamespace AND p.prosrc ~ $re$pg_notify\(herald\.notify_topic\($re$ LOOP
        EXECUTE regexp_replace(pg_get_functiondef(f.oid),
            $re$pg_notify\(herald\.notify_topic\('(herald_[a-z]+)'\)$re$, $re$pg_notify('\1'$re$, 'g');
    END LOOP;
END;
$$;
-- +goose StatementEnd
ALTER FUNCTION herald.delivery_receipts_notify() SECURITY INVOKER;
ALTER FUNCTION herald.intake_notify() SECURITY INVOKER RESET search_path;
DROP FUNCTION herald.routes_wake(text, boolean);
DROP FUNCTION herald.notify_topic(text);
DROP TABLE herald.notify_secret;

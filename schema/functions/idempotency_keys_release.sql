-- Releases the keys given (producers[i], idempotency_keys[i]) whose window
-- ended at or before `at` (now when NULL) and that notification_ids[i]
-- still holds, and returns how many it released: what an accept calls for
-- the expired keys its insert met, before inserting them again. The
-- engine releases any producer's keys; a producer login (or the HTTP
-- API's, for its key's producer) only its own, the others are left as
-- they are. A key another accept has taken over since (a new holder) is
-- left too.
CREATE OR REPLACE FUNCTION herald.idempotency_keys_release(producers text[], idempotency_keys text[], notification_ids text[],
    at timestamptz DEFAULT NULL)
RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM herald.idempotency_keys k
        USING (
            SELECT unnest(idempotency_keys_release.producers) AS producer,
                unnest(idempotency_keys_release.idempotency_keys) AS idempotency_key,
                unnest(idempotency_keys_release.notification_ids) AS notification_id
        ) AS x
        WHERE k.producer = x.producer AND k.idempotency_key = x.idempotency_key
            AND k.notification_id = x.notification_id
            AND k.expires_at <= coalesce(idempotency_keys_release.at, now())
            AND (k.producer = herald.acting_producer()
                OR pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER'))
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone;
$$;

REVOKE ALL ON FUNCTION herald.idempotency_keys_release(producers text[], idempotency_keys text[], notification_ids text[], at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.idempotency_keys_release(producers text[], idempotency_keys text[], notification_ids text[], at timestamp with time zone) TO herald_producer;

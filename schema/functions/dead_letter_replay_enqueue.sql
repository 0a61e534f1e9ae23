-- dead_letter_replay_enqueue queues a bulk replay as a River job (kind
-- herald_replay, worked by internal/operator's ReplayWorker in `herald
-- serve`). It is SECURITY DEFINER so that the operator needs no privilege on
-- River's tables (River's own insert takes UPDATE for its unique-job upsert);
-- it inserts exactly the row River's insert would for this job, which River's
-- producers pick up at their next poll. args is the job's JSON (ReplayArgs);
-- it must name an actor and a replay id.
CREATE OR REPLACE FUNCTION herald.dead_letter_replay_enqueue(args jsonb)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job_id bigint;
BEGIN
    IF jsonb_typeof(args) IS DISTINCT FROM 'object'
        OR coalesce(args ->> 'actor', '') = ''
        OR coalesce(args ->> 'replay_id', '') = '' THEN
        RAISE EXCEPTION 'replay job args must name an actor and a replay_id'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO herald.river_job (args, kind, max_attempts, priority, queue, metadata)
    VALUES (args, 'herald_replay', 10, 1, 'default', '{}')
    RETURNING id INTO job_id;
    RETURN job_id;
END;
$$;

REVOKE ALL ON FUNCTION herald.dead_letter_replay_enqueue(args jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.dead_letter_replay_enqueue(args jsonb) TO herald_operator;

-- campaign_cancel, the whole cancel for psql, tries a batch that gave up
-- on its lock 5 times (about 5 s), then fails naming the holders.
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

REVOKE ALL ON PROCEDURE herald.campaign_cancel(IN producer text, IN campaign text, IN actor text, IN reason text, IN batch_size integer) FROM PUBLIC;
GRANT ALL ON PROCEDURE herald.campaign_cancel(IN producer text, IN campaign text, IN actor text, IN reason text, IN batch_size integer) TO herald_producer;
GRANT ALL ON PROCEDURE herald.campaign_cancel(IN producer text, IN campaign text, IN actor text, IN reason text, IN batch_size integer) TO herald_operator;

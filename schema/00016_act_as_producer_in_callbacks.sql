-- +goose Up
-- 00010 (the HTTP API) made every producer policy and function compare
-- with herald.acting_producer(): the login itself, or for a member of
-- herald_api the producer of the API key its transaction set. 00012 (status
-- callbacks) was written beside it against 00006's session_user, and
-- re-created the records insert policy that way; this puts both on
-- acting_producer(), so an API login submits, and manages subscriptions,
-- as its key's producer and as nothing without one.
ALTER POLICY producer_insert ON herald.records
    WITH CHECK (producer = (SELECT herald.acting_producer()) AND (payload_json::json) IS NOT NULL
        AND NOT ('callback' = ANY (channels)));
ALTER POLICY producer_read ON herald.callback_subscriptions
    USING (producer = (SELECT herald.acting_producer()));

-- The subscription functions name their caller as 00012 wrote them
-- ("who text := session_user;"): rewritten in place, signature, security,
-- search_path and grants unchanged (CREATE OR REPLACE keeps the grants).
-- +goose StatementBegin
DO $$
DECLARE
    def text;
BEGIN
    FOR def IN
        SELECT pg_get_functiondef(p.oid)
        FROM pg_catalog.pg_proc p
        JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'herald' AND p.proname IN ('callback_subscription_set', 'callback_subscription_delete')
    LOOP
        IF position('who text := session_user;' IN def) = 0 THEN
            RAISE EXCEPTION 'a callback subscription function no longer reads as 00012 wrote it';
        END IF;
        EXECUTE replace(def, 'who text := session_user;', 'who text := herald.acting_producer();');
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    def text;
BEGIN
    FOR def IN
        SELECT pg_get_functiondef(p.oid)
        FROM pg_catalog.pg_proc p
        JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'herald' AND p.proname IN ('callback_subscription_set', 'callback_subscription_delete')
    LOOP
        EXECUTE replace(def, 'who text := herald.acting_producer();', 'who text := session_user;');
    END LOOP;
END;
$$;
-- +goose StatementEnd
ALTER POLICY producer_read ON herald.callback_subscriptions USING (producer = session_user);
ALTER POLICY producer_insert ON herald.records
    WITH CHECK (producer = session_user AND (payload_json::json) IS NOT NULL
        AND NOT ('callback' = ANY (channels)));

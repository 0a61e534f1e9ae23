CREATE OR REPLACE FUNCTION herald.recipient_delete(uid text, shared boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF shared AND NOT pg_has_role(session_user, 'herald_directory', 'MEMBER')
            AND NOT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER') THEN
        RAISE EXCEPTION 'only a herald_directory login may delete shared directory entries'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    DELETE FROM herald.recipients
    WHERE user_id = uid AND owner = CASE WHEN shared THEN '' ELSE herald.acting_producer() END;
    RETURN FOUND;
END;
$$;

REVOKE ALL ON FUNCTION herald.recipient_delete(uid text, shared boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.recipient_delete(uid text, shared boolean) TO herald_producer;
GRANT ALL ON FUNCTION herald.recipient_delete(uid text, shared boolean) TO herald_directory;

CREATE OR REPLACE FUNCTION herald.content_rules_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r herald.content_rules;
BEGIN
    IF TG_OP = 'INSERT' THEN r := NEW; ELSE r := OLD; END IF;
    INSERT INTO herald.audit_log (actor, action, filter, affected, details)
    VALUES (session_user, CASE WHEN TG_OP = 'INSERT' THEN 'content_rule_add' ELSE 'content_rule_delete' END,
        jsonb_build_object('rule_id', r.id), 1,
        jsonb_build_object('producer', r.producer, 'kind', r.kind, 'pattern', r.pattern, 'mode', r.mode, 'note', r.note));
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION herald.content_rules_audit() FROM PUBLIC;

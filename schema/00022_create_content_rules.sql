-- +goose Up
-- The content blocklist and the intents it holds for review.

-- content_rules: words and patterns an intent's text must not hold, for
-- every producer (producer '') or one. kind 'word' matches the word or
-- phrase case-insensitively at word boundaries; kind 'regex' is a Go (RE2)
-- regular expression matched as written. mode 'refuse' refuses a matching
-- intent (content_blocked, naming the rule); mode 'review' holds it in
-- held_intents for an operator. Both doors read the rules through package
-- content, which compiles them into one matcher (a regex that does not
-- compile is skipped and logged, never blocks the intake).
CREATE TABLE herald.content_rules (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    producer text NOT NULL DEFAULT '',
    kind text NOT NULL,
    pattern text NOT NULL,
    mode text NOT NULL DEFAULT 'refuse',
    note text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL DEFAULT session_user,
    CONSTRAINT content_rules_kind_check CHECK (kind IN ('word', 'regex')),
    CONSTRAINT content_rules_mode_check CHECK (mode IN ('refuse', 'review')),
    CONSTRAINT content_rules_pattern_check CHECK (length(btrim(pattern)) BETWEEN 1 AND 1000 AND length(note) <= 1000)
);

-- Operators keep the rules; every change leaves an audit row, written by
-- the trigger below (stamped with the login, as every audit row is). A
-- producer reads the global rules and its own: the Go door checks an
-- intent in the producer's process, and a refusal names the rule anyway.
GRANT SELECT ON herald.content_rules TO herald_producer, herald_operator, herald_auditor;
GRANT INSERT (producer, kind, pattern, mode, note), DELETE ON herald.content_rules TO herald_operator;
ALTER TABLE herald.content_rules ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_read ON herald.content_rules FOR SELECT TO herald_producer
    USING (producer = '' OR producer = (SELECT herald.acting_producer()));
CREATE POLICY staff_read ON herald.content_rules FOR SELECT TO herald_operator, herald_auditor USING (true);
CREATE POLICY operator_write ON herald.content_rules FOR INSERT TO herald_operator WITH CHECK (true);
CREATE POLICY operator_delete ON herald.content_rules FOR DELETE TO herald_operator USING (true);

-- +goose StatementBegin
CREATE FUNCTION herald.content_rules_audit() RETURNS trigger
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
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.content_rules_audit() FROM PUBLIC;
CREATE TRIGGER content_rules_audit AFTER INSERT OR DELETE ON herald.content_rules
    FOR EACH ROW EXECUTE FUNCTION herald.content_rules_audit();

-- held_intents: intents a 'review' rule matched, held instead of refused
-- (seed 002's pending_content_check), until an operator releases them
-- (herald.held_release: back on the intake, marked reviewed, so the
-- blocklist lets them through) or rejects them (herald.held_reject: into
-- malformed_intents as content_blocked). body is the intent as JSON, an
-- intake entry. One held intent per (producer, idempotency_key): a retry
-- finds the one held.
CREATE TABLE herald.held_intents (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    producer text NOT NULL,
    idempotency_key text NOT NULL,
    notification_type text NOT NULL DEFAULT '',
    body text NOT NULL,
    rule_id bigint NOT NULL,
    rule text NOT NULL,
    part text NOT NULL DEFAULT '',
    submitted_by text NOT NULL DEFAULT session_user,
    held_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT held_intents_key_unique UNIQUE (producer, idempotency_key),
    CONSTRAINT held_intents_body_check CHECK (octet_length(body) <= 262144 AND (body::json) IS NOT NULL)
);
CREATE INDEX held_intents_held_at_idx ON herald.held_intents (held_at, id);

-- The Go door holds an intent as its producer's login; submitted_by is the
-- login (its default: not granted). Operators read and act through the
-- functions; auditors read.
GRANT SELECT ON herald.held_intents TO herald_producer, herald_operator, herald_auditor;
GRANT INSERT (producer, idempotency_key, notification_type, body, rule_id, rule, part) ON herald.held_intents TO herald_producer;
ALTER TABLE herald.held_intents ENABLE ROW LEVEL SECURITY;
CREATE POLICY producer_own ON herald.held_intents TO herald_producer
    USING (producer = (SELECT herald.acting_producer()))
    WITH CHECK (producer = (SELECT herald.acting_producer()));
CREATE POLICY staff_read ON herald.held_intents FOR SELECT TO herald_operator, herald_auditor USING (true);

-- reviewed marks an intake entry an operator released: the intake worker
-- skips the blocklist for it (nothing else). Producers and relays insert
-- the body column only, so only herald.held_release sets it.
ALTER TABLE herald.intake ADD COLUMN reviewed boolean NOT NULL DEFAULT false;

-- held_release puts held intents back on the intake, reviewed, in the name
-- of the login that submitted them, and writes one audit row; it returns
-- each released id with its new intake entry. Ids not held (released or
-- rejected meanwhile, or unknown) are skipped: the lock of the DELETE makes
-- a release and a reject of one id race safely, one wins.
-- +goose StatementBegin
CREATE FUNCTION herald.held_release(ids bigint[], actor text, reason text)
RETURNS TABLE (held_id bigint, intake_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    h record;
    moved jsonb := '[]';
BEGIN
    IF coalesce(held_release.actor, '') = '' THEN
        RAISE EXCEPTION 'a release must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR h IN DELETE FROM herald.held_intents AS x WHERE x.id = ANY(ids) RETURNING x.id, x.body, x.submitted_by LOOP
        INSERT INTO herald.intake AS e (body, submitted_by, reviewed) VALUES (h.body, h.submitted_by, true)
        RETURNING e.id INTO intake_id;
        held_id := h.id;
        moved := moved || jsonb_build_object('held_id', held_id, 'intake_id', intake_id);
        RETURN NEXT;
    END LOOP;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (held_release.actor, 'held_release', coalesce(held_release.reason, ''),
        jsonb_build_object('held_ids', to_jsonb(ids)), jsonb_array_length(moved), jsonb_build_object('released', moved));
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.held_release(bigint[], text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.held_release(bigint[], text, text) TO herald_operator;

-- held_reject refuses held intents for good: each is recorded in
-- malformed_intents ("held:<id>", content_blocked, the rule and the
-- operator's reason), where its producer reads why, and one audit row is
-- written. It returns the ids rejected.
-- +goose StatementBegin
CREATE FUNCTION herald.held_reject(ids bigint[], actor text, reason text)
RETURNS TABLE (held_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    h record;
    gone bigint[] := '{}';
BEGIN
    IF coalesce(held_reject.actor, '') = '' THEN
        RAISE EXCEPTION 'a reject must name an actor' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR h IN DELETE FROM herald.held_intents AS x WHERE x.id = ANY(ids) RETURNING x.* LOOP
        INSERT INTO herald.malformed_intents (stream_entry_id, notification_type, producer, idempotency_key,
            failure_code, failure_message, raw_fields, recorded_at, submitted_by)
        VALUES ('held:' || h.id, h.notification_type, h.producer, h.idempotency_key, 'content_blocked',
            format('rejected after review by %s (%s): matched %s (content_blocked)', held_reject.actor,
                coalesce(nullif(held_reject.reason, ''), 'no reason given'), h.rule),
            jsonb_build_object('body', h.body), now(), h.submitted_by);
        gone := gone || h.id;
        held_id := h.id;
        RETURN NEXT;
    END LOOP;
    INSERT INTO herald.audit_log (actor, action, reason, filter, affected, details)
    VALUES (held_reject.actor, 'held_reject', coalesce(held_reject.reason, ''),
        jsonb_build_object('held_ids', to_jsonb(ids)), cardinality(gone), jsonb_build_object('rejected', to_jsonb(gone)));
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION herald.held_reject(bigint[], text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald.held_reject(bigint[], text, text) TO herald_operator;

-- +goose Down
DROP FUNCTION IF EXISTS herald.held_reject(bigint[], text, text);
DROP FUNCTION IF EXISTS herald.held_release(bigint[], text, text);
ALTER TABLE herald.intake DROP COLUMN IF EXISTS reviewed;
DROP TABLE IF EXISTS herald.held_intents;
DROP TABLE IF EXISTS herald.content_rules;
DROP FUNCTION IF EXISTS herald.content_rules_audit();

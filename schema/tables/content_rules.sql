-- herald.content_rules as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.content_rules (
    id bigint NOT NULL,
    producer text DEFAULT ''::text NOT NULL,
    kind text NOT NULL,
    pattern text NOT NULL,
    mode text DEFAULT 'refuse'::text NOT NULL,
    note text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by text DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT content_rules_kind_check CHECK ((kind = ANY (ARRAY['word'::text, 'regex'::text]))),
    CONSTRAINT content_rules_mode_check CHECK ((mode = ANY (ARRAY['refuse'::text, 'review'::text]))),
    CONSTRAINT content_rules_pattern_check CHECK ((((length(btrim(pattern)) >= 1) AND (length(btrim(pattern)) <= 1000)) AND (length(note) <= 1000)))
);

ALTER TABLE herald.content_rules ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.content_rules_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY herald.content_rules
    ADD CONSTRAINT content_rules_pkey PRIMARY KEY (id);

CREATE TRIGGER content_rules_audit AFTER INSERT OR DELETE ON herald.content_rules FOR EACH ROW EXECUTE FUNCTION herald.content_rules_audit();

ALTER TABLE herald.content_rules ENABLE ROW LEVEL SECURITY;

CREATE POLICY operator_delete ON herald.content_rules FOR DELETE TO herald_operator USING (true);

CREATE POLICY operator_write ON herald.content_rules FOR INSERT TO herald_operator WITH CHECK (true);

CREATE POLICY producer_read ON herald.content_rules FOR SELECT TO herald_producer USING (((producer = ''::text) OR (producer = ( SELECT herald.acting_producer() AS acting_producer))));

CREATE POLICY staff_read ON herald.content_rules FOR SELECT TO herald_operator, herald_auditor USING (true);

GRANT SELECT,DELETE ON TABLE herald.content_rules TO herald_operator;
GRANT SELECT ON TABLE herald.content_rules TO herald_auditor;
GRANT SELECT ON TABLE herald.content_rules TO herald_producer;

GRANT INSERT(producer) ON TABLE herald.content_rules TO herald_operator;

GRANT INSERT(kind) ON TABLE herald.content_rules TO herald_operator;

GRANT INSERT(pattern) ON TABLE herald.content_rules TO herald_operator;

GRANT INSERT(mode) ON TABLE herald.content_rules TO herald_operator;

GRANT INSERT(note) ON TABLE herald.content_rules TO herald_operator;


--
--

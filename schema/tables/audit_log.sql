-- herald.audit_log as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.audit_log (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    actor text NOT NULL,
    action text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    filter jsonb DEFAULT '{}'::jsonb NOT NULL,
    affected integer NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    login text DEFAULT SESSION_USER NOT NULL
);

ALTER TABLE herald.audit_log ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.audit_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY herald.audit_log
    ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id);

CREATE INDEX audit_log_at_idx ON herald.audit_log USING btree (at DESC);

CREATE TRIGGER audit_log_stamp BEFORE INSERT OR UPDATE ON herald.audit_log FOR EACH ROW EXECUTE FUNCTION herald.audit_log_stamp();

GRANT SELECT ON TABLE herald.audit_log TO herald_operator;
GRANT SELECT ON TABLE herald.audit_log TO herald_auditor;


--
--

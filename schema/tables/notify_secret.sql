-- herald.notify_secret as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.notify_secret (
    token text DEFAULT replace((gen_random_uuid())::text, '-'::text, ''::text) NOT NULL,
    only_row boolean DEFAULT true NOT NULL,
    CONSTRAINT notify_secret_only_row_check CHECK (only_row)
);

COMMENT ON TABLE herald.notify_secret IS 'The random token the NOTIFY topics'' names end in (herald.notify_topic): unknown to producers, so they cannot LISTEN on or NOTIFY them.';

ALTER TABLE ONLY herald.notify_secret
    ADD CONSTRAINT notify_secret_pkey PRIMARY KEY (only_row);

GRANT SELECT ON TABLE herald.notify_secret TO herald_operator;
GRANT SELECT ON TABLE herald.notify_secret TO herald_auditor;


--
--

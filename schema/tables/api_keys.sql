-- herald.api_keys as the migrations leave it. Generated from pg_dump of a
-- freshly migrated database by `task schema:tables`
-- (go test ./schema -run TestTableFiles_MatchAFreshMigration -update):
-- edit a migration, not this file.

CREATE TABLE herald.api_keys (
    id bigint NOT NULL,
    producer text NOT NULL,
    key_prefix text NOT NULL,
    key_hash bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by text DEFAULT SESSION_USER NOT NULL,
    revoked_at timestamp with time zone,
    last_used_at timestamp with time zone,
    CONSTRAINT api_keys_key_hash_check CHECK ((octet_length(key_hash) = 32)),
    CONSTRAINT api_keys_key_prefix_check CHECK ((key_prefix ~ '^[A-Za-z0-9_-]{4,32}$'::text)),
    CONSTRAINT api_keys_producer_check CHECK ((producer ~ '^[A-Za-z0-9._:-]{1,128}$'::text))
);

ALTER TABLE herald.api_keys ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME herald.api_keys_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY herald.api_keys
    ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);

ALTER TABLE ONLY herald.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

GRANT SELECT ON TABLE herald.api_keys TO herald_operator;
GRANT SELECT ON TABLE herald.api_keys TO herald_auditor;


--
--

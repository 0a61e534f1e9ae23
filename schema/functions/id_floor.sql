-- id_floor returns the least UUIDv7 text of t's millisecond. Every
-- notification id is a UUIDv7 that herald makes when it accepts the
-- intent (internal/accept, and the callback trigger), and a UUIDv7's text
-- begins with its millisecond timestamp in hex: records_pkey holds the
-- records in the order they were accepted, to the millisecond. The
-- listings, the retention runs and `herald stats`' callback counts walk
-- records_pkey, bounding accepted_at by the ids of its milliseconds, so an
-- accept writes no index entry for accepted_at.
--
-- The queries still compare accepted_at itself, so a record whose id's
-- clock (the accepting process's) and accepted_at (the database's) differ
-- is never taken for younger or older than it is: at worst a retention run
-- finds it one run later.
CREATE OR REPLACE FUNCTION herald.id_floor(t timestamptz) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (
        SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-0000-0000-000000000000'
        FROM (SELECT lpad(to_hex(greatest(floor(extract(epoch FROM t) * 1000), 0)::bigint), 12, '0') AS h) AS x
    );

COMMENT ON FUNCTION herald.id_floor(t timestamp with time zone) IS 'The least UUIDv7 text of t''s millisecond: a UUIDv7 id made before t sorts before it, one made at or after t does not.';

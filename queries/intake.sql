-- Queries of herald.intake, the SQL door: producers INSERT raw JSON, the
-- intake worker (internal/sqldoor) takes it off and accepts or refuses it.

-- name: IntakeClaimBatch :many
-- Takes the oldest entries off the intake, bounded by count and by bytes, and
-- returns them. It runs inside the intake worker's transaction: the rows stay
-- locked (FOR UPDATE) and deleted only if that transaction commits, so a
-- worker killed mid-batch loses nothing, and SKIP LOCKED lets several workers
-- drain side by side, each taking entries no other holds.
--
-- No body larger than @max_entry_bytes is ever loaded: such an entry is
-- refused as too_large whatever it holds, so only its size (octet_length,
-- read from the TOAST pointer without decompressing) and its first
-- @excerpt_chars characters (substr detoasts only that slice) come back, for
-- malformed_intents. loaded_bytes is what the row's body column costs.
--
-- submitted_by is the login that inserted the entry. trusted says whether
-- that login may submit in any producer's name: a member of herald_relay, or
-- of the owner of herald.intake (the engine's login; a superuser is a member
-- of every role). The roles are looked up by name first, so a login dropped
-- since it inserted (pg_has_role would raise an error on its name), or a
-- herald_relay role an administrator dropped, makes the entry untrusted
-- instead of stalling the intake.
--
-- The batch's transaction waits at most @lock_timeout for a lock (set here,
-- for the transaction, at no extra round trip): a producer's own open
-- transaction may hold what an entry needs (its campaign's row, an
-- idempotency key it is inserting). Entries the worker set aside for that
-- are left out: those of @skip_ids, and those inserted by @skip_logins.
--
-- locked: the oldest @max_entries entries no other worker holds, with what
-- each would load and whether its login is trusted. A CTE with FOR UPDATE is
-- always materialized, so the locking scan runs once.
-- budgeted: the running total of loaded bytes, in id order. An entry is taken
-- while the total stays within @max_batch_bytes; the first is taken whatever
-- its size, so the intake always moves. Entries locked but not taken stay in
-- the intake (their lock ends with the transaction); locked_entries, the same
-- on every row, tells the worker that more may be waiting.
WITH locked AS MATERIALIZED (
    SELECT
        id,
        octet_length(body) AS body_bytes,
        CASE WHEN octet_length(body) > @max_entry_bytes::int
            THEN octet_length(substr(body, 1, @excerpt_chars::int))
            ELSE octet_length(body)
        END AS loaded_bytes,
        coalesce((
            SELECT pg_has_role(login.oid, (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = 'herald_relay'), 'MEMBER')
                OR pg_has_role(login.oid, (SELECT relowner FROM pg_catalog.pg_class WHERE oid = 'herald.intake'::regclass), 'MEMBER')
            FROM pg_catalog.pg_roles AS login
            WHERE login.rolname = intake.submitted_by
        ), false) AS trusted
    FROM herald.intake
    WHERE id <> ALL (@skip_ids::bigint[])
        AND submitted_by <> ALL (@skip_logins::text[])
        AND (SELECT set_config('lock_timeout', @lock_timeout::text, true)) IS NOT NULL
    ORDER BY id
    LIMIT @max_entries
    FOR UPDATE SKIP LOCKED
),
budgeted AS (
    SELECT
        id,
        body_bytes,
        loaded_bytes,
        trusted,
        row_number() OVER (ORDER BY id) AS position,
        sum(loaded_bytes) OVER (ORDER BY id) AS loaded_through,
        count(*) OVER () AS locked_entries
    FROM locked
)
DELETE FROM herald.intake AS i
USING budgeted AS b
WHERE i.id = b.id
    AND (b.position = 1 OR b.loaded_through <= @max_batch_bytes::bigint)
RETURNING
    i.id,
    (CASE WHEN b.body_bytes > @max_entry_bytes::int
        THEN substr(i.body, 1, @excerpt_chars::int)
        ELSE i.body
    END)::text AS body,
    b.body_bytes::int AS body_bytes,
    b.loaded_bytes::int AS loaded_bytes,
    b.locked_entries::int AS locked_entries,
    i.submitted_by,
    b.trusted::boolean AS trusted,
    i.reviewed;

-- name: IntakeTakeByID :many
-- Takes one named entry off the intake, inside the caller's transaction: the
-- worker's way to set aside an entry the database refused. Returns nothing
-- if another worker settled it meanwhile. Like IntakeClaimBatch, it loads
-- only the first @excerpt_chars characters of a body over @max_entry_bytes.
DELETE FROM herald.intake
WHERE id = @id
RETURNING
    id,
    (CASE WHEN octet_length(body) > @max_entry_bytes::int
        THEN substr(body, 1, @excerpt_chars::int)
        ELSE body
    END)::text AS body,
    octet_length(body) AS body_bytes,
    submitted_by;

-- name: IntakeInsert :exec
-- Puts one intent on the intake as the calling login (submitted_by is its
-- default): the Go client's way to have an intent a review rule matched
-- held by the engine, which checks it again and holds it (a producer's
-- login cannot write held_intents). A producer holds INSERT on body only,
-- so nothing is returned.
INSERT INTO herald.intake (body) VALUES (@body);

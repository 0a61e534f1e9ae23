-- Queries about no herald table: the database server itself.

-- name: DatabaseNow :one
-- The database's clock: a replay's upper bound (until) and the stats' window
-- are taken from it, not from the operator's machine, because dead_letters
-- and routes are stamped with it.
SELECT now()::timestamptz AS now;

-- name: LoginActsForAPIKeys :one
-- Whether the connecting login may serve the HTTP API: a member of
-- herald_api (inheriting it) that row-level security holds, so neither a
-- superuser, nor a role with BYPASSRLS, nor the schema's owner.
SELECT (
    pg_has_role(session_user, 'herald_api', 'USAGE')
    AND NOT coalesce((SELECT r.rolsuper OR r.rolbypassrls FROM pg_catalog.pg_roles r WHERE r.rolname = session_user), true)
    AND NOT pg_has_role(session_user, (SELECT n.nspowner FROM pg_catalog.pg_namespace n WHERE n.nspname = 'herald'), 'MEMBER')
)::boolean AS ok;

-- name: SessionUser :one
-- The login of the session: whose templates `herald templates apply`
-- publishes when a file names no producer.
SELECT session_user::text AS login;

-- name: NotifyTopic :one
-- The name of the NOTIFY topic @base (wake.RoutesTopic and the like): the
-- base, an underscore and the database's secret (herald.notify_secret),
-- which only the engine's login and staff may read. What the engine
-- LISTENs on.
SELECT herald.notify_topic(@base::text)::text AS topic;

-- name: LockHolders :one
-- Who holds a lock on any of @rels right now, other than the caller's own connection: a
-- line naming each one's login, pid, lock mode and relation, and how long
-- its transaction has been open when the caller may see that. What an
-- action that gave up on a lock says about who held it.
SELECT herald.lock_holders((@rels::text[])::regclass[])::text AS holders;

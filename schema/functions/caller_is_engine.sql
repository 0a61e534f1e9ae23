-- caller_is_engine says whether the session's login is the engine's: a
-- member of the schema's owner. The cancels' `at` (the time a cancel
-- takes effect: canceled_at, finished_at, which claimed routes count as
-- stale, and the campaign's cancel_requested_at) is the engine's to
-- inject, for its tests; anyone else's cancel happens now (a producer's
-- `at` of 1999 or 'infinity' would file its routes as finished long ago
-- or never). The audit row is dated by audit_log_stamp either way.
CREATE OR REPLACE FUNCTION herald.caller_is_engine() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'herald'), 'MEMBER')
$$;

REVOKE ALL ON FUNCTION herald.caller_is_engine() FROM PUBLIC;

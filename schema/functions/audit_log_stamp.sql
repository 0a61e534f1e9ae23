-- Audit time is the database's clock: the stamp that names the login also
-- dates the row, whatever time its writer gave.
CREATE OR REPLACE FUNCTION herald.audit_log_stamp() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.login := session_user;
    NEW.at := now();
    RETURN NEW;
END;
$$;

REVOKE ALL ON FUNCTION herald.audit_log_stamp() FROM PUBLIC;

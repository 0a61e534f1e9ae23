-- routes_address_ok says whether a route's recipient has its channel's
-- shape: a "user:<id>" reference, resolved through the directory at
-- delivery, or a direct address the dispatcher hands to the channel as it
-- is (E.164 phone, an address with one domain, an absolute http(s) URL).
-- IMMUTABLE and inlinable SQL: the policy evaluates it as an expression.
CREATE OR REPLACE FUNCTION herald.routes_address_ok(channel text, recipient_ref text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT octet_length(recipient_ref) <= 2100 AND (
        (starts_with(recipient_ref, 'user:') AND length(recipient_ref) > 5)
        OR CASE channel
            WHEN 'sms' THEN recipient_ref ~ '^\+[1-9][0-9]{6,14}$'
            WHEN 'email' THEN recipient_ref ~ '^[^[:space:][:cntrl:]]+@[^@[:space:][:cntrl:]]+$'
            WHEN 'webhook' THEN recipient_ref ~ '^https?://[^[:space:][:cntrl:]/?#@]+'
            ELSE false
        END)
$$;

REVOKE ALL ON FUNCTION herald.routes_address_ok(channel text, recipient_ref text) FROM PUBLIC;
GRANT ALL ON FUNCTION herald.routes_address_ok(channel text, recipient_ref text) TO herald_producer;

-- +goose Up
-- An operator finds notifications by their recipient: a phone number, an
-- e-mail address, a webhook URL or a user ref ("user:<id>"), as
-- recipient_ref stores it. Both indexes lead with recipient_ref and then
-- created_at, so the newest N routes (or dead letters) of one recipient
-- can be read newest first and the read stopped at N, however many the
-- recipient has (RouteListByRecipient, queries/routes.sql).
--
-- The key is recipient_ref itself, not a narrower expression such as
-- hashtext(recipient_ref) (about 40% of the size): a producer's login reads
-- routes through row-level security, and Postgres uses a condition as an
-- index condition ahead of the security policy only if its functions are
-- leakproof. texteq is; hashtext is not, so a producer's search would scan
-- every partition.
--
-- Created on the partitioned parent, so every partition (routes_live and
-- each routes_fYYYYMMDD week, and every week made later) gets its own. A
-- partitioned parent cannot be indexed CONCURRENTLY, and goose runs this
-- in a transaction, holding each partition's SHARE lock (accepts wait)
-- while its index builds. On a large history, build the same index on
-- each partition, and dead_letters_recipient_idx, CONCURRENTLY before
-- migrating: the first statement then attaches the partitions' indexes
-- instead of building, and the second finds its index made.
CREATE INDEX IF NOT EXISTS routes_recipient_idx ON herald.routes (recipient_ref, created_at);

CREATE INDEX IF NOT EXISTS dead_letters_recipient_idx ON herald.dead_letters (recipient_ref, created_at);

-- +goose Down
DROP INDEX herald.dead_letters_recipient_idx;
DROP INDEX herald.routes_recipient_idx;

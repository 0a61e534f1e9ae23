-- Queries of herald.idempotency_keys (migration 00026) that maintenance
-- runs: the sweep that deletes expired keys. Accepts write the keys
-- (records.sql's RecordInsertMany) and read them (RecordGetByKeys).

-- name: IdempotencyKeyBlocks :one
-- The keys' table's length in blocks: where a sweep that starts now ends.
-- Keys inserted behind the sweep (in space freed before it) wait for the
-- next one.
SELECT (pg_relation_size('herald.idempotency_keys'::regclass)
    / current_setting('block_size')::bigint)::bigint AS blocks;

-- name: IdempotencyKeyDeleteExpired :execrows
-- Deletes the keys of blocks [@from_block, @to_block) whose window ended
-- at or before @now, and returns how many it deleted. A TID range scan
-- reads just those blocks, in order, with no index: a sweep that goes over
-- the table in ranges reads each block once, whatever the keys' order
-- (inserts reuse the space that sweeps and vacuum free, so a block holds
-- keys of any age). An accept that took an expired key over (released and
-- inserted again) wrote a new row with a new window, which is left.
DELETE FROM herald.idempotency_keys k
WHERE k.ctid >= format('(%s,0)', @from_block::bigint)::tid
    AND k.ctid < format('(%s,0)', @to_block::bigint)::tid
    AND k.expires_at <= @now::timestamptz;

-- name: IdempotencyKeyFind :one
-- The notification that holds a producer's idempotency key, along the
-- table's primary key, for `herald find`: keys are held for their whole
-- window, so a support ticket's key finds its notification as long as the
-- producer could not reuse it.
SELECT k.notification_id, k.expires_at
FROM herald.idempotency_keys k
WHERE k.producer = @producer AND k.idempotency_key = @idempotency_key;

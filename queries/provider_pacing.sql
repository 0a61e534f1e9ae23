-- Queries of herald.provider_pacing: a capped provider's send slots,
-- shared by every serve process (migration 00007).

-- name: ProviderPacingReserve :one
-- Takes @advance_seconds of one provider's send time (n slots of 1/cap
-- seconds each) from the later of its next free slot and now, in one
-- statement: the row
-- lock serializes the processes that pace the same provider, and no one
-- waits longer than another's UPDATE of one row. Returns the first slot
-- and the database's clock, so the caller waits (first_slot - now) on its
-- own monotonic clock whatever the clocks' skew.
UPDATE herald.provider_pacing AS p
SET next_slot_at = greatest(p.next_slot_at, coalesce(sqlc.narg('now')::timestamptz, now()))
    + make_interval(secs => @advance_seconds::float8)
WHERE p.provider = @provider::text
RETURNING (p.next_slot_at - make_interval(secs => @advance_seconds::float8))::timestamptz AS first_slot,
    coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS db_now;

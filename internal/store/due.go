package store

import "time"

// DueAt is when the route is next due, as readers show it: for a claimed
// route its lease's end (an expired lease makes it due again), for a
// pending or failed one next_attempt_at, nil for a finished one. A claim
// leaves next_attempt_at, the route's place in routes_due_idx, at its old
// due time and writes the lease to lease_until.
func (r HeraldRoute) DueAt() *time.Time {
	if r.Status == "claimed" && r.LeaseUntil != nil {
		return r.LeaseUntil
	}
	return r.NextAttemptAt
}

package maintenance_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
)

func TestDeleteFinished_OnlyPastBothWindows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	finished := t0.Add(time.Hour)
	b.seed(t,
		seedSpec{id: "published", window: day, statuses: []string{"published", "published"}, changed: finished},
		seedSpec{id: "skipped-canceled", window: day, statuses: []string{"skipped", "canceled", "published"}, changed: finished},
		seedSpec{id: "window-open", window: 30 * day, statuses: []string{"published"}, changed: finished},
		seedSpec{id: "pending", window: day, statuses: []string{"published", "pending"}, changed: finished},
		seedSpec{id: "claimed", window: day, statuses: []string{"claimed"}, changed: finished},
		seedSpec{id: "failed", window: day, statuses: []string{"failed"}, changed: finished},
		seedSpec{id: "dead", window: day, statuses: []string{"published", "dead_letter"}, changed: finished},
		seedSpec{id: "recent", window: day, statuses: []string{"published"}, changed: t0.Add(9 * day)},
	)

	// Ten days on, with a week's retention: the idempotency window of
	// "window-open" (30 days) is still open, "recent" finished two days ago.
	m := b.newMaintenance(t, t0.Add(10*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	require.Equal(t, []string{"claimed", "dead", "failed", "pending", "recent", "window-open"}, b.remaining(t))
	require.Equal(t, 1, b.count(t, "dead_letters"), "dead letters are kept without dead-letter retention")
	require.Equal(t, 8, b.count(t, "routes"), "the routes of the deleted records go with them, the rest stay")

	// Running again deletes nothing more.
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	// Thirty-one days on, the window of "window-open" is over and "recent"
	// finished 22 days ago; the rest are still not finished or dead.
	m = b.newMaintenance(t, t0.Add(31*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	require.Equal(t, []string{"claimed", "dead", "failed", "pending"}, b.remaining(t))

	require.Equal(t, 3.0, testutil.ToFloat64(b.metrics.MaintenanceRuns.WithLabelValues(maintenance.JobFinishedRetention, "ok")))
	require.Equal(t, 4.0, testutil.ToFloat64(b.metrics.MaintenanceRows.WithLabelValues(maintenance.JobFinishedRetention)))
}

func TestDeleteFinished_TakesLeftoverDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t,
		seedSpec{id: "finished", window: day, statuses: []string{"dead_letter", "published"}, changed: t0},
		seedSpec{id: "dead", window: day, statuses: []string{"dead_letter"}, changed: t0},
	)
	// A route of "finished" was dead-lettered, then published, its dead
	// letter left behind (replay deletes it; an operator by hand may not).
	// No foreign key cascades from routes to dead letters any more
	//: retention deletes them itself.
	b.setRouteStatus(t, "finished", "r0", "published", t0)
	require.Equal(t, 2, b.count(t, "dead_letters"))

	m := b.newMaintenance(t, t0.Add(10*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []string{"dead"}, b.remaining(t))
	require.Equal(t, 1, b.count(t, "dead_letters"), "the dead letter of the record deleted went with it, the other stays")
}

func TestDeleteFinished_NeverFreesKeyEarly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// An id of the week before t0's: the runs below make t0's week and
	// later ones, so this record is walked row by row
	// (a week's records wait for the week, TestRecordWeeks...).
	b.seed(t, seedSpec{rawID: idPrefixAt(t0.Add(-7*day)) + "6e31", window: 3 * day, statuses: []string{"published"}, changed: t0})

	// Retention of one second, but the key stays reserved three days.
	for _, now := range []time.Time{t0.Add(time.Hour), t0.Add(3*day - time.Second)} {
		m := b.newMaintenance(t, now, maintenance.Config{FinishedRetention: time.Second})
		n, err := m.DeleteFinished(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "deleted at %s", now)
	}
	m := b.newMaintenance(t, t0.Add(3*day), maintenance.Config{FinishedRetention: time.Second})
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Zero(t, b.count(t, "routes"), "routes go with their record")
}

func TestDeleteFinished_WorksInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Seven finished notifications interleaved with five that must stay,
	// all of the same age: each batch continues where the last one ended.
	var specs []seedSpec
	var kept []string
	for i := range 12 {
		status := "published"
		if i%2 == 1 && i < 10 {
			status = "pending"
			kept = append(kept, fmt.Sprintf("n%02d", i))
		}
		specs = append(specs, seedSpec{id: fmt.Sprintf("n%02d", i), window: day, statuses: []string{status}, changed: t0})
	}
	b.seed(t, specs...)

	m := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{BatchSize: 2})
	n, err := m.DeleteFinished(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(7), n)
	require.Equal(t, kept, b.remaining(t))
}

// A run cut short leaves where it stood to the next run, which goes on from
// there instead of reading the records that stay (dead letters) again; a run
// that finishes leaves nothing, and the next one is a whole pass from the
// oldest record.
func TestDeleteFinished_ResumesCutShortRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var specs []seedSpec
	for i := range 10 {
		status := "published"
		if i < 4 {
			status = "dead_letter"
		}
		specs = append(specs, seedSpec{id: fmt.Sprintf("n%02d", i), window: day, statuses: []string{status}, changed: t0})
	}
	b.seed(t, specs...)
	m := b.newMaintenance(t, t0.Add(30*day), maintenance.Config{BatchSize: 2})
	// The weeks ahead made first: making one waits for routes_live's lock.
	_, _, err := m.Weeks(ctx)
	require.NoError(t, err)

	// The second batch (n06, n07) waits on a lock held on n07's route; the
	// run is canceled there, after the first batch (n04, n05) committed.
	lock, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer lock.Rollback(ctx) // on a failure below, or closing the pool waits for it
	_, err = lock.Exec(ctx, `SELECT 1 FROM herald.routes WHERE notification_id = $1 FOR UPDATE`, nid("n07"))
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := m.DeleteFinished(rctx)
		done <- result{n, err}
	}()
	waiting := func() int {
		var n int
		// This database's backends only: pg_locks is the whole cluster's,
		// where other packages' tests wait on locks of their own (a row
		// lock's wait is on a transaction id, with no database to filter).
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return waiting() > 0 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	r := <-done
	require.Error(t, r.err)
	require.Equal(t, int64(2), r.n)
	// The cancel reaches the server on a connection of its own: the lock
	// goes only once the waiting statement has been canceled.
	require.Eventually(t, func() bool { return waiting() == 0 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, lock.Rollback(ctx))
	require.Equal(t, []string{"n00", "n01", "n02", "n03", "n06", "n07", "n08", "n09"}, b.remaining(t))

	// n01's route is replayed and published: deletable, but behind where the
	// cut-short run stood. The next run goes on from there and leaves it.
	b.setRouteStatus(t, "n01", "r0", "published", t0)
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(4), n)
	require.Equal(t, []string{"n00", "n01", "n02", "n03"}, b.remaining(t))

	// That run finished: the next is a whole pass and finds n01.
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []string{"n00", "n02", "n03"}, b.remaining(t))
}

// herald.id_floor(t) is the least UUIDv7 text of t's millisecond: ids made
// in earlier milliseconds sort before it, ids of t's millisecond and later
// do not. Retention's cut-off and the callback counts rest on it.
func TestIDFloor_BoundsAMillisecond(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// The id text of a UUIDv7 made at ms with the given 74 random bits'
	// extremes (version 7, variant 10).
	v7 := func(ms int64, low bool) string {
		if low {
			return idPrefixAt(time.UnixMilli(ms)) + "7000-8000-000000000000"
		}
		return idPrefixAt(time.UnixMilli(ms)) + "7fff-bfff-ffffffffffff"
	}
	floor := func(at time.Time) string {
		var f string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT herald.id_floor($1)`, at).Scan(&f))
		return f
	}
	at := time.Date(2026, 11, 25, 1, 2, 3, 456_789_000, time.UTC)
	ms := at.UnixMilli()
	f := floor(at)
	require.Equal(t, idPrefixAt(at)+"0000-0000-000000000000", f)
	require.Less(t, v7(ms-1, false), f, "the last id of the millisecond before")
	require.LessOrEqual(t, f, v7(ms, true), "the first id of t's millisecond")
	require.Less(t, v7(ms, false), floor(at.Add(time.Millisecond)), "t's last id, below the next millisecond's floor")
	require.Equal(t, f, floor(at.Truncate(time.Millisecond)), "the same floor for the whole millisecond")
	// Go's own UUIDv7s, made now, sort between the floors around them.
	before := time.Now()
	id := uuid.Must(uuid.NewV7()).String()
	after := time.Now()
	require.LessOrEqual(t, floor(before), id)
	require.Less(t, id, floor(after.Add(time.Millisecond)))
	// Before 1970 (Go's zero time, say) it is the least id of all.
	require.Equal(t, "00000000-0000-0000-0000-000000000000", floor(time.Time{}))
	var null *string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT herald.id_floor(NULL)`).Scan(&null))
	require.Nil(t, null)
}

// A record's id and accepted_at come from two clocks (the accepting
// process's and the database's): retention deletes a record only when both
// say it is past the cut-off, so a record whose id runs ahead of its
// acceptance or behind it is deleted late, never early.
func TestDeleteFinished_WaitsForIDAndAcceptedAt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t,
		seedSpec{id: "id-older", window: day, statuses: []string{"published"}, changed: t0},
		seedSpec{id: "plain", window: day, statuses: []string{"published"}, changed: t0},
	)
	// id-older was accepted five days after its id's time.
	_, err := b.pool.Exec(ctx, `UPDATE herald.records SET accepted_at = $2 WHERE notification_id = $1`,
		nid("id-older"), t0.Add(5*day))
	require.NoError(t, err)

	// A week's retention ten days on: the cut-off is t0 + 3 days.
	m := b.newMaintenance(t, t0.Add(10*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []string{"id-older"}, b.remaining(t), "accepted after the cut-off, whatever its id says")

	m = b.newMaintenance(t, t0.Add(13*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Empty(t, b.remaining(t))

	// A record whose id is younger than its accepted_at: past the cut-off
	// by accepted_at, not by id, so kept until its id is too. Seeded in a
	// database of its own where no week of its id was made yet (the runs
	// above made the weeks of their days and two ahead, migration 00027):
	// it is walked row by row.
	b = setup(t)
	ahead := idPrefixAt(t0.Add(20*day)) + hex.EncodeToString([]byte("id-younger"))
	b.seed(t, seedSpec{rawID: ahead, window: day, statuses: []string{"published"}, changed: t0})
	m = b.newMaintenance(t, t0.Add(25*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the id is after the cut-off (t0 + 18 days)")
	m = b.newMaintenance(t, t0.Add(28*day), maintenance.Config{FinishedRetention: 7 * day})
	n, err = m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
}

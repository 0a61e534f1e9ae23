package dispatch

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/store"
)

// The claim changes no column an index holds: Postgres
// writes it as a HOT update, and the route keeps its place in
// routes_due_idx. Read from the claim's own transaction, whose counters
// pg_stat_xact_user_tables shows before anything is flushed.
func TestClaim_IsHOTUpdateInDueIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	specs := make([]routeSpec, 20)
	for i := range specs {
		specs[i] = routeSpec{channel: channel.SMS, ref: "+33612345678"}
	}
	b.insert(t, specs...)
	ctx := context.Background()
	before := dueEntries(t, b)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	now := time.Now().Add(time.Second)
	rows, err := b.q.RouteClaimDue(ctx, tx, store.RouteClaimDueParams{Now: &now, LeaseSeconds: 60, Max: 20, Channel: channel.SMS})
	require.NoError(t, err)
	require.Len(t, rows, 20)
	var upd, hot int64
	require.NoError(t, tx.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables
		WHERE relid = 'herald.routes_live'::regclass`).Scan(&upd, &hot))
	require.EqualValues(t, 20, upd)
	require.EqualValues(t, 20, hot, "every claim is a HOT update")
	for _, r := range rows {
		require.WithinDuration(t, now.Add(60*time.Second), *r.LeaseUntil, time.Millisecond)
	}
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, before, dueEntries(t, b), "the claimed routes keep their place in the due index")
}

// dueEntries counts routes_due_idx's entries through an index-only scan.
func dueEntries(t *testing.T, b *testBundle) int64 {
	t.Helper()
	var n int64
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM herald.routes WHERE next_attempt_at IS NOT NULL`).Scan(&n))
	return n
}

// A route in flight sits at the head of the due index with its old due
// time; the claim steps over it while its lease runs and takes the next
// route behind it, and the next-due probe reads its lease's end rather than
// its past due time (which would keep an idle dispatcher polling).
func TestLease_InFlightSteppedOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}}})
	first := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})[0]
	now := time.Now().Add(time.Second)

	c := claim(t, d, channel.SMS, 10, now)
	require.Len(t, c, 1)
	second := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345679"})[0]
	c2 := claim(t, d, channel.SMS, 10, now.Add(time.Second))
	require.Len(t, c2, 1, "the route behind the one in flight")
	require.Equal(t, second.routeID, c2[0].RouteID)

	at := now.Add(2 * time.Second)
	secs, err := d.q.RouteNextDue(context.Background(), b.pool, store.RouteNextDueParams{Now: &at, Channel: channel.SMS})
	require.NoError(t, err)
	require.InDelta(t, 58, secs, 0.01, "the first lease's end, 60s after its claim")

	// The lease ends: the first route is due again, and the probe says so.
	late := now.Add(60500 * time.Millisecond) // the second lease runs to now+61s
	secs, err = d.q.RouteNextDue(context.Background(), b.pool, store.RouteNextDueParams{Now: &late, Channel: channel.SMS})
	require.NoError(t, err)
	require.Negative(t, secs)
	again := claim(t, d, channel.SMS, 10, late)
	require.Len(t, again, 1)
	require.Equal(t, first.routeID, again[0].RouteID)
	require.EqualValues(t, 2, again[0].AttemptCount)

	// Both complete; nothing is left to schedule.
	completeClaim(d, again[0], "published")
	completeClaim(d, c2[0], "published")
	secs, err = d.q.RouteNextDue(context.Background(), b.pool, store.RouteNextDueParams{Now: &late, Channel: channel.SMS})
	require.NoError(t, err)
	require.True(t, math.IsInf(secs, 1), "nothing scheduled: %v", secs)
	r := b.route(t, first)
	require.Nil(t, r.LeaseUntil, "a completion clears the lease")
	require.Nil(t, r.NextAttemptAt)
}

// The backlog metric's lag is how late the most overdue route not in
// flight is: a route claimed long after its due time adds to the backlog
// but not to the lag until its lease runs out.
func TestBacklog_LagSkipsLeasedRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}}})
	b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})
	now := time.Now().Add(5 * time.Minute) // five minutes overdue
	require.Len(t, claim(t, d, channel.SMS, 10, now), 1)

	lag := func(at time.Time) (int64, float64) {
		rows, err := b.q.RouteBacklogByChannel(context.Background(), b.pool, &at)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		return rows[0].Backlog, rows[0].LagSeconds
	}
	n, l := lag(now.Add(time.Second))
	require.EqualValues(t, 1, n)
	require.Zero(t, l, "in flight, not late")
	n, l = lag(now.Add(70 * time.Second))
	require.EqualValues(t, 1, n)
	require.InDelta(t, 10, l, 0.5, "late since its lease ended")

	at := now.Add(time.Second)
	st, err := b.q.RouteBacklogByStatus(context.Background(), b.pool, &at)
	require.NoError(t, err)
	require.Len(t, st, 1)
	require.Equal(t, "claimed", st[0].Status)
	require.Zero(t, st[0].Due)
}

// A route claimed before migration 00019 has its lease in next_attempt_at
// and no lease_until: it is not taken again while that lease runs, and is
// once it has ended. A route canceled while claimed keeps a stale
// lease_until, which is not read once it is due again in another status.
func TestLease_ReadByStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.newDispatcher(t, &Config{Channels: map[string]ChannelConfig{channel.SMS: {Deliverer: channel.Discard}}})
	ks := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"}, routeSpec{channel: channel.SMS, ref: "+33612345679"})
	ctx := context.Background()
	now := time.Now().Add(time.Second)
	_, err := b.pool.Exec(ctx, `UPDATE herald.routes SET status = 'claimed', attempt_count = 1,
		next_attempt_at = $2::timestamptz + interval '60 seconds', lease_until = NULL WHERE notification_id = $1`,
		ks[0].notificationID, now)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE herald.routes SET status = 'pending',
		lease_until = $2::timestamptz + interval '1 hour' WHERE notification_id = $1`, ks[1].notificationID, now)
	require.NoError(t, err)

	c := claim(t, d, channel.SMS, 10, now)
	require.Len(t, c, 1, "the pending route, whatever its stale lease")
	require.Equal(t, ks[1].routeID, c[0].RouteID)
	completeClaim(d, c[0], "published")
	c = claim(t, d, channel.SMS, 10, now.Add(61*time.Second))
	require.Len(t, c, 1, "the old-style lease has ended")
	require.Equal(t, ks[0].routeID, c[0].RouteID)
	require.EqualValues(t, 2, c[0].AttemptCount)
}

// complete writes one completion of a claimed route by its tuple id, as
// the completer does.
func complete(ctx context.Context, b *testBundle, r store.RouteClaimDueRow, status string) ([]store.RouteCompleteManyRow, error) {
	return b.q.RouteCompleteMany(ctx, b.pool, store.RouteCompleteManyParams{
		NotificationIds: []string{r.NotificationID}, RouteIds: []string{r.RouteID},
		RouteTids: []pgtype.TID{r.RouteTid}, Attempts: []int32{r.AttemptCount},
		LeaseUntils: []time.Time{*r.LeaseUntil}, Statuses: []string{status}, DelaySeconds: []float64{30},
		Classifications: []string{""}, Messages: []string{""}, RecoveryHints: []string{""},
		MaxAttempts: []int32{5}, ResolvedEmails: []string{""}, ResolvedLocales: []string{""},
		ProviderMessageIds: []string{""}, Providers: []string{""}, ReceiptKeys: []string{""},
	})
}

// partitionOf names the partition of herald.routes that holds the route.
func partitionOf(t *testing.T, b *testBundle, k routeKey) string {
	t.Helper()
	var p string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM herald.routes
		WHERE notification_id = $1 AND route_id = $2`, k.notificationID, k.routeID).Scan(&p))
	return p
}

// A route that finishes moves to the partition of the week it finished
// in, with finished_at set; a failed one stays in
// routes_live, due again.
func TestComplete_FinishedMovesToItsWeek(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	keys := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"},
		routeSpec{channel: channel.SMS, ref: "+33612345679"}, routeSpec{channel: channel.SMS, ref: "+33612345670"})
	for _, k := range keys {
		require.Equal(t, "herald.routes_live", partitionOf(t, b, k), "a new route is live")
	}
	rows, err := b.q.RouteClaimDue(ctx, b.pool, store.RouteClaimDueParams{LeaseSeconds: 60, Max: 3, Channel: channel.SMS})
	require.NoError(t, err)
	require.Len(t, rows, 3)
	var week string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT 'herald.routes_f' || to_char(date_trunc('week', now() AT TIME ZONE 'UTC'), 'YYYYMMDD')`).Scan(&week))
	want := map[string]string{}
	for i, status := range []string{"published", "skipped", "failed"} {
		written, err := complete(ctx, b, rows[i], status)
		require.NoError(t, err)
		require.Len(t, written, 1, status)
		k := routeKey{rows[i].NotificationID, rows[i].RouteID}
		want[status] = partitionOf(t, b, k)
		r := b.route(t, k)
		require.Equal(t, status, r.Status)
		require.Equal(t, status != "failed", r.FinishedAt != nil, status)
	}
	require.Equal(t, map[string]string{"published": week, "skipped": week, "failed": "herald.routes_live"}, want)
}

// A completion that waits for a route a cancel is moving (to its finished
// week) fails with a serialization failure once the cancel commits: in
// read committed, Postgres cannot follow a row to another partition. It
// wrote nothing; written again, it is fenced out, and the route stays
// canceled. The completer and the claim run such a statement again at
// once (raced).
func TestComplete_RacedCancelIsFencedOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	k := b.insert(t, routeSpec{channel: channel.SMS, ref: "+33612345678"})[0]
	rows, err := b.q.RouteClaimDue(ctx, b.pool, store.RouteClaimDueParams{LeaseSeconds: 60, Max: 1, Channel: channel.SMS})
	require.NoError(t, err)
	require.Len(t, rows, 1)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT * FROM herald.notification_cancel($1, 'ops', 'test')`, k.notificationID)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := complete(ctx, b, rows[0], "published")
		done <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		return n > 0
	}, 10*time.Second, 5*time.Millisecond, "the completion waits for the cancel's row lock")
	require.NoError(t, tx.Commit(ctx))
	err = <-done
	require.Error(t, err)
	require.True(t, raced(err), "%v", err)

	written, err := complete(ctx, b, rows[0], "published")
	require.NoError(t, err)
	require.Empty(t, written, "fenced out")
	r := b.route(t, k)
	require.Equal(t, "canceled", r.Status)
	require.NotNil(t, r.FinishedAt)
	require.NotEqual(t, "herald.routes_live", partitionOf(t, b, k))
}

package maintenance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/store"
)

// finishRoute makes a route of the notification seeded as name terminal
// at `at`, as a completion does: finished_at set, which
// moves it to the partition of at's week.
func (b *testBundle) finishRoute(t *testing.T, name, routeID, status string, at time.Time) error {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `
		UPDATE herald.routes SET status = $3::text, updated_at = $4, next_attempt_at = NULL,
			published_at = CASE WHEN $3 = 'published' THEN $4::timestamptz END,
			skipped_at = CASE WHEN $3 = 'skipped' THEN $4::timestamptz END,
			finished_at = $4
		WHERE notification_id = $1 AND route_id = $2`, nid(name), routeID, status, at)
	return err
}

// weeks lists routes' finished-week partitions, by their Monday.
func (b *testBundle) weeks(t *testing.T) []string {
	t.Helper()
	rows, err := store.New().RouteWeeksList(context.Background(), b.pool)
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, r.Week)
	}
	return out
}

// Finished routes go with their week: maintenance makes
// the weeks two ahead, drops whole the weeks that ended more than the
// retention ago, and then deletes the records left with no route; a
// record with a route of a week not dropped yet, or a dead letter, stays.
// A route that would finish in a week with no partition is refused, and
// changes nothing.
func TestWeeks_MadeAheadDroppedWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := time.Date(2027, 3, 10, 12, 0, 0, 0, time.UTC) // a Wednesday
	m := b.newMaintenance(t, now, maintenance.Config{})
	made, dropped, err := m.Weeks(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, made, "the weeks from 8, 15 and 22 March")
	require.Zero(t, dropped)
	require.Subset(t, b.weeks(t), []string{"20270308", "20270315", "20270322"})
	made, _, err = m.Weeks(ctx)
	require.NoError(t, err)
	require.Zero(t, made, "made once")

	// Older weeks, as maintenance made them then.
	_, err = store.New().RouteWeeksCreate(ctx, b.pool, store.RouteWeeksCreateParams{
		FirstDay:    pgtype.Date{Time: now.Add(-30 * day), Valid: true},
		LastDay:     pgtype.Date{Time: now, Valid: true},
		WaitSeconds: 1,
	})
	require.NoError(t, err)
	b.seed(t,
		seedSpec{id: "old", window: day, statuses: []string{"pending", "pending"}, changed: t0},
		seedSpec{id: "recent", window: day, statuses: []string{"pending"}, changed: t0},
		seedSpec{id: "dead", window: day, statuses: []string{"pending", "dead_letter"}, changed: t0},
		seedSpec{id: "open", window: 2000 * day, statuses: []string{"pending"}, changed: t0},
	)
	// 18 February's week ended on 22 February, before the cut-off (3
	// March); 5 March's ends on 8 March, after it.
	require.NoError(t, b.finishRoute(t, "old", "r0", "published", now.Add(-20*day)))
	require.NoError(t, b.finishRoute(t, "old", "r1", "skipped", now.Add(-20*day)))
	require.NoError(t, b.finishRoute(t, "recent", "r0", "published", now.Add(-5*day)))
	require.NoError(t, b.finishRoute(t, "dead", "r0", "published", now.Add(-20*day)))
	require.NoError(t, b.finishRoute(t, "open", "r0", "published", now.Add(-20*day)))
	// No partition for a week past those made.
	err = b.finishRoute(t, "recent", "r0", "published", now.Add(60*day))
	requireSQLState(t, err, "23514")
	var finished time.Time
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT finished_at FROM herald.routes WHERE notification_id = $1`,
		nid("recent")).Scan(&finished))
	require.WithinDuration(t, now.Add(-5*day), finished, 0, "the refused change changed nothing")

	n, err := m.DeleteFinished(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "old: its routes went with their week")
	require.Equal(t, []string{"dead", "open", "recent"}, b.remaining(t))
	require.NotContains(t, b.weeks(t), "20270215")
	require.Contains(t, b.weeks(t), "20270301")
	var routes []string
	rows, err := b.pool.Query(ctx, `SELECT notification_id || '/' || route_id FROM herald.routes ORDER BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		id, r, _ := strings.Cut(s, "/")
		routes = append(routes, name(t, id)+"/"+r)
	}
	require.NoError(t, rows.Err())
	// dead's published route went with its week; its dead letter, in
	// routes_live, keeps the record. open's went too: its record waits for
	// its idempotency window.
	require.Equal(t, []string{"dead/r1", "recent/r0"}, routes)
	require.Equal(t, 1, b.count(t, "dead_letters"))
}

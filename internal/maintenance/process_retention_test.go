package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/store"
)

// The rows of serve processes stopped, or silent, for longer than a day
// go; those of running processes, however old, and of processes gone for
// less than a day stay.
func TestDeleteGoneProcesses_DeletesOnlyThoseGoneADay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	q := store.New()
	for _, id := range []string{"running", "stopped-long-ago", "stopped-lately", "silent-long", "silent-lately"} {
		require.NoError(t, q.ServeProcessRegister(ctx, b.pool, store.ServeProcessRegisterParams{
			ID: id, Host: "h", Pid: 1, Version: "test", StartedAt: t0.Add(-3 * day), IntervalSeconds: 5, Ready: true, Parts: []byte(`{}`)}))
	}
	require.NoError(t, q.ServeProcessStop(ctx, b.pool, store.ServeProcessStopParams{ID: "stopped-long-ago"}))
	require.NoError(t, q.ServeProcessStop(ctx, b.pool, store.ServeProcessStopParams{ID: "stopped-lately"}))
	// The ages, set by hand: the queries stamp the database's clock. A
	// test's own SQL.
	for id, at := range map[string]time.Time{
		"running": t0, "stopped-long-ago": t0.Add(-25 * time.Hour), "stopped-lately": t0.Add(-23 * time.Hour),
		"silent-long": t0.Add(-25 * time.Hour), "silent-lately": t0.Add(-time.Hour),
	} {
		_, err := b.pool.Exec(ctx, `UPDATE herald.serve_processes SET heartbeat_at = $2,
			stopped_at = CASE WHEN stopped_at IS NULL THEN NULL ELSE $2::timestamptz END WHERE id = $1`, id, at)
		require.NoError(t, err)
	}
	m := b.newMaintenance(t, t0, maintenance.Config{})
	n, err := m.DeleteGoneProcesses(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	rows, err := q.ServeProcessList(ctx, b.pool, 3)
	require.NoError(t, err)
	var left []string
	for _, r := range rows {
		left = append(left, r.ID)
	}
	require.ElementsMatch(t, []string{"running", "stopped-lately", "silent-lately"}, left)
}

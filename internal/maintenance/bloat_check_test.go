package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/maintenance"
)

func TestCheckBloat_ReindexesPastThreshold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, seedSpec{id: "n1", window: day, statuses: []string{"pending", "pending"}, changed: t0})
	filenode := func() uint32 {
		var n uint32
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT pg_relation_filenode('herald.routes_due_idx')::oid`).Scan(&n))
		return n
	}
	before := filenode()

	// Default thresholds: a tiny index is never rebuilt.
	rep, err := b.newMaintenance(t, time.Now(), maintenance.Config{}).CheckBloat(ctx)
	require.NoError(t, err)
	require.False(t, rep.Reindexed)
	require.Positive(t, rep.IndexBytes)
	require.Equal(t, before, filenode())

	// Thresholds at zero: rebuilt concurrently, and still valid.
	rep, err = b.newMaintenance(t, time.Now(), maintenance.Config{BloatMinBytes: -1, BloatRatio: 1e-9}).CheckBloat(ctx)
	require.NoError(t, err)
	require.True(t, rep.Reindexed)
	require.Positive(t, rep.IndexBytesAfter)
	require.NotEqual(t, before, filenode())
	var valid bool
	require.NoError(t, b.pool.QueryRow(ctx, `
		SELECT indisvalid FROM pg_index WHERE indexrelid = 'herald.routes_due_idx'::regclass`).Scan(&valid))
	require.True(t, valid)
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.MaintenanceRows.WithLabelValues(maintenance.JobBloatCheck)))
}

func TestCheckBloat_DropsFailedRebuild(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.seed(t, seedSpec{id: "n1", window: day, statuses: []string{"pending", "pending"}, changed: t0})
	// A concurrent build that fails leaves an invalid index, as an
	// interrupted REINDEX CONCURRENTLY leaves routes_due_idx_ccnew: here a
	// unique index on values that repeat.
	_, err := b.pool.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY routes_due_idx_ccnew ON herald.routes_live (channel)`)
	require.Error(t, err)
	leftovers := func() int {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_class WHERE relname LIKE 'routes_due_idx_ccnew%'`).Scan(&n))
		return n
	}
	require.Equal(t, 1, leftovers())

	rep, err := b.newMaintenance(t, time.Now(), maintenance.Config{}).CheckBloat(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"routes_due_idx_ccnew"}, rep.DroppedLeftovers)
	require.Zero(t, leftovers())
}

package metrics_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/schema"
)

// herald_ready is what /readyz answers: 1 on a migrated database with a
// dispatcher making progress, 0 while the dispatcher is stuck or a
// migration is pending.
func TestReadinessCollector_FollowsReadyz(t *testing.T) {
	t.Parallel()
	pool := pgtemp.NewPool(t)
	var stalled atomic.Bool
	c, err := metrics.NewReadinessCollector(&metrics.HandlerConfig{Pool: pool, ProgressFunc: func() error {
		if stalled.Load() {
			return errors.New(`dispatcher is not making progress: channel loop "sms": no success for 12s`)
		}
		return nil
	}})
	require.NoError(t, err)
	require.Equal(t, 1.0, testutil.ToFloat64(c))

	stalled.Store(true)
	require.Equal(t, 0.0, testutil.ToFloat64(c), "a stuck dispatcher")
	stalled.Store(false)
	require.Equal(t, 1.0, testutil.ToFloat64(c))

	_, err = schema.NewMigrator(pool, nil).DownOne(context.Background())
	require.NoError(t, err)
	require.Equal(t, 0.0, testutil.ToFloat64(c), "a migration pending")
}

func TestNewReadinessCollector_NeedsPool(t *testing.T) {
	t.Parallel()
	_, err := metrics.NewReadinessCollector(&metrics.HandlerConfig{})
	require.ErrorContains(t, err, "Pool")
}

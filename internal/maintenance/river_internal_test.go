package maintenance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// A finished retention run may go on for most of its interval, so that a
// paced run is not cut short by River's default minute.
func TestFinishedRetention_RunsMostOfInterval(t *testing.T) {
	t.Parallel()
	m, err := New(pgtemp.NewPool(t), &Config{Interval: 10 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 9*time.Minute, (&finishedRetentionWorker{m: m}).Timeout(nil))
}

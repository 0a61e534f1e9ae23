package maintenance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/harness/pgtemp"
)

// pace leaves the engine (1-d)/d of a statement's time for each
// statement: a quarter's duty waits three times as long as the statement
// took; a duty of 1 does not wait; a canceled run stops waiting.
func TestPace_WaitsForTheDutyCycle(t *testing.T) {
	t.Parallel()
	pool := pgtemp.NewPool(t)
	m, err := New(pool, &Config{RetentionDuty: 0.25})
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, m.pace(context.Background(), 20*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 60*time.Millisecond)

	flat, err := New(pool, &Config{RetentionDuty: 1})
	require.NoError(t, err)
	start = time.Now()
	require.NoError(t, flat.pace(context.Background(), time.Hour))
	require.Less(t, time.Since(start), time.Second, "no wait at all")

	// A wait cut short is owed still: the next rest waits it out.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, m.pace(ctx, 30*time.Millisecond), context.Canceled)
	start = time.Now()
	require.NoError(t, m.rest(context.Background()))
	require.GreaterOrEqual(t, time.Since(start), 60*time.Millisecond)
	start = time.Now()
	require.NoError(t, m.rest(context.Background()))
	require.Less(t, time.Since(start), time.Second, "nothing owed any more")

	def, err := New(pool, nil)
	require.NoError(t, err)
	require.Equal(t, DefaultRetentionDuty, def.cfg.RetentionDuty)
	_, err = New(pool, &Config{RetentionDuty: 1.5})
	require.ErrorContains(t, err, "RetentionDuty")
}

package receipt

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/store"
)

// Callers that each store their next item as soon as the last is stored
// (a provider's connections) are written as one group, not as two
// cohorts that alternate, each written while the other waits.
func TestGroup_ReturningCallersWrittenTogether(t *testing.T) {
	t.Parallel()
	const callers, rounds = 16, 30
	var mu sync.Mutex
	var sizes []int
	b := &batcher[int]{linger: true, enough: make(chan struct{}, 1),
		many: func(_ context.Context, _ store.DBTX, items []int) error {
			mu.Lock()
			sizes = append(sizes, len(items))
			mu.Unlock()
			time.Sleep(2 * time.Millisecond) // the group's transaction
			return nil
		},
		one: func(context.Context, store.DBTX, int) error {
			mu.Lock()
			sizes = append(sizes, 1)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			return nil
		},
	}
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			for range rounds {
				require.NoError(t, b.store(context.Background(), i))
				time.Sleep(100 * time.Microsecond) // the answer, and the next request
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range sizes {
		total += n
	}
	require.Equal(t, callers*rounds, total)
	require.GreaterOrEqual(t, float64(total)/float64(len(sizes)), 0.8*callers,
		"items per group (sizes %v)", sizes)
}

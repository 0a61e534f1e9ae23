// Package pause waits a while unless a context ends first: the one timer
// and select that herald's retry loops, pacers and pollers share.
package pause

import (
	"context"
	"time"
)

// For waits d and returns nil, or returns ctx's error as soon as ctx ends.
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

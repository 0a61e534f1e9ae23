package maintenance

import (
	"context"

	"github.com/heraldhq/herald/internal/store"
)

// DeleteMalformed deletes, batch by batch, the malformed intents recorded
// more than Config.MalformedRetention ago.
func (m *Maintenance) DeleteMalformed(ctx context.Context) (int64, error) {
	cutoff := m.cfg.NowFunc().Add(-m.cfg.MalformedRetention)
	return m.runJob(ctx, JobMalformedRetention, func(ctx context.Context) (int64, int64, error) {
		n, err := m.queries.MalformedIntentDeleteBefore(ctx, m.pool, store.MalformedIntentDeleteBeforeParams{
			RecordedBefore: cutoff,
			BatchSize:      int32(m.cfg.BatchSize),
		})
		return n, n, err
	})
}

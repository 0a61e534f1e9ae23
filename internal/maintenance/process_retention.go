package maintenance

import (
	"context"
	"time"
)

// ProcessRetention is how long the row of a serve process that stopped,
// or stopped beating, stays in herald.serve_processes: a day, so that the
// console and `herald status` show a process that went away overnight
// until the morning, and the table holds no more than a day's restarts.
const ProcessRetention = 24 * time.Hour

// DeleteGoneProcesses deletes the rows of serve processes stopped, or
// silent, for longer than ProcessRetention: one statement (the table has
// a row per process started within the day).
func (m *Maintenance) DeleteGoneProcesses(ctx context.Context) (int64, error) {
	before := m.cfg.NowFunc().Add(-ProcessRetention)
	return m.runJob(ctx, JobProcessRetention, func(ctx context.Context) (int64, int64, error) {
		n, err := m.queries.ServeProcessDeleteGone(ctx, m.pool, before)
		return 0, n, err
	})
}

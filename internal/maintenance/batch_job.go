package maintenance

import (
	"context"
	"fmt"
	"time"
)

// cursor is where a retention run's scan of records_pkey stands: after id,
// exclusive. The zero cursor, the empty id, is before every record.
type cursor struct {
	id string
}

// advance moves the cursor to the last candidate of a batch, if it had any.
func (c *cursor) advance(candidates int64, id string) {
	if candidates > 0 {
		c.id = id
	}
}

// resumeFrom is where job's next run starts: where its last run was cut
// short, or (the zero cursor) before every record.
func (m *Maintenance) resumeFrom(job string) cursor {
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	return m.resume[job]
}

// runCursorJob runs a retention job whose batches walk records with cur (see
// runJob). If the run fails or is cut short, the job's next run goes on from
// where cur stands; if it finishes, the next run starts from the oldest
// record.
func (m *Maintenance) runCursorJob(ctx context.Context, job string, cur *cursor, batch func(context.Context) (candidates, deleted int64, err error)) (int64, error) {
	total, err := m.runJob(ctx, job, batch)
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	if err != nil {
		m.resume[job] = *cur
	} else {
		delete(m.resume, job)
	}
	return total, err
}

// runJob calls batch until it finds fewer candidates than a batch holds, then
// logs and records the rows deleted.
func (m *Maintenance) runJob(ctx context.Context, job string, batch func(context.Context) (candidates, deleted int64, err error)) (int64, error) {
	start := time.Now()
	var total int64
	var err error
	for {
		var found, n int64
		found, n, err = batch(ctx)
		total += n
		if err != nil || found < int64(m.cfg.BatchSize) {
			break
		}
	}
	m.metrics.Maintenance(job, total, err)
	if err != nil {
		m.logger.Error("maintenance job failed", "job", job, "deleted", total, "err", err)
		return total, fmt.Errorf("%s: %w", job, err)
	}
	m.logger.Info("maintenance job done", "job", job, "deleted", total, "duration", time.Since(start).Round(time.Millisecond))
	return total, nil
}

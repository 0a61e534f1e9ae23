package maintenance

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/internal/store"
)

// DeleteDeadLettered deletes, batch by batch, the notifications with
// dead-lettered routes whose routes are all terminal, whose dead letters are
// all older than Config.DeadLetterRetention and whose idempotency window is
// over, among the records of weeks retired already (kept, migration 00027)
// and the others not in a week. With DeadLetterRetention zero (the
// default) it deletes nothing.
func (m *Maintenance) DeleteDeadLettered(ctx context.Context) (int64, error) {
	if m.cfg.DeadLetterRetention <= 0 {
		return 0, nil
	}
	now := m.cfg.NowFunc()
	cutoff := now.Add(-m.cfg.DeadLetterRetention)
	below, err := m.queries.RecordWeeksFloor(ctx, m.pool, idAbove)
	if err != nil {
		return 0, fmt.Errorf("%s: records' weeks: %w", JobDeadLetterRetention, err)
	}
	cur := m.resumeFrom(JobDeadLetterRetention)
	return m.runCursorJob(ctx, JobDeadLetterRetention, &cur, func(ctx context.Context) (int64, int64, error) {
		row, err := m.queries.RecordDeleteDeadLettered(ctx, m.pool, store.RecordDeleteDeadLetteredParams{
			DeadBefore: cutoff,
			Now:        &now,
			AfterID:    cur.id,
			BelowID:    below,
			BatchSize:  int32(m.cfg.BatchSize),
		})
		cur.advance(row.Candidates, row.LastNotificationID)
		return row.Candidates, row.Deleted, err
	})
}

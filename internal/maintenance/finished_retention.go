package maintenance

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// DeleteFinished drops the finished routes' weeks past retention (Weeks),
// then deletes, batch by batch, the notifications whose routes are all
// gone with their weeks, or are published, skipped or canceled and were
// last changed longer than Config.FinishedRetention ago (routes from before
// migration 00025), and whose idempotency window is over. It never deletes
// a notification with a dead-lettered or non-terminal route. First it
// sweeps the expired idempotency keys (SweepKeys), so that a run cut short
// in either part goes on with that part next time: the sweep from where it
// stood, the notifications from where their cursor stood. It returns how
// many notifications it deleted. A week it could not drop (its lock) is
// logged and left to the next run; the notifications go on.
func (m *Maintenance) DeleteFinished(ctx context.Context) (int64, error) {
	if err := m.rest(ctx); err != nil {
		return 0, fmt.Errorf("%s: %w", JobFinishedRetention, err)
	}
	if _, err := m.SweepKeys(ctx); err != nil {
		return 0, err
	}
	return m.deleteFinished(ctx)
}

// deleteFinished is DeleteFinished but for the keys' sweep.
func (m *Maintenance) deleteFinished(ctx context.Context) (int64, error) {
	// Partitions a run detached and could not drop (it stopped between).
	if err := m.dropGone(ctx); err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%s: %w", JobFinishedRetention, ctx.Err())
		}
		m.logger.Warn("detached partitions: left to the next run", "job", JobFinishedRetention, "err", err)
	}
	if _, _, err := m.Weeks(ctx); err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%s: %w", JobFinishedRetention, ctx.Err())
		}
		m.logger.Warn("finished routes' weeks: left to the next run", "job", JobFinishedRetention, "err", err)
	}
	_, retired, kept, err := m.RecordWeeks(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return retired - kept, fmt.Errorf("%s: %w", JobFinishedRetention, ctx.Err())
		}
		m.logger.Warn("records' weeks: left to the next run", "job", JobFinishedRetention, "err", err)
	}
	now := m.cfg.NowFunc()
	cutoff := now.Add(-m.cfg.FinishedRetention)
	// Row by row only below the weeks not retired yet: the kept
	// partitions, records_before and records_default.
	below, err := m.queries.RecordWeeksFloor(ctx, m.pool, idAbove)
	if err != nil {
		return retired - kept, fmt.Errorf("%s: records' weeks: %w", JobFinishedRetention, err)
	}
	cur := m.resumeFrom(JobFinishedRetention)
	n, err := m.runCursorJob(ctx, JobFinishedRetention, &cur, func(ctx context.Context) (int64, int64, error) {
		start := time.Now()
		row, err := m.queries.RecordDeleteFinished(ctx, m.pool, store.RecordDeleteFinishedParams{
			AcceptedBefore: cutoff,
			FinishedBefore: cutoff,
			Now:            &now,
			AfterID:        cur.id,
			BelowID:        below,
			BatchSize:      int32(m.cfg.BatchSize),
		})
		cur.advance(row.Candidates, row.LastNotificationID)
		if err == nil && row.Candidates >= int64(m.cfg.BatchSize) {
			err = m.pace(ctx, time.Since(start))
		}
		return row.Candidates, row.Deleted, err
	})
	return retired - kept + n, err
}

// idAbove sorts after every id herald makes (a UUIDv7's text is hex
// digits and dashes): the walk's upper bound when no week is left.
const idAbove = "g"

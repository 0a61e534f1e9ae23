package maintenance

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldhq/herald/internal/store"
)

// retireTimeout bounds one week's stage, which runs to its end when the
// job is canceled meanwhile.
const retireTimeout = 10 * time.Minute

// RecordRetireGap is how long after a week's end its records are retired
// on top of Config.FinishedRetention: the routes of a week's records
// finish in it or soon after, and their finished weeks (dropped
// FinishedRetention after they end) have gone by then, so that all but
// the records still needed (dead letters, routes still in flight, open
// idempotency windows) go with the week.
const RecordRetireGap = 7 * 24 * time.Hour

// RecordWeeks makes the record partitions of the weeks from now to
// WeeksAhead that do not exist yet, then retires, one at a time, the
// weeks that ended more than Config.FinishedRetention plus
// RecordRetireGap ago: a week's records that must stay
// are copied into a kept partition (staged), which takes the week's place
// (swapped), and the week's table is dropped whole.
// It returns how many weeks it made, how many records the retired weeks
// held and how many of them were kept. A lock it cannot get
// within weekLockWait fails it (55P03); the next run tries again.
func (m *Maintenance) RecordWeeks(ctx context.Context) (made int, retired, kept int64, err error) {
	now := m.cfg.NowFunc()
	var n int32
	err = m.lockTries(ctx, func(ctx context.Context) error {
		var err error
		n, err = m.queries.RecordWeeksCreate(ctx, m.pool, store.RecordWeeksCreateParams{
			FirstDay:    pgtype.Date{Time: now.UTC(), Valid: true},
			LastDay:     pgtype.Date{Time: now.Add(WeeksAhead).UTC(), Valid: true},
			WaitSeconds: weekLockWait.Seconds(),
		})
		return err
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("make record weeks: %w", err)
	}
	made = int(n)
	before := now.Add(-m.cfg.FinishedRetention - RecordRetireGap)
	for {
		if err := ctx.Err(); err != nil {
			return made, retired, kept, err
		}
		// A retirement is staged (the week's kept records copied: the
		// work) and then swapped in (an instant's lock on records, which
		// it may wait for more than once: a try that gives way costs
		// little, the staged rows stay). A stage is one bounded piece of
		// work, which a cancel would throw away: ctx ending lets it
		// finish, and stops the job before the swap.
		start := time.Now()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), retireTimeout)
		staged, err := m.queries.RecordWeekStageOne(rctx, m.pool, store.RecordWeekStageOneParams{
			Before:      before,
			MergeBelow:  m.cfg.KeptMergeRows,
			WaitSeconds: weekLockWait.Seconds() * 10,
		})
		cancel()
		if err != nil {
			return made, retired, kept, fmt.Errorf("stage record week: %w", err)
		}
		if len(staged) == 0 {
			return made, retired, kept, nil
		}
		if err := m.pace(ctx, time.Since(start)); err != nil {
			return made, retired, kept, err
		}
		start = time.Now()
		var rows []store.RecordWeekSwapOneRow
		// A swap is short (its lock waits are bounded): one begun is let
		// finish, so that what it did is known (a statement canceled as it
		// commits would leave its figures unreported). ctx ending stops
		// the tries between them.
		err = m.swapTries(ctx, func(ctx context.Context) error {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), retireTimeout)
			defer cancel()
			var err error
			rows, err = m.queries.RecordWeekSwapOne(sctx, m.pool, weekLockWait.Seconds())
			return err
		})
		if err != nil {
			return made, retired, kept, fmt.Errorf("swap record week: %w", err)
		}
		if len(rows) == 0 {
			return made, retired, kept, fmt.Errorf("swap record week: week of %s staged, then not found",
				staged[0].Week.Time.Format(time.DateOnly))
		}
		r := rows[0]
		retired += r.Records
		kept += r.Kept
		m.logger.Info("records' week retired", "job", JobFinishedRetention,
			"week", r.Week.Time.Format(time.DateOnly), "records", r.Records, "kept", r.Kept,
			"merged", r.Merged, "duration", time.Since(start).Round(time.Millisecond))
		if err := m.dropGone(context.WithoutCancel(ctx)); err != nil {
			return made, retired, kept, err
		}
		if err := m.pace(ctx, time.Since(start)); err != nil {
			return made, retired, kept, err
		}
	}
}

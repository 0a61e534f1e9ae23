package maintenance

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldhq/herald/internal/store"
)

// WeeksAhead is how far ahead of now the finished-route partitions are
// made: a route that finishes in a week without one is
// refused, so maintenance may be down this long before completions fail.
const WeeksAhead = 14 * 24 * time.Hour

// weekLockWait bounds how long making or dropping a week waits for its lock
// on routes: the engine's statements queue behind a waiting DDL lock.
const weekLockWait = 100 * time.Millisecond

// Weeks makes the finished-route partitions of the weeks from now to
// WeeksAhead that do not exist yet, then drops, one at a time, those whose
// week ended more than Config.FinishedRetention ago: a finished route goes
// with its week, whole, instead of row by row. A week is detached in one
// short transaction and dropped in another, so that the drop does not
// hold the lock on routes. It returns how many weeks it made and how many
// routes (the planner's estimate) the weeks it dropped held. A lock it
// cannot get within weekLockWait, weekLockTries times, fails it (55P03);
// the next run tries again.
func (m *Maintenance) Weeks(ctx context.Context) (made int, dropped int64, err error) {
	now := m.cfg.NowFunc()
	var n int32
	err = m.lockTries(ctx, func(ctx context.Context) error {
		var err error
		n, err = m.queries.RouteWeeksCreate(ctx, m.pool, store.RouteWeeksCreateParams{
			FirstDay:    pgtype.Date{Time: now.UTC(), Valid: true},
			LastDay:     pgtype.Date{Time: now.Add(WeeksAhead).UTC(), Valid: true},
			WaitSeconds: weekLockWait.Seconds(),
		})
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("make weeks: %w", err)
	}
	made = int(n)
	cutoff := now.Add(-m.cfg.FinishedRetention)
	for {
		start := time.Now()
		var rows []store.RouteWeeksDetachOneRow
		err := m.lockTries(ctx, func(ctx context.Context) error {
			var err error
			rows, err = m.queries.RouteWeeksDetachOne(ctx, m.pool, store.RouteWeeksDetachOneParams{
				Before:      cutoff,
				WaitSeconds: weekLockWait.Seconds(),
			})
			return err
		})
		if err != nil {
			return made, dropped, fmt.Errorf("drop week: %w", err)
		}
		if len(rows) == 0 {
			return made, dropped, nil
		}
		dropped += rows[0].Routes
		m.logger.Info("finished routes' week dropped", "job", JobFinishedRetention,
			"week", rows[0].Week.Time.Format(time.DateOnly), "routes_about", rows[0].Routes)
		if err := m.dropGone(ctx); err != nil {
			return made, dropped, err
		}
		if err := m.pace(ctx, time.Since(start)); err != nil {
			return made, dropped, err
		}
	}
}

package maintenance

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// keySweep is the state of the idempotency keys' sweep in this process: a
// sweep in progress goes on from next up to end (blocks), the table's
// length when it started; done is when the last one finished.
type keySweep struct {
	running   bool
	next, end int64
	done      time.Time
}

// SweepKeys deletes the idempotency keys whose window is over: when no
// sweep is in progress and the last finished Config.KeySweepEvery ago or
// more (or none has run in this process), it
// starts one over the keys table as long as it is now, and goes on with
// the one in progress, Config.KeySweepBlocks blocks a statement, until the
// end. A sweep cut short (ctx, a failure) goes on from where it stood at
// the next call. It returns how many keys it deleted. An expired key is
// free for a new notification whether or not its row is gone yet.
func (m *Maintenance) SweepKeys(ctx context.Context) (int64, error) {
	now := m.cfg.NowFunc()
	m.resumeMu.Lock()
	sw := m.sweep
	m.resumeMu.Unlock()
	if !sw.running {
		if !sw.done.IsZero() && now.Sub(sw.done) < m.cfg.KeySweepEvery {
			return 0, nil
		}
		end, err := m.queries.IdempotencyKeyBlocks(ctx, m.pool)
		if err != nil {
			m.metrics.Maintenance(JobKeySweep, 0, err)
			return 0, fmt.Errorf("%s: %w", JobKeySweep, err)
		}
		sw = keySweep{running: true, end: end, done: sw.done}
	}
	start := time.Now()
	var total int64
	var err error
	for sw.next < sw.end {
		to := min(sw.next+int64(m.cfg.KeySweepBlocks), sw.end)
		var n int64
		began := time.Now()
		n, err = m.queries.IdempotencyKeyDeleteExpired(ctx, m.pool, store.IdempotencyKeyDeleteExpiredParams{
			FromBlock: sw.next, ToBlock: to, Now: now,
		})
		if err != nil {
			break
		}
		total += n
		sw.next = to
		if sw.next < sw.end {
			if err = m.pace(ctx, time.Since(began)); err != nil {
				break
			}
		}
	}
	if err == nil {
		sw = keySweep{done: now}
	}
	m.resumeMu.Lock()
	m.sweep = sw
	m.resumeMu.Unlock()
	m.metrics.Maintenance(JobKeySweep, total, err)
	if err != nil {
		m.logger.Error("maintenance job failed", "job", JobKeySweep, "deleted", total, "err", err)
		return total, fmt.Errorf("%s: %w", JobKeySweep, err)
	}
	m.logger.Info("maintenance job done", "job", JobKeySweep, "deleted", total, "duration", time.Since(start).Round(time.Millisecond))
	return total, nil
}

package maintenance

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/pause"
)

// pace waits after a retention statement that took took, so that the
// job's statements take at most Config.RetentionDuty of its time: for a
// duty d, took*(1-d)/d. The wait owed outlives a run cut short: the next
// run waits out the rest first (rest). It returns ctx's error if ctx ends
// first.
func (m *Maintenance) pace(ctx context.Context, took time.Duration) error {
	d := m.cfg.RetentionDuty
	if d >= 1 {
		return ctx.Err()
	}
	wait := time.Duration(float64(took) * (1 - d) / d)
	m.resumeMu.Lock()
	from := time.Now()
	if m.restUntil.After(from) {
		from = m.restUntil
	}
	m.restUntil = from.Add(wait)
	m.resumeMu.Unlock()
	return m.rest(ctx)
}

// rest waits until the wait owed by the statements run so far (pace) is
// over. It returns ctx's error if ctx ends first.
func (m *Maintenance) rest(ctx context.Context) error {
	m.resumeMu.Lock()
	wait := time.Until(m.restUntil)
	m.resumeMu.Unlock()
	if wait <= 0 {
		return ctx.Err()
	}
	return pause.For(ctx, wait)
}

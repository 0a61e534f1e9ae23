package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/pause"
	"github.com/heraldhq/herald/internal/store"
)

// Pacing of capped providers.
//
// A capped provider's routes wait in its lane (routes.lane = its name),
// moved there by one write when a channel loop routes them to it, and a
// loop of the lane's own claims them as its slots free. Before delivering
// a claimed batch, the lane loop takes as many send slots from
// herald.provider_pacing (shared by every serve process) as it has routes,
// and each delivery waits for its slot. Slots are spaced paceMargin/cap
// apart, and a delivery later than lateSlot past its slot takes a new
// one: a send then never goes before its slot nor more than lateSlot after
// it. The provider counts arrivals, not sends, and between the two lie the
// HTTP client, the network and a loaded machine's scheduling: with the
// cap's slots spread over paceMargin seconds, arrivals may wander up to
// paceMargin - 1 - lateSlot (90 ms) and no second holds more than cap of
// them. The price is a tenth of the cap's throughput. (At 1.02 a demo run
// on a machine with a load average of 15 saw 21 arrivals in one second
// at a cap of 20.)
const (
	paceMargin = 1.1
	lateSlot   = 10 * time.Millisecond
)

// pace gives each deliverable job of a lane loop its send slot, taken from
// the provider's shared pacing row in one statement.
func (l *channelLoop) pace(ctx context.Context, jobs []job) error {
	if l.lane == "" {
		return nil
	}
	var batch []*job
	for i := range jobs {
		if jobs[i].outcome == nil && jobs[i].park == nil {
			batch = append(batch, &jobs[i])
		}
	}
	if len(batch) == 0 {
		return nil
	}
	pr := batch[0].provider
	spacing := l.spacing(pr)
	first, err := l.reserve(ctx, pr.Name, len(batch), spacing)
	if err != nil {
		return err
	}
	for i, j := range batch {
		j.slotAt = first.Add(time.Duration(i) * spacing)
	}
	return nil
}

// spacing is the time between two of pr's send slots.
func (l *channelLoop) spacing(pr *Provider) time.Duration {
	return time.Duration(paceMargin * float64(time.Second) / float64(max(pr.CapPerSecond, 1)))
}

// reserve takes n slots of provider spaced apart and returns the first
// one on this process's clock.
func (l *channelLoop) reserve(ctx context.Context, provider string, n int, spacing time.Duration) (time.Time, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	sent := time.Now()
	row, err := l.d.q.ProviderPacingReserve(rctx, l.d.pool, store.ProviderPacingReserveParams{
		Now:            l.d.now(),
		AdvanceSeconds: (time.Duration(n) * spacing).Seconds(),
		Provider:       provider,
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("reserve %d send slots of %s: %w", n, provider, err)
	}
	// The database's clock read during the statement; the local clock at
	// the statement's start is the conservative match (slots come later
	// here, never earlier).
	return sent.Add(row.FirstSlot.Sub(row.DbNow)), nil
}

// waitSlot waits for j's send slot. A delivery that comes to its slot
// more than lateSlot late (its provider's concurrency was full, or the
// process stalled) takes a fresh slot, so late sends never bunch. It
// returns false if ctx ended first.
func (l *channelLoop) waitSlot(ctx context.Context, j *job) bool {
	for {
		if wait := time.Until(j.slotAt); wait > 0 && pause.For(ctx, wait) != nil {
			return false
		}
		if time.Since(j.slotAt) <= lateSlot {
			return true
		}
		at, err := l.reserve(ctx, j.provider.Name, 1, l.spacing(j.provider))
		if err != nil {
			l.prog.fail(opPace, err, time.Second)
			if pause.For(ctx, time.Second) != nil {
				return false
			}
			continue
		}
		j.slotAt = at
	}
}

package dispatch

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/heraldhq/herald/internal/pause"
	"github.com/heraldhq/herald/internal/store"
)

// channelLoop claims and delivers the routes of one channel's lane: the
// channel's own queue (lane ”), or a capped provider's paced queue (lane
// is the provider's name; see pace.go).
type channelLoop struct {
	d    *Dispatcher
	name string
	lane string
	cfg  ChannelConfig
	// stop ends a lane loop whose provider lost its cap or was removed.
	stop context.CancelFunc
	// slots holds one token per delivery in flight: its capacity is the
	// channel's Concurrency.
	slots chan struct{}
	// freed is signaled (without blocking) whenever a slot is given back.
	freed chan struct{}
	// wake is signaled by NOTIFY and Wake.
	wake     chan struct{}
	inflight sync.WaitGroup
	// work hands a delivery to an idle worker (see handOff).
	work chan *job
	// prog tracks the loop's rounds: a claim, then the recipient lookup of
	// what it claimed.
	prog *progress
	// turn and claimTime are running means (nanoseconds) of how long a
	// launched delivery holds its slot and how long a claim takes; gather
	// compares them (see quick).
	turn      atomic.Int64
	claimTime time.Duration
}

func newChannelLoop(d *Dispatcher, name, lane string, cfg ChannelConfig) *channelLoop {
	part := "channel loop"
	if lane != "" {
		part = "lane loop " + lane
	}
	return &channelLoop{
		d:     d,
		name:  name,
		lane:  lane,
		cfg:   cfg,
		slots: make(chan struct{}, cfg.Concurrency),
		freed: make(chan struct{}, 1),
		wake:  make(chan struct{}, 1),
		work:  make(chan *job),
		prog:  newProgress(d, part, name),
	}
}

func (l *channelLoop) wakeUp() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// minDueWait is the shortest sleep when the next due route is due already
// but was not claimed: another dispatcher holds it locked in its own claim,
// which is about to move it to its lease's end.
const minDueWait = 20 * time.Millisecond

// Backoff of a loop whose claim or recipient lookup failed: doubling from
// minErrDelay up to maxErrDelay, on top of the failed statement's own time
// (up to the lock or statement timeout).
const (
	minErrDelay = 100 * time.Millisecond
	maxErrDelay = 5 * time.Second
)

// run claims until ctx ends. Deliveries it starts run under deliverCtx.
func (l *channelLoop) run(ctx, deliverCtx context.Context) {
	errDelay := minErrDelay
	backoff := func() bool {
		ok := pause.For(ctx, errDelay) == nil
		errDelay = min(2*errDelay, maxErrDelay)
		return ok
	}
	backlog := false // the last claim was full: more routes are due
	racedLast := false
	for ctx.Err() == nil {
		free := cap(l.slots) - len(l.slots)
		if free == 0 {
			l.d.signals.Signal(moment{signalFull, l.name})
			select {
			case <-ctx.Done():
				return
			case <-l.freed:
			}
			continue
		}
		if backlog {
			want, wait := l.lowWater(), gatherWait
			if l.quick() {
				want, wait = l.full(), min(l.claimTime/quickShare, gatherWait)
			}
			free = l.gather(ctx, want, wait)
		}
		want := min(free, l.d.batchSize)
		// The claim is not canceled with ctx: a claim interrupted by
		// shutdown might commit with its answer lost, leaving routes
		// leased to no one until their leases end. A finished claim seen
		// after shutdown began is released instead (start).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.Lease)
		began := time.Now()
		l.prog.begin()
		var claimed []store.RouteClaimDueRow
		var jobs []job
		var err error
		if l.lane == "" && l.d.plane.cur.Load().hasCappedProvider(l.name) {
			jobs, err = l.claimRouted(cctx, want)
			for i := range jobs {
				claimed = append(claimed, jobs[i].row)
			}
		} else {
			claimed, err = l.d.q.RouteClaimDue(cctx, l.d.pool, store.RouteClaimDueParams{
				Now:          l.d.now(),
				LeaseSeconds: l.cfg.Lease.Seconds(),
				Max:          int32(want),
				Channel:      l.name,
				Lane:         l.lane,
			})
		}
		cancel()
		l.claimTime = ewma(l.claimTime, time.Since(began))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// A claim that raced a route's move is run again at once,
			// once: it changed nothing (raced).
			if raced(err) && !racedLast {
				racedLast = true
				l.d.log.Debug("claim raced a route's move; claiming again", "channel", l.name, "lane", l.lane)
				continue
			}
			racedLast = false
			l.prog.fail(opClaim, err, errDelay)
			if !backoff() {
				return
			}
			continue
		}
		l.d.stats.claimed.Add(int64(len(claimed)))
		l.d.stats.inHand.Add(int64(len(claimed)))
		l.d.metrics.InFlight(l.name, len(claimed))
		if l.d.afterClaim != nil {
			l.d.afterClaim(len(claimed))
		}
		sctx, span := l.claimSpan(ctx, began, len(claimed))
		if jobs != nil {
			err = l.startRouted(sctx, deliverCtx, jobs)
		} else {
			err = l.start(sctx, deliverCtx, claimed)
		}
		if err != nil {
			span.SetStatus(codes.Error, "claimed routes not started")
		}
		span.End()
		if err != nil {
			if !backoff() {
				return
			}
			continue
		}
		l.prog.done()
		errDelay = minErrDelay
		racedLast = false
		if backlog = len(claimed) == want; backlog {
			continue // more may be due: claim again at once
		}
		l.idle(ctx)
	}
}

// gatherWait bounds how long a saturated loop waits for more slots to
// free before it claims for the few it has.
const gatherWait = 5 * time.Millisecond

// full is the most one claim can take: the channel's concurrency, at most
// a batch.
func (l *channelLoop) full() int {
	return min(cap(l.slots), l.d.batchSize)
}

// quick reports whether the channel's deliveries give their slots back
// in less than a quarter of a claim's time (running means): then a
// saturated loop waits, up to that quarter, for a full claim's worth of
// slots (gather) rather than claiming for the slots that happen to be
// free. With deliveries that fast, the slots a claim finds taken are held
// by the batch the loop has just launched, whose deliveries are about to
// end: claiming at once took about half a batch per statement (the
// loop's claims alternated between the two halves of its slots), and
// every claim and completion statement pays a fixed cost (the due scan's
// walk over routes in flight, the round trip, the commit) that a full one
// shares among twice the routes. With slower deliveries (a provider's
// round trip), waiting would leave the slots already free idle while
// the deliveries it waits for still run: the loop gathers only a quarter
// of its slots (lowWater), claiming while the rest deliver.
func (l *channelLoop) quick() bool {
	return l.claimTime > 0 && time.Duration(l.turn.Load()) < l.claimTime/quickShare
}

// quickShare is the share of a claim's time (its inverse) under which
// deliveries are quick, and the longest a loop waits for them.
const quickShare = 4

// ewma moves a running mean an eighth of the way to sample.
func ewma(mean, sample time.Duration) time.Duration {
	if mean == 0 {
		return sample
	}
	return mean + (sample-mean)/8
}

// lowWater is how many free slots a saturated loop gathers before
// claiming: a quarter of its concurrency (at most a batch), so a slow
// channel under a backlog claims a few routes per statement rather than one
// per finished delivery.
func (l *channelLoop) lowWater() int {
	return max(1, min(cap(l.slots)/4, l.d.batchSize))
}

// gather waits until want slots are free, wait has passed or ctx ends,
// and returns the free slots.
func (l *channelLoop) gather(ctx context.Context, want int, wait time.Duration) int {
	if free := cap(l.slots) - len(l.slots); free >= want {
		return free
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		free := cap(l.slots) - len(l.slots)
		if free >= want {
			return free
		}
		select {
		case <-ctx.Done():
			return free
		case <-t.C:
			return cap(l.slots) - len(l.slots)
		case <-l.freed:
		}
	}
}

// idle sleeps until a wake-up, the next due route, or the poll interval.
func (l *channelLoop) idle(ctx context.Context) {
	wait := l.d.poll
	secs, err := l.d.q.RouteNextDue(ctx, l.d.pool, store.RouteNextDueParams{Now: l.d.now(), Channel: l.name, Lane: l.lane})
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		// Counted, but no episode of its own: the loop polls instead, and
		// the claim that follows reports whatever keeps failing (it reads
		// the same index) without a line per poll.
		kind := l.prog.count(opNextDue, err, []string{l.name})
		l.d.log.Debug("read next due route; polling instead", "channel", l.name, "err", err, "timeout", kind)
	} else if !math.IsInf(secs, 1) {
		due := time.Duration(min(secs, wait.Seconds()) * float64(time.Second))
		wait = min(wait, max(due, minDueWait))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	l.d.signals.Signal(moment{signalIdle, l.name})
	select {
	case <-ctx.Done():
	case <-l.wake:
	case <-t.C:
	}
}

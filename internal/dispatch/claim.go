package dispatch

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/store"
)

// job is one claimed route on its way through delivery.
type job struct {
	row     store.RouteClaimDueRow
	maxAtt  int32
	msg     channel.Message
	email   string
	locale  string
	outcome *completion // set when the route is settled without delivery
	// provider delivers the route; nil on a channel without providers
	// (the channel's Deliverer does).
	provider *Provider
	// park, when set, moves the route into a lane instead (park.go).
	park *parking
	// slotAt is when a capped provider's paced send may go (lane loops).
	slotAt time.Time
	// launched is when the job took its slot.
	launched time.Time
	// claim is the span of the claim that took the route (trace.go).
	claim trace.SpanContext
}

// start resolves a claimed batch and starts its deliveries; routes that
// need no delivery (expired, exhausted, skipped) go straight to the
// completer. If ctx ended meanwhile, or the lookup failed, the batch is
// released instead; the lookup's error is returned, so that the loop backs
// off.
func (l *channelLoop) start(ctx, deliverCtx context.Context, claimed []store.RouteClaimDueRow) error {
	if len(claimed) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.Lease)
	jobs, err := l.resolve(rctx, claimed)
	cancel()
	if err != nil || ctx.Err() != nil {
		if err != nil && ctx.Err() == nil {
			l.prog.fail(opResolve, err, 0)
		}
		if rerr := l.d.release(l.name, claimed); rerr != nil {
			l.prog.fail(opRelease, rerr, 0)
		}
		if err == nil {
			err = ctx.Err() // shutdown: the loop stops, the round is not done
		}
		return err
	}
	l.route(jobs)
	l.parkAll(jobs)
	return l.launch(ctx, deliverCtx, jobs)
}

// release gives claimed routes back, due at once with their attempt handed
// back: nothing reached the channel. It outlives shutdown's context on
// purpose, bounded by its own timeout. On error (which the caller reports)
// the routes come due again when their leases end.
func (d *Dispatcher) release(channel string, claimed []store.RouteClaimDueRow) error {
	defer func() {
		d.stats.inHand.Add(-int64(len(claimed)))
		d.metrics.InFlight(channel, -len(claimed))
	}()
	p := store.RouteReleaseLeasesParams{Now: d.now()}
	for _, r := range claimed {
		p.NotificationIds = append(p.NotificationIds, r.NotificationID)
		p.RouteIds = append(p.RouteIds, r.RouteID)
		p.Attempts = append(p.Attempts, r.AttemptCount)
		p.LeaseUntils = append(p.LeaseUntils, *r.LeaseUntil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := d.q.RouteReleaseLeases(ctx, d.pool, p)
	if err != nil {
		return fmt.Errorf("release leases of %d routes: %w", len(claimed), err)
	}
	d.stats.released.Add(n)
	d.log.Info("released leases of routes not started", "channel", channel, "routes", n)
	return nil
}

package dispatch

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/store"
)

// launch paces (lane loops) and starts the deliveries of a resolved,
// routed batch; settled routes go to the completer. On a pacing error the
// deliverable routes are released.
func (l *channelLoop) launch(ctx, deliverCtx context.Context, jobs []job) error {
	if err := l.pace(ctx, jobs); err != nil {
		l.prog.fail(opPace, err, 0)
		var back []store.RouteClaimDueRow
		for i := range jobs {
			if jobs[i].outcome == nil && jobs[i].park == nil {
				back = append(back, jobs[i].row)
			}
		}
		if rerr := l.d.release(l.name, back); rerr != nil {
			l.prog.fail(opRelease, rerr, 0)
		}
		for i := range jobs {
			if jobs[i].outcome != nil {
				l.d.completer.add(*jobs[i].outcome)
			}
		}
		return err
	}
	claim := trace.SpanContextFromContext(ctx)
	for i := range jobs {
		j := &jobs[i]
		if j.outcome != nil {
			l.d.completer.add(*j.outcome)
			continue
		}
		j.claim = claim
		if j.park != nil {
			continue
		}
		l.slots <- struct{}{} // never blocks: the claim took at most the free slots
		j.launched = time.Now()
		l.inflight.Add(1)
		l.handOff(deliverCtx, j)
	}
	return nil
}

// workerIdle is how long a delivery worker waits for its next delivery
// before it exits.
const workerIdle = 2 * time.Second

// handOff gives j to an idle delivery worker, or starts one. Workers stay
// for the next delivery (at most Concurrency of them are ever busy, since
// each holds a slot), so a delivery runs on a goroutine whose stack has
// grown to what delivery needs already: a goroutine per delivery paid for
// that growth every time, 6% of the bench process's CPU (pprof:
// runtime.newstack under deliver).
func (l *channelLoop) handOff(ctx context.Context, j *job) {
	select {
	case l.work <- j:
	default:
		go l.worker(ctx, j)
	}
}

// worker delivers j, then whatever handOff gives it, until it has been idle
// for workerIdle or ctx ends.
func (l *channelLoop) worker(ctx context.Context, j *job) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		l.deliver(ctx, j)
		idle.Reset(workerIdle)
		select {
		case j = <-l.work:
		case <-idle.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// deliver runs one attempt outside any transaction and hands its outcome
// to the completer.
func (l *channelLoop) deliver(ctx context.Context, j *job) {
	defer func() {
		// A lost update of this running mean (two deliveries ending at
		// once) only drops a sample.
		l.turn.Store(int64(ewma(time.Duration(l.turn.Load()), time.Since(j.launched))))
		<-l.slots
		select {
		case l.freed <- struct{}{}:
		default:
		}
		l.inflight.Done()
	}()
	pr := j.provider
	if !j.slotAt.IsZero() && !l.waitSlot(ctx, j) {
		// Shutdown before the slot came: the attempt fails transiently,
		// as any delivery canceled at shutdown does.
		l.d.completer.add(l.outcomeToCompletion(j, channel.Outcome{Class: channel.Transient,
			Classification: channel.ClassCanceled, Message: "shut down while waiting for the provider's cap"}))
		return
	}
	deliverer, timeout := l.cfg.Deliverer, l.cfg.Timeout
	if pr != nil {
		if !pr.acquire(ctx) {
			l.d.completer.add(l.outcomeToCompletion(j, channel.Outcome{Class: channel.Transient,
				Classification: channel.ClassCanceled, Message: "shut down while waiting for a provider slot"}))
			return
		}
		defer pr.releaseSlot()
		deliverer = pr.Deliverer
		if pr.Timeout > 0 && pr.Timeout < l.cfg.Lease {
			// A provider's own timeout, unless it would outlast the lease
			// (the route would be claimed again mid-attempt): then the
			// channel's applies.
			timeout = pr.Timeout
		}
	}
	began := time.Now()
	// context.WithTimeout(ctx, timeout), made only if the deliverer uses
	// it (attemptContext).
	attempt := newAttemptContext(ctx, began.Add(timeout))
	actx, span := l.attemptSpan(attempt, j)
	out := l.safeDeliver(actx, deliverer, &j.msg)
	attempt.end()
	if pr != nil {
		l.d.health.record(pr.Name, out, time.Since(began))
		l.d.metrics.ProviderAttempt(pr.Name, out.Class.String(), time.Since(began))
	}
	if out.Class == channel.Transient && out.Unsent && ctx.Err() == nil {
		// Nothing reached a provider (an SMPP provider lost its last bind
		// since routing chose it): the route waits, its attempt handed
		// back, and is routed again.
		c := l.outcomeToCompletion(j, out)
		c.status = "waiting"
		endAttempt(span, out, &c)
		j.park = &parking{delay: unavailableWait}
		l.parkAll([]job{*j})
		return
	}
	c := l.outcomeToCompletion(j, out)
	endAttempt(span, out, &c)
	l.d.completer.add(c)
}

func (l *channelLoop) safeDeliver(ctx context.Context, deliverer channel.Deliverer, msg *channel.Message) (out channel.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			l.d.log.Error("deliverer panicked", "channel", l.name, "notification_id", msg.NotificationID,
				"route_id", msg.RouteID, "attempt", msg.Attempt, "trace_id", msg.TraceID, "err", fmt.Sprint(p), "stack", string(debug.Stack()))
			out = channel.Outcome{
				Class:          channel.Permanent,
				Classification: ClassDelivererPanic,
				Message:        "the " + l.name + " deliverer panicked",
				RecoveryHint:   "a bug in herald's " + l.name + " channel: report it with the serve logs, then replay after upgrading",
			}
		}
	}()
	if deliverer == nil {
		return channel.Outcome{Class: channel.Permanent, Classification: ClassNoRoute,
			Message:      "channel " + l.name + " has no provider in this process",
			RecoveryHint: "configure the channel in herald serve's file or give it providers with `herald providers apply`, then replay"}
	}
	return deliverer.Deliver(ctx, msg)
}

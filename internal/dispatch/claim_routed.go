package dispatch

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/internal/store"
)

// claimRouted is the claim of a channel that has a capped provider. In one
// short transaction it locks the due routes (RouteLockDue), resolves and
// routes them in memory, and claims each or moves it into its capped
// provider's lane (RouteClaimLocked): a capped route is written once to
// wait, never claimed here and released. The claim of a channel without a
// capped provider stays the single statement RouteClaimDue. Returns the
// claimed jobs, resolved and routed; the parked ones are not among them.
func (l *channelLoop) claimRouted(ctx context.Context, want int) ([]job, error) {
	tx, err := l.d.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("claim: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	locked, err := l.d.q.RouteLockDue(ctx, tx, store.RouteLockDueParams{Now: l.d.now(), Max: int32(want), Channel: l.name})
	if err != nil {
		return nil, fmt.Errorf("claim: lock due routes: %w", err)
	}
	if len(locked) == 0 {
		return nil, tx.Commit(ctx)
	}
	rows := make([]store.RouteClaimDueRow, len(locked))
	for i, r := range locked {
		rows[i] = store.RouteClaimDueRow{
			NotificationID: r.NotificationID, RouteID: r.RouteID, RecipientRef: r.RecipientRef,
			// The attempt this claim takes, counted by RouteClaimLocked.
			AttemptCount: r.AttemptCount + 1, MaxAttempts: r.MaxAttempts, Producer: r.Producer,
			Priority: r.Priority, SmsEncoding: r.SmsEncoding, SmsSegments: r.SmsSegments, Providers: r.Providers,
			Expired: r.Expired, NotificationType: r.NotificationType, PayloadJson: r.PayloadJson,
			TraceID: r.TraceID, RequestID: r.RequestID, AcceptedAt: r.AcceptedAt,
		}
	}
	jobs, err := l.resolveIn(ctx, tx, rows)
	if err != nil {
		return nil, err
	}
	l.route(jobs)
	p := store.RouteClaimLockedParams{Now: l.d.now(), LeaseSeconds: l.cfg.Lease.Seconds()}
	for i := range jobs {
		j := &jobs[i]
		p.NotificationIds = append(p.NotificationIds, j.row.NotificationID)
		p.RouteIds = append(p.RouteIds, j.row.RouteID)
		park := j.park != nil && j.outcome == nil
		p.Parks = append(p.Parks, park)
		lane, delay := "", 0.0
		if park {
			lane, delay = j.park.lane, j.park.delay.Seconds()
		}
		p.Lanes = append(p.Lanes, lane)
		p.DelaySeconds = append(p.DelaySeconds, delay)
	}
	claimed, err := l.d.q.RouteClaimLocked(ctx, tx, p)
	if err != nil {
		return nil, fmt.Errorf("claim: claim or park routes: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("claim: commit: %w", err)
	}
	type key struct{ n, r string }
	lease := make(map[key]store.RouteClaimLockedRow, len(claimed))
	for _, c := range claimed {
		if !c.Parked {
			lease[key{c.NotificationID, c.RouteID}] = c
		}
	}
	out := jobs[:0]
	lanes := map[string]int{}
	for _, j := range jobs {
		if j.park != nil && j.outcome == nil {
			lanes[j.park.lane]++
			continue
		}
		cl, ok := lease[key{j.row.NotificationID, j.row.RouteID}]
		if !ok {
			continue // cannot happen: the rows were locked
		}
		j.row.LeaseUntil, j.row.RouteTid = cl.LeaseUntil, cl.RouteTid
		if j.outcome != nil {
			j.outcome.leaseUntil, j.outcome.tid = *cl.LeaseUntil, cl.RouteTid
		}
		out = append(out, j)
	}
	for lane, k := range lanes {
		if lane != "" {
			l.d.health.throttled(lane, k)
			l.d.metrics.ProviderThrottled(lane, k)
		}
	}
	if len(lanes) > 0 {
		l.d.wakeLanes(l.name)
	}
	return out, nil
}

// startRouted starts a batch claimRouted resolved and routed.
func (l *channelLoop) startRouted(ctx, deliverCtx context.Context, jobs []job) error {
	if ctx.Err() != nil {
		var rows []store.RouteClaimDueRow
		for i := range jobs {
			rows = append(rows, jobs[i].row)
		}
		if err := l.d.release(l.name, rows); err != nil {
			l.prog.fail(opRelease, err, 0)
		}
		return ctx.Err()
	}
	return l.launch(ctx, deliverCtx, jobs)
}

package dispatch

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// unavailableWait is how long the routes of a provider that cannot send
// at all (ReadyFunc) wait before they are routed again: each wait costs
// them a claim and a park, and no attempt.
const unavailableWait = 5 * time.Second

// untilFirstClose is how long until the first open circuit of the
// channel's providers closes, or a provider that cannot send (or that the
// operator took out of routing) is looked at again: at least a second, at
// most a minute.
func (l *channelLoop) untilFirstClose(p *Plane) time.Duration {
	wait := time.Minute
	open := *l.d.plane.open.Load()
	for _, name := range p.channelProviders(l.name) {
		if until, ok := open[name]; ok {
			wait = min(wait, time.Until(until))
		} else if l.d.unready(name) != nil || !p.Providers[name].takesNew() {
			// A provider the operator took out may come back at any
			// moment: look again as often as at one that cannot send.
			wait = min(wait, unavailableWait)
		}
	}
	return max(wait, time.Second)
}

// parkAll moves the parked jobs into their lanes in one statement, and
// wakes this process's loops of those lanes. On error the routes come due
// again in the channel's queue when their leases end.
func (l *channelLoop) parkAll(jobs []job) {
	var p store.RouteParkManyParams
	lanes := map[string]int{}
	for i := range jobs {
		j := &jobs[i]
		if j.park == nil {
			continue
		}
		p.NotificationIds = append(p.NotificationIds, j.row.NotificationID)
		p.RouteIds = append(p.RouteIds, j.row.RouteID)
		p.Attempts = append(p.Attempts, j.row.AttemptCount)
		p.LeaseUntils = append(p.LeaseUntils, *j.row.LeaseUntil)
		p.Lanes = append(p.Lanes, j.park.lane)
		p.DelaySeconds = append(p.DelaySeconds, j.park.delay.Seconds())
		lanes[j.park.lane]++
	}
	n := len(p.RouteIds)
	if n == 0 {
		return
	}
	defer func() {
		l.d.stats.inHand.Add(-int64(n))
		l.d.metrics.InFlight(l.name, -n)
	}()
	p.Now = l.d.now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.d.q.RouteParkMany(ctx, l.d.pool, p); err != nil {
		l.prog.fail(opPark, err, 0)
		return
	}
	for lane, k := range lanes {
		if lane != "" {
			l.d.health.throttled(lane, k)
			l.d.metrics.ProviderThrottled(lane, k)
		}
	}
	l.d.wakeLanes(l.name)
}

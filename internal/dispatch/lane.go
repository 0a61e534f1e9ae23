package dispatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/pause"
	"github.com/heraldhq/herald/internal/store"
)

// ClassNoRoute: the route's channel has routing rules and none matches its
// destination, producer, type and priority (or the channel has no provider
// at all); dead-lettered with a hint naming the rule set to fix.
const ClassNoRoute = "no_route"

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

// planeConns are the dispatcher pool's connections beyond one per channel
// loop and completer worker: the lane loops and the health flush share them.
const planeConns = 4

// parking is where a claimed route goes instead of delivery.
type parking struct {
	lane  string
	delay time.Duration
}

// receiptKey is what the receipts matcher finds a delivered route by: its
// provider's name and the provider's message id, for a provider that
// sends receipts; empty otherwise (the route stays out of
// routes_receipt_key_idx). A message taken in parts has a key per part,
// one per line, in part order (RouteCompleteMany splits them).
func receiptKey(pr *Provider, out channel.Outcome) string {
	if pr == nil || !pr.Receipts || out.Class != channel.Delivered || out.ProviderMessageID == "" {
		return ""
	}
	if len(out.PartMessageIDs) < 2 {
		return pr.Name + " " + oneLine(out.ProviderMessageID)
	}
	var b strings.Builder
	for i, id := range out.PartMessageIDs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(pr.Name + " " + oneLine(id))
	}
	return b.String()
}

// oneLine keeps a provider's id on one line of a receipt key.
func oneLine(id string) string { return strings.ReplaceAll(id, "\n", " ") }

func (j *job) providerName() string {
	if j.provider == nil {
		return ""
	}
	return j.provider.Name
}

// priorityName is routing's word for a route's priority.
func priorityName(p int16) string {
	if p == 0 {
		return "transactional"
	}
	return "bulk"
}

// route picks each deliverable job's provider: it sets job.provider, or
// job.park (the provider is capped, or every provider of its rule has an
// open circuit), or job.outcome (no route). A channel without providers
// leaves job.provider nil: the channel's Deliverer delivers.
func (l *channelLoop) route(jobs []job) {
	p := l.d.plane.cur.Load()
	if !p.hasChannel(l.name) {
		return
	}
	for i := range jobs {
		j := &jobs[i]
		if j.outcome != nil {
			continue
		}
		if l.lane != "" {
			// A lane's routes were routed when they entered it: its provider
			// delivers them, unless its circuit opened meanwhile or it is
			// gone, when they go back to the channel's queue to be routed
			// afresh.
			pr := p.Providers[l.lane]
			if pr == nil || l.d.isOpen(pr.Name) {
				j.park = &parking{}
				if pr != nil && l.d.unready(pr.Name) != nil {
					j.park.delay = unavailableWait
				}
				continue
			}
			j.provider = pr
			continue
		}
		res := l.pick(p, j, j.row.Providers)
		switch {
		case res.NoRoute:
			j.outcome = l.settle(j, "dead_letter", ClassNoRoute, res.Message, res.Hint)
		case res.AllOpen:
			j.park = &parking{delay: l.untilFirstClose(p)}
		default:
			pr := p.Providers[res.Provider]
			switch {
			case pr == nil:
				j.outcome = l.settle(j, "dead_letter", ClassNoRoute,
					fmt.Sprintf("routing chose %q, which is not a provider", res.Provider),
					"fix the rules with `herald providers apply`, then replay")
			case pr.CapPerSecond > 0:
				j.park = &parking{lane: pr.Name}
			default:
				j.provider = pr
			}
		}
	}
}

// pick asks the plane for a job's provider, given the providers tried.
func (l *channelLoop) pick(p *Plane, j *job, tried []string) PickResult {
	res := PickResult{NoRules: true}
	if p.PickFunc != nil {
		res = p.PickFunc(l.name, PickInput{
			Destination:      j.msg.Address,
			Producer:         j.row.Producer,
			NotificationType: j.row.NotificationType,
			Priority:         priorityName(j.row.Priority),
			Tried:            tried,
			IsOpen:           l.d.isOpen,
		})
	}
	if res.NoRules {
		// A channel without rules uses its one provider; with several and
		// no rules there is nothing to choose by.
		names := p.channelProviders(l.name)
		if len(names) == 1 {
			return PickResult{Provider: names[0], AllOpen: l.d.isOpen(names[0]), WrapAround: true}
		}
		return PickResult{NoRoute: true,
			Message: fmt.Sprintf("channel %s has %d providers and no routing rules", l.name, len(names)),
			Hint:    "give channel " + l.name + " routing rules (a catch-all rule without matchers will do) with `herald providers apply`, then replay"}
	}
	return res
}

// failsOver reports whether a transient failure of j at its provider
// sends the next attempt to another provider of its rule at once.
func (l *channelLoop) failsOver(j *job) bool {
	if j.provider == nil {
		return false
	}
	p := l.d.plane.cur.Load()
	res := l.pick(p, j, append(slices.Clip(j.row.Providers), j.provider.Name))
	return !res.NoRoute && !res.AllOpen && !res.WrapAround && res.Provider != j.provider.Name
}

// unavailableWait is how long the routes of a provider that cannot send
// at all (ReadyFunc) wait before they are routed again: each wait costs
// them a claim and a park, and no attempt.
const unavailableWait = 5 * time.Second

// untilFirstClose is how long until the first open circuit of the
// channel's providers closes, or a provider that cannot send is tried
// again: at least a second, at most a minute.
func (l *channelLoop) untilFirstClose(p *Plane) time.Duration {
	wait := time.Minute
	open := *l.d.plane.open.Load()
	for _, name := range p.channelProviders(l.name) {
		if until, ok := open[name]; ok {
			wait = min(wait, time.Until(until))
		} else if l.d.unready(name) != nil {
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

// wakeLanes wakes this process's lane loops of channel ch.
func (d *Dispatcher) wakeLanes(ch string) {
	d.loopsMu.RLock()
	defer d.loopsMu.RUnlock()
	for _, l := range d.loops {
		if l.name == ch && l.lane != "" {
			l.wakeUp()
		}
	}
}

// supervise keeps the loops in line with the plane: a channel loop for
// every channel with providers (beside those Config.Channels has), a lane
// loop for every capped provider, and none for a provider no longer
// capped, whose waiting routes go back to their channel's queue.
func (d *Dispatcher) supervise(ctx, deliverCtx context.Context, wg *sync.WaitGroup) {
	for {
		changed := d.planeChanged()
		d.syncLoops(ctx, deliverCtx, wg)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

func (d *Dispatcher) syncLoops(ctx, deliverCtx context.Context, wg *sync.WaitGroup) {
	p := d.plane.cur.Load()
	// What runs now: channel loops by channel, lane loops by (channel, lane).
	d.loopsMu.RLock()
	channels := map[string]ChannelConfig{}
	lanes := map[[2]string]bool{}
	for _, l := range d.loops {
		if l.lane == "" {
			channels[l.name] = l.cfg
		} else {
			lanes[[2]string{l.name, l.lane}] = true
		}
	}
	d.loopsMu.RUnlock()

	var start []*channelLoop
	wantLanes := map[[2]string]bool{}
	for _, name := range slices.Sorted(maps.Keys(p.Providers)) {
		pr := p.Providers[name]
		cfg, ok := channels[pr.Channel]
		if !ok {
			cfg = d.defaults
			channels[pr.Channel] = cfg
			start = append(start, newChannelLoop(d, pr.Channel, "", cfg))
		}
		if pr.CapPerSecond <= 0 {
			continue
		}
		key := [2]string{pr.Channel, name}
		wantLanes[key] = true
		if !lanes[key] {
			if pr.Concurrency > 0 {
				cfg.Concurrency = pr.Concurrency
			}
			start = append(start, newChannelLoop(d, pr.Channel, name, cfg))
		}
	}

	d.loopsMu.Lock()
	var stopped []*channelLoop
	kept := d.loops[:0]
	for _, l := range d.loops {
		if l.lane != "" && !wantLanes[[2]string{l.name, l.lane}] {
			stopped = append(stopped, l)
			continue
		}
		kept = append(kept, l)
	}
	d.loops = append(kept, start...)
	d.loopsMu.Unlock()

	for _, l := range start {
		lctx, cancel := context.WithCancel(ctx)
		l.stop = cancel
		wg.Go(func() { l.run(lctx, deliverCtx) })
		if l.lane != "" {
			d.log.Info("capped provider's paced loop started", "channel", l.name, "provider", l.lane)
		} else {
			d.log.Info("channel loop started for the plane's providers", "channel", l.name)
		}
	}
	resetChannels := map[string]bool{}
	for _, l := range stopped {
		l.stop()
		l.prog.retired.Store(true)
		resetChannels[l.name] = true
		d.log.Info("provider no longer capped: its waiting routes go back to the channel's queue",
			"channel", l.name, "provider", l.lane)
	}
	for ch := range resetChannels {
		keep := []string{} // not nil: lane = ANY(NULL) would keep every lane
		for key := range wantLanes {
			if key[0] == ch {
				keep = append(keep, key[1])
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		n, err := d.q.RouteLaneReset(rctx, d.pool, store.RouteLaneResetParams{Now: d.now(), Channel: ch, Keep: keep})
		cancel()
		if err != nil {
			d.log.Error("move routes out of lanes no longer capped", "channel", ch, "err", err)
			continue
		}
		d.log.Info("routes moved out of lanes no longer capped", "channel", ch, "routes", n)
	}
}

// hasCappedProvider reports whether ch has a capped provider in p: its
// channel loop then claims with claimRouted.
func (p *Plane) hasCappedProvider(ch string) bool {
	for _, pr := range p.Providers {
		if pr.Channel == ch && pr.CapPerSecond > 0 {
			return true
		}
	}
	return false
}

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

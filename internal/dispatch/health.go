package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/store"
)

// Provider health. Each process counts its attempts per provider in memory
// and adds them to herald.provider_health once a healthInterval (one upsert
// per provider with traffic, not a write per attempt); then it lets the
// database open the circuit of every provider failing transiently beyond
// its threshold and close those whose cool-down has passed
// (ProviderCircuitEvaluate, safe to run from every process at once), and
// reads which circuits are open. Routing skips a provider whose circuit is
// open, so its rules fail over.
const (
	healthInterval = time.Second
	// healthKeep is how long buckets are kept; healthPrune how often the
	// older ones are deleted.
	healthKeep  = 24 * time.Hour
	healthPrune = 10 * time.Minute
)

// providerCounts are one provider's outcomes since the last flush.
type providerCounts struct {
	delivered, transient, permanent, throttled int64
	latencySum, latencyMax                     float64
	// unavailable counts health rounds in which the provider could not
	// send at all, and reason says why (the last one seen).
	unavailable int64
	reason      string
	// failovers counts the routes that failed here and that routing sent
	// on, by the provider it sent them to.
	failovers map[string]int64
}

// healthCounts gathers outcomes until the next flush.
type healthCounts struct {
	mu sync.Mutex
	m  map[string]*providerCounts
}

func newHealthCounts() *healthCounts { return &healthCounts{m: map[string]*providerCounts{}} }

func (h *healthCounts) get(provider string) *providerCounts {
	c := h.m[provider]
	if c == nil {
		c = &providerCounts{}
		h.m[provider] = c
	}
	return c
}

// record counts one attempt at provider. A provider's request to slow
// down is throttling, not a failure that opens its circuit, and an
// attempt that reached no provider says nothing of its health.
func (h *healthCounts) record(provider string, out channel.Outcome, took time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.get(provider)
	switch out.Class {
	case channel.Delivered:
		c.delivered++
	case channel.Transient:
		switch {
		case out.Unsent:
			return
		case out.Throttled:
			c.throttled++
		default:
			c.transient++
		}
	case channel.Permanent:
		c.permanent++
	default:
		return // a skip says nothing of the provider
	}
	s := took.Seconds()
	c.latencySum += s
	c.latencyMax = max(c.latencyMax, s)
}

// throttled counts n routes that waited for provider's cap.
func (h *healthCounts) throttled(provider string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.get(provider).throttled += int64(n)
}

// unavailable records that provider cannot send, and why.
func (h *healthCounts) unavailable(provider, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.get(provider)
	c.unavailable++
	c.reason = reason
}

// failover counts one route sent on from provider from, where its last
// attempt failed, to provider to.
func (h *healthCounts) failover(from, to string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.get(from)
	if c.failovers == nil {
		c.failovers = map[string]int64{}
	}
	c.failovers[to]++
}

// take returns the counts gathered and starts afresh.
func (h *healthCounts) take() map[string]*providerCounts {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.m
	h.m = map[string]*providerCounts{}
	return m
}

// putBack adds counts a failed flush could not write to the next one.
func (h *healthCounts) putBack(m map[string]*providerCounts) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, c := range m {
		o := h.get(name)
		o.delivered += c.delivered
		o.transient += c.transient
		o.permanent += c.permanent
		o.throttled += c.throttled
		o.latencySum += c.latencySum
		o.latencyMax = max(o.latencyMax, c.latencyMax)
		o.unavailable += c.unavailable
		o.reason = cmp.Or(o.reason, c.reason)
		for to, n := range c.failovers {
			if o.failovers == nil {
				o.failovers = map[string]int64{}
			}
			o.failovers[to] += n
		}
	}
}

// runHealth flushes counts and reads circuits every healthInterval while
// the plane has providers, until ctx ends; then it flushes once more.
func (d *Dispatcher) runHealth(ctx context.Context) {
	prog := newProgress(d, "provider health", "")
	t := time.NewTicker(healthInterval)
	defer t.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = d.flushHealth(fctx)
			cancel()
			return
		case <-t.C:
		}
		if len(d.plane.cur.Load().Providers) == 0 {
			continue
		}
		prog.begin()
		err := d.healthRound(ctx, &pruned)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			prog.fail(opHealth, err, healthInterval)
			continue
		}
		prog.done()
		d.signals.Signal(moment{kind: signalHealthFlushed})
	}
}

// healthRound is one flush, circuit evaluation and read.
func (d *Dispatcher) healthRound(ctx context.Context, pruned *time.Time) error {
	for name, pr := range d.plane.cur.Load().Providers {
		if pr.ReadyFunc == nil {
			continue
		}
		err := pr.ReadyFunc()
		if err != nil {
			d.health.unavailable(name, channel.Redact(err.Error(), 200))
		}
		d.metrics.ProviderUnavailability(name, err != nil)
		if was := d.unavailable[name]; (err != nil) != was {
			if err != nil {
				d.log.Warn("provider cannot send: its routes wait without spending attempts", "provider", name, "err", err)
			} else {
				d.log.Info("provider can send again", "provider", name)
			}
		}
		d.unavailable[name] = err != nil
	}
	if err := d.flushHealth(ctx); err != nil {
		return err
	}
	if err := d.q.ProviderCircuitEvaluate(ctx, d.pool, d.now()); err != nil {
		return err
	}
	rows, err := d.q.ProviderCircuitListOpen(ctx, d.pool, d.now())
	if err != nil {
		return err
	}
	// The database's open_until is on its clock; what matters here is how
	// long from now, so convert through the database's own now() reading
	// being close enough (a second's skew shifts a cool-down by a second).
	open := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		open[r.Provider] = r.OpenUntil
	}
	prev := *d.plane.open.Load()
	d.plane.open.Store(&open)
	for name := range d.plane.cur.Load().Providers {
		_, now := open[name]
		_, was := prev[name]
		d.metrics.ProviderCircuit(name, now)
		if now != was {
			if now {
				d.log.Warn("provider circuit open: its rules fail over", "provider", name, "until", open[name])
			} else {
				d.log.Info("provider circuit closed", "provider", name)
			}
		}
	}
	if time.Since(*pruned) > healthPrune {
		if _, err := d.q.ProviderHealthDeleteBefore(ctx, d.pool, time.Now().Add(-healthKeep)); err != nil {
			return err
		}
		*pruned = time.Now()
	}
	return nil
}

// flushHealth writes the counts gathered since the last flush.
func (d *Dispatcher) flushHealth(ctx context.Context) error {
	counts := d.health.take()
	if len(counts) == 0 {
		return nil
	}
	p := store.ProviderHealthAddParams{Now: d.now()}
	for name, c := range counts {
		p.Providers = append(p.Providers, name)
		p.Delivered = append(p.Delivered, c.delivered)
		p.Transient = append(p.Transient, c.transient)
		p.Permanent = append(p.Permanent, c.permanent)
		p.Throttled = append(p.Throttled, c.throttled)
		p.LatencySums = append(p.LatencySums, c.latencySum)
		p.LatencyMaxes = append(p.LatencyMaxes, c.latencyMax)
		p.Unavailable = append(p.Unavailable, c.unavailable)
		p.UnavailableReasons = append(p.UnavailableReasons, c.reason)
		fo := []byte("{}")
		if len(c.failovers) > 0 {
			fo, _ = json.Marshal(c.failovers) // a map of counts always marshals
		}
		p.Failovers = append(p.Failovers, fo)
	}
	if err := d.q.ProviderHealthAdd(ctx, d.pool, p); err != nil {
		d.health.putBack(counts)
		return err
	}
	return nil
}

package dispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/routing"
)

// Plane is the delivery plane the dispatcher routes by: the providers of
// each channel and the routing that picks one per route. The engine builds
// it from herald.providers and herald.routing_rules and swaps in a new one
// (SetPlane) whenever they change; a channel the Plane has no providers for
// is delivered by its ChannelConfig.Deliverer, as before providers existed,
// and its routes record no provider.
type Plane struct {
	// Version is herald.routing_state's version the Plane was built from.
	Version int64
	// Providers maps each provider's name ("sms/acme") to it.
	Providers map[string]*Provider
	// PickFunc chooses the provider of one resolved route of a channel
	// that has providers: routing's Table.Pick, whose input and answer it
	// takes and gives. Required when Providers is not empty.
	PickFunc func(in routing.PickInput) (routing.Decision, error)
}

// Provider is one named instance of a driver for one channel.
type Provider struct {
	Name    string
	Channel string
	// Deliverer delivers the provider's messages. Required.
	Deliverer channel.Deliverer
	// Concurrency bounds this process's deliveries in flight through the
	// provider; 0 takes the channel's.
	Concurrency int
	// CapPerSecond bounds submissions per second across every serve
	// process; 0 is no cap. A capped provider's routes wait in its lane and
	// a loop of their own paces them (see pace.go).
	CapPerSecond int
	// Timeout bounds one attempt; 0 takes the channel's.
	Timeout time.Duration
	// Receipts says the provider sends delivery receipts: its routes'
	// completions record a receipt key ("<provider> <message id>") for the
	// receipts matcher to find them by.
	Receipts bool
	// ReadyFunc, when set, says whether the provider can send at all: nil
	// while it can (or may: an SMPP provider still making its first bind),
	// an error saying why not while it cannot (an SMPP provider none of
	// whose binds is up: the SMSC refuses them or cannot be reached).
	// Routing passes over a provider that cannot send as over one whose
	// circuit is open, and its routes wait (unavailableWait at a time)
	// without spending attempts; its health records why.
	ReadyFunc func() error
	// State is the operator's (routing.StateEnabled, "" alike;
	// routing.StateDraining: routing passes it over as over an open
	// circuit, while the routes already in its lane finish there;
	// routing.StateDisabled: it gets nothing at all, and its lane's routes
	// go back to be routed afresh).
	State string

	// sem bounds deliveries in flight (uncapped providers; a capped one's
	// lane loop has slots of its own). Made by SetPlane.
	sem chan struct{}
}

// planeState holds the current Plane and what the loops need of it.
type planeState struct {
	cur atomic.Pointer[Plane]
	// changed is closed and replaced by SetPlane, so supervisors wait on it.
	mu      sync.Mutex
	changed chan struct{}

	// open maps the providers whose circuit is open to when it closes, as
	// last read from herald.provider_circuits.
	open atomic.Pointer[map[string]time.Time]
}

func newPlaneState() *planeState {
	s := &planeState{changed: make(chan struct{})}
	s.cur.Store(&Plane{})
	empty := map[string]time.Time{}
	s.open.Store(&empty)
	return s
}

// SetPlane replaces the dispatcher's delivery plane; routes claimed from
// now on are routed by p. Safe to call at any time, from any goroutine.
func (d *Dispatcher) SetPlane(p *Plane) {
	if p == nil {
		p = &Plane{}
	}
	old := d.plane.cur.Load()
	for name, pr := range p.Providers {
		// Keep a provider's semaphore across reloads while its concurrency
		// holds, so deliveries in flight stay counted.
		if o, ok := old.Providers[name]; ok && o.sem != nil && cap(o.sem) == pr.Concurrency && pr.sem == nil {
			pr.sem = o.sem
		}
		if pr.sem == nil && pr.Concurrency > 0 {
			pr.sem = make(chan struct{}, pr.Concurrency)
		}
	}
	d.plane.cur.Store(p)
	d.plane.mu.Lock()
	close(d.plane.changed)
	d.plane.changed = make(chan struct{})
	d.plane.mu.Unlock()
}

// Plane returns the dispatcher's current delivery plane.
func (d *Dispatcher) Plane() *Plane { return d.plane.cur.Load() }

// planeChanged returns a channel closed at the next SetPlane.
func (d *Dispatcher) planeChanged() <-chan struct{} {
	d.plane.mu.Lock()
	defer d.plane.mu.Unlock()
	return d.plane.changed
}

// isOpen reports whether routing passes provider over: its circuit is
// open now, it cannot send at all (its ReadyFunc says why), or the
// operator took it out of routing (draining or disabled).
func (d *Dispatcher) isOpen(provider string) bool {
	if pr := d.plane.cur.Load().Providers[provider]; pr != nil && !pr.takesNew() {
		return true
	}
	return d.cannotSend(provider)
}

// cannotSend reports whether provider's circuit is open now, or it cannot
// send at all: what sends the routes waiting in its lane back to be
// routed afresh, as does its being disabled.
func (d *Dispatcher) cannotSend(provider string) bool {
	until, ok := (*d.plane.open.Load())[provider]
	if ok && time.Now().Before(until) {
		return true
	}
	return d.unready(provider) != nil
}

// takesNew reports whether the operator lets routing send p new attempts.
func (p *Provider) takesNew() bool { return p.State == "" || p.State == routing.StateEnabled }

// unready returns why provider cannot send at all, or nil.
func (d *Dispatcher) unready(provider string) error {
	pr := d.plane.cur.Load().Providers[provider]
	if pr == nil || pr.ReadyFunc == nil {
		return nil
	}
	return pr.ReadyFunc()
}

// channelProviders returns the names of ch's providers in p.
func (p *Plane) channelProviders(ch string) []string {
	var out []string
	for name, pr := range p.Providers {
		if pr.Channel == ch {
			out = append(out, name)
		}
	}
	return out
}

// hasChannel reports whether p has providers for ch.
func (p *Plane) hasChannel(ch string) bool {
	for _, pr := range p.Providers {
		if pr.Channel == ch {
			return true
		}
	}
	return false
}

// acquire takes one of the provider's delivery slots, or returns false
// when ctx ends first. A provider without a semaphore is unbounded here.
func (pr *Provider) acquire(ctx context.Context) bool {
	if pr.sem == nil {
		return true
	}
	select {
	case pr.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (pr *Provider) releaseSlot() {
	if pr.sem != nil {
		<-pr.sem
	}
}

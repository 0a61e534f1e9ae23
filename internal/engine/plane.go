package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/pglisten"
	"github.com/heraldhq/herald/internal/routing"
	"github.com/heraldhq/herald/internal/wake"
)

// Reloading the delivery plane. The engine reads herald.providers and
// herald.routing_rules at start, then again whenever routing_apply
// NOTIFYs herald_routing, and every planeCheck it compares
// routing_state's version with its own (a NOTIFY missed while the LISTEN
// connection was down is caught within planeCheck). A provider whose
// settings did not change keeps its Deliverer (and its connections); a
// changed or removed one's Deliverer is closed as soon as its attempts in
// flight are done (at most closeAfter later), so that an SMSC never sees
// the old binds beside the new ones for long: many refuse binds beyond
// their limit. An attempt routed to the old Deliverer that starts after
// it closed sends nothing and spends no attempt (channel.Outcome.Unsent).
// A table that cannot be built (a credential this
// process cannot read) is refused whole: the running plane stays, and the
// error is logged with the field it names.
const (
	planeCheck      = 2 * time.Second
	closeAfter      = 2 * time.Minute
	idleBeforeClose = 500 * time.Millisecond
)

// builtProvider is a provider's Deliverer and the settings it was built
// from.
type builtProvider struct {
	key       string
	deliverer *tracked
}

// tracked is a provider's Deliverer counting its attempts in flight, so
// that a replaced one is closed once they are done.
type tracked struct {
	channel.Deliverer
	inflight atomic.Int64
}

func (t *tracked) Deliver(ctx context.Context, msg *channel.Message) channel.Outcome {
	t.inflight.Add(1)
	defer t.inflight.Add(-1)
	return t.Deliverer.Deliver(ctx, msg)
}

// ready returns the Deliverer's readiness check (dispatch.Provider's
// ReadyFunc), or nil when it has none.
func (t *tracked) ready() func() error {
	if r, ok := t.Deliverer.(interface{ Ready() error }); ok {
		return r.Ready
	}
	return nil
}

// closeWhenIdle closes t once it has had no attempt in flight for
// idleBeforeClose (the dispatcher may have routed one to it just before
// the swap), or after closeAfter whatever is in flight.
func (t *tracked) closeWhenIdle() {
	deadline := time.Now().Add(closeAfter)
	idleSince := time.Now()
	for time.Now().Before(deadline) {
		if t.inflight.Load() > 0 {
			idleSince = time.Now()
		} else if time.Since(idleSince) >= idleBeforeClose {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	closeQuietly(t.Deliverer)
}

// planeWatcher keeps the dispatcher's plane in line with the database.
type planeWatcher struct {
	e       *Engine
	getenv  func(string) string
	log     *slog.Logger
	built   map[string]builtProvider
	version int64
	loaded  bool
	// table is the table last loaded, for the receipts side.
	table atomic.Pointer[routing.Table]
}

// receiptsOf returns provider's receipts settings in the table last
// loaded; nil when it has none.
func (w *planeWatcher) receiptsOf(provider string) *routing.Receipts {
	t := w.table.Load()
	if t == nil {
		return nil
	}
	return t.Providers[provider].Receipts
}

// run reloads on NOTIFY and every planeCheck until ctx ends.
func (w *planeWatcher) run(ctx context.Context) error {
	hint := make(chan struct{}, 1)
	poke := func() {
		select {
		case hint <- struct{}{}:
		default:
		}
	}
	listenCtx, stop := context.WithCancel(ctx)
	defer stop()
	go pglisten.Run(listenCtx, pglisten.Config{
		ConnConfig:    w.e.pool.Config().ConnConfig,
		Topic:         wake.RoutingTopic,
		NotifyFunc:    func(string) { poke() },
		ConnectedFunc: func(bool) { poke() },
		FailedFunc: func(err error, retryIn time.Duration) {
			w.log.Warn("routing listener connection lost; reconnecting", "err", err, "retry_in", retryIn)
		},
	})
	t := time.NewTicker(planeCheck)
	defer t.Stop()
	w.check(ctx, true)
	for {
		select {
		case <-ctx.Done():
			return nil // the Deliverers close with the engine (closeAll)
		case <-hint:
			w.check(ctx, true)
		case <-t.C:
			w.check(ctx, false)
		}
	}
}

// check reloads when forced or when routing_state's version moved.
func (w *planeWatcher) check(ctx context.Context, force bool) {
	if !force && w.loaded {
		v, err := routing.ReadVersion(ctx, w.e.pool)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("read the routing version", "err", err)
			}
			return
		}
		if v == w.version {
			return
		}
	}
	if err := w.reload(ctx); err != nil && ctx.Err() == nil {
		w.log.Error("providers and rules not reloaded; the running ones stay", "err", err)
	}
}

// reload reads the table and swaps the dispatcher's plane.
func (w *planeWatcher) reload(ctx context.Context) error {
	t, err := routing.Load(ctx, w.e.pool)
	if err != nil {
		return err
	}
	if w.loaded && t.Version == w.version {
		return nil
	}
	built := make(map[string]builtProvider, len(t.Providers))
	var fresh []channel.Deliverer
	fail := func(err error) error {
		for _, d := range fresh {
			closeQuietly(d)
		}
		return err
	}
	plane := &dispatch.Plane{Version: t.Version, Providers: map[string]*dispatch.Provider{}}
	for name, p := range t.Providers {
		raw, err := json.Marshal(p)
		if err != nil {
			return fail(fmt.Errorf("providers.%s: %w", name, err))
		}
		b, ok := w.built[name]
		if !ok || b.key != string(raw) {
			d, err := deliverer(name, p.ChannelConfig(), driverEnv{getenv: w.getenv, logger: w.log, receipts: w.e.receipts, metrics: w.e.metrics})
			if err != nil {
				return fail(fmt.Errorf("providers.%s: %w", name, err))
			}
			fresh = append(fresh, d)
			b = builtProvider{key: string(raw), deliverer: &tracked{Deliverer: d}}
		}
		built[name] = b
		plane.Providers[name] = &dispatch.Provider{
			Name: name, Channel: p.Channel, Deliverer: b.deliverer, ReadyFunc: b.deliverer.ready(),
			Concurrency: p.Concurrency, CapPerSecond: p.CapPerSecond, Timeout: p.Timeout, State: p.State,
			Receipts: p.Receipts != nil || (p.Driver == config.DriverSMPP && p.SMPP.Receipts != "none"),
		}
	}
	plane.PickFunc = t.Pick
	w.e.disp.SetPlane(plane)
	w.table.Store(t)
	for name, old := range w.built {
		if b, ok := built[name]; !ok || b.deliverer != old.deliverer {
			go old.deliverer.closeWhenIdle()
		}
	}
	if !w.loaded || t.Version != w.version {
		w.log.Info("providers and rules loaded", "version", t.Version, "providers", len(t.Providers))
	}
	w.built, w.version, w.loaded = built, t.Version, true
	return nil
}

// closeAll closes every provider's Deliverer; Engine.Close runs it, after
// the dispatcher has finished its deliveries.
func (w *planeWatcher) closeAll() {
	for _, b := range w.built {
		closeQuietly(b.deliverer.Deliverer)
	}
	w.built = nil
}

func closeQuietly(d channel.Deliverer) {
	if c, ok := d.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

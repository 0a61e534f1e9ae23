// Package engine assembles herald's engine in one place, as River's Client
// does: one constructor, New, and one Run for every part a `herald serve`
// process runs against the database:
//
//   - the dispatcher (internal/dispatch), delivering due routes through the
//     channels, channel callback (status callbacks to producers,
//     internal/channel/callback) among them unless Config.Callbacks
//     disables it;
//   - the SQL intake worker (internal/sqldoor), when Config.Intake is set;
//   - maintenance (internal/maintenance: River periodic jobs under leader
//     election, and the operator's bulk replay), when Config.Maintenance is
//     set;
//   - the metrics and health endpoint (internal/metrics), when
//     Config.MetricsAddr is set;
//   - the HTTP API (internal/api), on its own address and its own database
//     login, when Config.API is set;
//   - the delivery plane's watcher, which loads providers and routing rules
//     (internal/routing) into the dispatcher and reloads them when
//     `herald providers apply` changes them;
//   - the process's heartbeat, which keeps its row in
//     herald.serve_processes (readiness, parts, version), when
//     Config.Process is set.
//
// `herald serve`, `herald demo`, `herald bench` and the reliability suites
// all run it. A new part (the receipts matcher, the HTTP API) plugs in the
// same way: a field of Config, built by New, run by Run.
//
// # Life of an engine
//
// New validates the configuration and builds every part; it does not touch
// the database, but it binds the metrics listener, so that a bad address
// stops start-up. Run runs every part until its context is canceled, then
// stops each one gracefully (the dispatcher lets deliveries in flight finish,
// maintenance lets running jobs finish) and returns once all have stopped.
// The first part to fail stops the others, and Run returns its error
// prefixed with the part's name. An Engine runs once: Run releases what the
// engine owns when it returns, and an Engine that never runs is released
// with Close.
//
// The engine owns its channels' Deliverers (those given in
// Config.Dispatch.Channels and those New builds from Config.Drivers): it
// closes every one that has a Close method. It never closes the pool it is
// given.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/httpserve"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/operator"
	"github.com/heraldhq/herald/internal/receipt"
	"github.com/heraldhq/herald/internal/sqldoor"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/telemetry"
	"github.com/heraldhq/herald/internal/vet"
	"github.com/heraldhq/herald/schema"
)

// Errors returned by Run.
var (
	// ErrRunning is returned by Run when the Engine is running already.
	ErrRunning = errors.New("engine is running already")
	// ErrClosed is returned by Run when the Engine has run before or was
	// closed.
	ErrClosed = errors.New("engine is closed")
)

// Config configures an Engine. Each optional part runs only when its field
// is set; the dispatcher always runs.
type Config struct {
	// Logger receives every part's records, each with a "component" key
	// (dispatch, intake, maintenance, metrics). Default: discard.
	Logger *slog.Logger

	// Dispatch configures the dispatcher. Its Channels are the channels
	// given with a Deliverer (a test's, the bench's, the demo's); together
	// with Drivers there must be at least one. Its Logger and Metrics, when
	// nil, are the engine's.
	Dispatch dispatch.Config
	// Drivers are channels configured by driver, as serve's configuration
	// file has them: New builds each one's Deliverer, reading its secrets
	// through GetenvFunc, and adds it to the dispatcher's channels. A name
	// may not be in both Drivers and Dispatch.Channels.
	Drivers map[string]config.Channel
	// GetenvFunc reads the environment variables the Drivers' secrets name.
	// Default: no variables (a secret taken from the environment is then
	// missing).
	GetenvFunc func(string) string
	// Callbacks configures channel callback, status callbacks to
	// producers, which New adds to the dispatcher's channels unless
	// Callbacks.Disabled is set or Dispatch.Channels configures channel
	// "callback" itself (a test's own Deliverer).
	Callbacks Callbacks

	// Intake, when not nil, runs the SQL intake worker with this
	// configuration. Its Logger, when nil, is the engine's; its ResultFunc,
	// if set, is called after the engine's metrics counted the result.
	Intake *sqldoor.WorkerConfig
	// Vet tunes the vetter, which runs in every engine: it checks the
	// routes a producer's login stored itself before any dispatcher
	// claims them (package vet). Its Logger, when nil, is the engine's;
	// its Limits, when zero, are Intake's.
	Vet vet.Config
	// Maintenance, when not nil, runs maintenance with this configuration,
	// and the operator's bulk replay worker beside it. Its Logger and
	// Metrics, when nil, are the engine's.
	Maintenance *maintenance.Config

	// ReceiptsAddr, when set, is the address serve's delivery-receipts
	// endpoint listens on (POST or GET /receipts/<provider>, as each
	// provider's receipts settings say); providers post receipts there.
	ReceiptsAddr string
	// ReceiptsServer bounds the receipts endpoint's connections: its read,
	// write and idle timeouts and how many may be open (internal/httpserve;
	// zero values take its defaults). Its Logger is the engine's.
	ReceiptsServer httpserve.Config
	// Receipts tunes the receipts matcher; its ReceiptsFunc, Logger and
	// Metrics are the engine's.
	Receipts receipt.MatcherConfig

	// Registry, when not nil, is where New registers herald's metric
	// families (so it must not hold them already), which every part records
	// into (see Engine.Metrics); nil records nothing.
	Registry *prometheus.Registry
	// MetricsAddr, when set, is the address (e.g. ":9090") the engine serves
	// /metrics (Registry, with the Go runtime, process and backlog
	// collectors added), /healthz and /readyz on. It requires Registry.
	MetricsAddr string
	// MetricsServer bounds the metrics endpoint's connections, as
	// ReceiptsServer the receipts endpoint's.
	MetricsServer httpserve.Config

	// API, when not nil, serves the HTTP API (internal/api) on APIAddr
	// (required then) with this configuration. Its Pool, the API's own
	// login (see api.Connect), is required, and the engine does not close
	// it; its Logger and Metrics, when nil, are the engine's, and its
	// ReadyFunc, when nil, checks the migrations on the engine's pool.
	API     *api.Config
	APIAddr string

	// Process, when not nil, keeps this process's row in
	// herald.serve_processes while Run runs (see Process): serve sets
	// it; engines of tests, benchmarks and the demo need not.
	Process *Process

	// TracerProvider, when set, makes the spans of every part: the API's
	// requests, the intake's batches, the dispatcher's claims, attempts and
	// completions (callbacks among them), and the receipts matcher's
	// batches. Nil: TracesFromEnv decides, and otherwise there are none.
	TracerProvider trace.TracerProvider
	// TracesFromEnv, when TracerProvider is nil, builds the tracer
	// provider from the standard OTEL_* environment variables
	// (internal/telemetry: off unless OTEL_TRACES_EXPORTER=otlp); Close
	// flushes its spans. A variable it cannot use stops New. FromConfig
	// sets it.
	TracesFromEnv bool
}

// MetricsAddrError is the error New returns when Config.MetricsAddr cannot
// be listened on. Its message is the listener's.
type MetricsAddrError struct{ Err error }

// Error returns the listener's error message.
func (e *MetricsAddrError) Error() string { return e.Err.Error() }

// Unwrap returns the listener's error.
func (e *MetricsAddrError) Unwrap() error { return e.Err }

// part is one long-running part of the engine. run blocks until ctx is
// canceled, stops its part gracefully and returns nil; an error stops the
// whole engine.
type part struct {
	name string
	run  func(ctx context.Context) error
}

// Engine is herald's engine: the dispatcher and the parts Config enables.
// Create it with New and run it with Run.
type Engine struct {
	pool     *pgxpool.Pool
	logger   *slog.Logger
	metrics  *metrics.Metrics
	disp     *dispatch.Dispatcher
	channels []string // every channel the dispatcher delivers, sorted
	parts    []part
	// receipts stores the SMPP binds' receipts and inbound messages,
	// every bind's together (receipt.Group).
	receipts *receipt.Group

	metricsAddr  net.Addr
	receiptsAddr net.Addr
	apiAddr      net.Addr
	watcher      *planeWatcher
	beat         *heartbeat           // nil: no row in herald.serve_processes
	tracer       trace.TracerProvider // nil: no spans
	cpuProfile   string               // CPUProfileEnv's path; "": none
	closers      []func()             // run once by Close, in reverse order
	closeOnce    sync.Once
	running      atomic.Bool
	closed       atomic.Bool
}

// New returns an Engine on the database behind pool with every part cfg
// enables built, or an error naming the first invalid field or the part
// that could not be built (a *MetricsAddrError for a metrics address that
// cannot be listened on). New owns the Deliverers of cfg.Dispatch.Channels
// from the moment it is called: when it fails, it closes them.
func New(pool *pgxpool.Pool, cfg *Config) (_ *Engine, err error) {
	if cfg == nil {
		cfg = &Config{}
	}
	e := &Engine{pool: pool, logger: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))}
	for _, ch := range cfg.Dispatch.Channels {
		e.closeDeliverer(ch)
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	switch {
	case pool == nil:
		return nil, errors.New("new engine: pool is required")
	case cfg.MetricsAddr != "" && cfg.Registry == nil:
		return nil, errors.New("new engine: MetricsAddr requires a Registry")
	}
	e.cpuProfile = getenvOrNone(cfg.GetenvFunc)(CPUProfileEnv)
	e.receipts = receipt.NewGroup(pool)
	if cfg.Registry != nil {
		e.metrics = metrics.New(cfg.Registry)
	}
	if err := e.setTracer(cfg); err != nil {
		return nil, err
	}

	dcfg, err := e.dispatchConfig(cfg)
	if err != nil {
		return nil, err
	}
	e.channels = slices.Sorted(maps.Keys(dcfg.Channels))
	if e.disp, err = dispatch.New(pool, dcfg); err != nil {
		return nil, err
	}
	e.closers = append(e.closers, e.disp.Close)
	e.parts = append(e.parts, part{"dispatch", e.disp.Run})
	// The delivery plane: providers and rules from the database, reloaded
	// when they change (plane.go).
	w := &planeWatcher{e: e, getenv: getenvOrNone(cfg.GetenvFunc), log: e.component("routing")}
	e.watcher = w
	e.closers = append(e.closers, w.closeAll)
	e.parts = append(e.parts, part{"routing", w.run})
	// The receipts matcher runs in every engine (SKIP LOCKED shares the
	// work); the endpoint only where ReceiptsAddr says.
	if err := e.addReceipts(cfg, w); err != nil {
		return nil, err
	}

	vcfg := cfg.Vet
	vcfg.Logger = cmp.Or(vcfg.Logger, e.component("vet"))
	if vcfg.Limits == (intake.Limits{}) && cfg.Intake != nil {
		vcfg.Limits = cfg.Intake.Limits
	}
	e.parts = append(e.parts, part{"vet", vet.New(pool, &vcfg).Run})

	if cfg.Intake != nil {
		if err := e.addIntake(*cfg.Intake); err != nil {
			return nil, err
		}
	}
	if cfg.Maintenance != nil {
		if err := e.addMaintenance(*cfg.Maintenance); err != nil {
			return nil, err
		}
	}
	if cfg.MetricsAddr != "" {
		if err := e.addMetricsEndpoint(cfg.Registry, cfg.MetricsAddr, cfg.MetricsServer); err != nil {
			return nil, err
		}
	}
	if cfg.API != nil {
		if err := e.addAPI(*cfg.API, cfg.APIAddr); err != nil {
			return nil, err
		}
	}
	if cfg.Process != nil {
		if err := e.addHeartbeat(*cfg.Process, cfg); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// addAPI builds the HTTP API and binds its listener, which serves once Run
// runs the part: a bad address stops New.
func (e *Engine) addAPI(cfg api.Config, addr string) error {
	if addr == "" {
		return errors.New("new engine: API requires APIAddr")
	}
	logger := cmp.Or(cfg.Logger, e.component("api"))
	cfg.Logger = logger
	cfg.Metrics = cmp.Or(cfg.Metrics, e.metrics)
	cfg.TracerProvider = cmp.Or(cfg.TracerProvider, e.tracer)
	if cfg.ReadyFunc == nil {
		migrator := schema.NewMigrator(e.pool, nil)
		cfg.ReadyFunc = func(ctx context.Context) error {
			current, err := migrator.Current(ctx)
			switch {
			case err != nil:
				return fmt.Errorf("migrations: %w", err)
			case !current:
				return errors.New("migrations pending: run herald migrate up")
			}
			return nil
		}
	}
	srv, err := api.New(&cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := api.Listen(ctx, addr)
	cancel()
	if err != nil {
		return fmt.Errorf("api.listen: %w", err)
	}
	e.closers = append(e.closers, func() { _ = ln.Close() })
	e.apiAddr = ln.Addr()
	e.parts = append(e.parts, part{"api", func(ctx context.Context) error {
		logger.Info("api listening", "addr", ln.Addr().String())
		return srv.Serve(ctx, ln)
	}})
	return nil
}

// setTracer sets the tracer provider of every part: cfg.TracerProvider,
// or the one the OTEL_* variables describe if cfg.TracesFromEnv, which
// Close then flushes and stops (last, after every part has ended its
// spans).
func (e *Engine) setTracer(cfg *Config) error {
	e.tracer = cfg.TracerProvider
	if e.tracer != nil || !cfg.TracesFromEnv {
		return nil
	}
	p, err := telemetry.FromEnv(context.Background())
	if err != nil {
		return fmt.Errorf("new engine: tracing: %w", err)
	}
	if !p.Enabled {
		return nil
	}
	e.tracer = p
	e.closers = append(e.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			e.logger.Warn("flush traces", "err", err)
		}
	})
	e.logger.Info("tracing on", "exporter", p.Exporter)
	return nil
}

// APIAddr returns the address the HTTP API is bound to, or nil when
// Config.API was nil.
func (e *Engine) APIAddr() net.Addr { return e.apiAddr }

// dispatchConfig returns the dispatcher's configuration: cfg.Dispatch with
// a Deliverer built for each of cfg.Drivers (which Close closes), and the
// engine's logger and metrics where it has none.
func (e *Engine) dispatchConfig(cfg *Config) (*dispatch.Config, error) {
	dcfg := cfg.Dispatch
	dcfg.Channels = maps.Clone(dcfg.Channels)
	if dcfg.Channels == nil {
		dcfg.Channels = map[string]dispatch.ChannelConfig{}
	}
	dcfg.Logger = cmp.Or(dcfg.Logger, e.component("dispatch"))
	dcfg.Metrics = cmp.Or(dcfg.Metrics, e.metrics)
	dcfg.TracerProvider = cmp.Or(dcfg.TracerProvider, e.tracer)
	getenv := getenvOrNone(cfg.GetenvFunc)
	if _, given := dcfg.Channels[channel.Callback]; !given && !cfg.Callbacks.Disabled {
		if _, dup := cfg.Drivers[channel.Callback]; dup {
			return nil, errors.New("new engine: channel callback is herald's own; configure it in Callbacks, not Drivers")
		}
		ch, err := callbackChannel(e.pool, cfg.Callbacks, dcfg.Logger)
		if err != nil {
			return nil, fmt.Errorf("callbacks: %w", err)
		}
		e.closeDeliverer(ch)
		dcfg.Channels[channel.Callback] = ch
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Drivers)) {
		if _, dup := dcfg.Channels[name]; dup {
			return nil, fmt.Errorf("new engine: channel %q is in both Drivers and Dispatch.Channels", name)
		}
		// Every deliverer logs its own "channel" key.
		ch, err := channelConfig(name, cfg.Drivers[name], driverEnv{getenv: getenv, logger: dcfg.Logger, receipts: e.receipts, metrics: e.metrics})
		if err != nil {
			return nil, fmt.Errorf("channels.%s: %w", name, err)
		}
		e.closeDeliverer(ch)
		dcfg.Channels[name] = ch
	}
	return &dcfg, nil
}

// getenvOrNone is getenv, or a lookup that finds no variable.
func getenvOrNone(getenv func(string) string) func(string) string {
	if getenv == nil {
		return func(string) string { return "" }
	}
	return getenv
}

// component returns the engine's logger for one part.
func (e *Engine) component(name string) *slog.Logger { return e.logger.With("component", name) }

// closeDeliverer makes Close close ch's Deliverer, if it has a Close method.
func (e *Engine) closeDeliverer(ch dispatch.ChannelConfig) {
	if c, ok := ch.Deliverer.(interface{ Close() error }); ok {
		e.closers = append(e.closers, func() { _ = c.Close() })
	}
}

func (e *Engine) addIntake(cfg sqldoor.WorkerConfig) error {
	cfg.Logger = cmp.Or(cfg.Logger, e.component("intake"))
	cfg.TracerProvider = cmp.Or(cfg.TracerProvider, e.tracer)
	if then := cfg.ResultFunc; e.metrics != nil || then != nil {
		cfg.ResultFunc = func(producer, result string) {
			e.metrics.Intent(producer, result)
			if then != nil {
				then(producer, result)
			}
		}
	}
	w, err := sqldoor.NewWorker(e.pool, &cfg)
	if err != nil {
		return err
	}
	e.parts = append(e.parts, part{"intake", w.Run})
	return nil
}

func (e *Engine) addMaintenance(cfg maintenance.Config) error {
	cfg.Logger = cmp.Or(cfg.Logger, e.component("maintenance"))
	cfg.Metrics = cmp.Or(cfg.Metrics, e.metrics)
	// The operator's bulk replay (herald dead-letters replay --async) is
	// worked wherever maintenance runs.
	more := cfg.Workers
	cfg.Workers = func(w *river.Workers) error {
		if err := operator.AddWorkers(w, e.pool, nil); err != nil {
			return err
		}
		if more != nil {
			return more(w)
		}
		return nil
	}
	m, err := maintenance.New(e.pool, &cfg)
	if err != nil {
		return err
	}
	e.parts = append(e.parts, part{"maintenance", m.Run})
	return nil
}

// addMetricsEndpoint binds the metrics listener, which serves from now on:
// a bad address stops New. The channels are reported in the backlog gauges
// even when empty; /readyz fails, and herald_ready is 0, while the
// dispatcher reports a stall.
func (e *Engine) addMetricsEndpoint(reg *prometheus.Registry, addr string, cfg httpserve.Config) error {
	logger := e.component("metrics")
	hcfg := &metrics.HandlerConfig{Pool: e.pool, Gatherer: reg, Logger: logger, ProgressFunc: e.disp.CheckProgress}
	cs, err := metrics.ServeCollectors(e.pool, &metrics.BacklogCollectorConfig{Channels: e.channels, Logger: logger}, hcfg)
	if err != nil {
		return err
	}
	for _, c := range cs {
		var are prometheus.AlreadyRegisteredError
		if err := reg.Register(c); err != nil && !errors.As(err, &are) {
			return fmt.Errorf("register collector: %w", err)
		}
	}
	h, err := metrics.NewHandler(hcfg)
	if err != nil {
		return err
	}
	scfg := cfg
	scfg.Logger = cmp.Or(scfg.Logger, logger)
	srv, err := httpserve.New(h, &scfg)
	if err != nil {
		return fmt.Errorf("new engine: MetricsServer: %w", err)
	}
	ln, err := httpserve.Listen(context.Background(), "metrics", addr)
	if err != nil {
		return &MetricsAddrError{Err: err}
	}
	e.metricsAddr = ln.Addr()
	e.serveNow("metrics", "metrics endpoint listening", logger, srv, ln)
	return nil
}

// addReceipts adds the receipts matcher, and the receipts endpoint when
// cfg.ReceiptsAddr is set. Both read each provider's receipts settings
// from the plane watcher's table.
func (e *Engine) addReceipts(cfg *Config, w *planeWatcher) error {
	mcfg := cfg.Receipts
	mcfg.ReceiptsFunc = w.receiptsOf
	mcfg.Logger = cmp.Or(mcfg.Logger, e.component("receipts"))
	mcfg.Metrics = cmp.Or(mcfg.Metrics, e.metrics)
	mcfg.TracerProvider = cmp.Or(mcfg.TracerProvider, e.tracer)
	m, err := receipt.NewMatcher(e.pool, mcfg)
	if err != nil {
		return err
	}
	e.parts = append(e.parts, part{"receipts", m.Run})
	// Receipts are matched as they are stored; the matcher's rounds take
	// the ones that found no route yet, and the SQL door's.
	e.receipts.MatchWith(m)
	if cfg.ReceiptsAddr == "" {
		return nil
	}
	h := receipt.Handler(receipt.HandlerConfig{Pool: e.pool, ReceiptsFunc: w.receiptsOf,
		GetenvFunc: w.getenv, Logger: mcfg.Logger, Metrics: e.metrics, Matcher: m})
	scfg := cfg.ReceiptsServer
	scfg.Logger = cmp.Or(scfg.Logger, mcfg.Logger)
	srv, err := httpserve.New(h, &scfg)
	if err != nil {
		return fmt.Errorf("new engine: ReceiptsServer: %w", err)
	}
	ln, err := httpserve.Listen(context.Background(), "receipts", cfg.ReceiptsAddr)
	if err != nil {
		return fmt.Errorf("receipts endpoint: %w", err)
	}
	e.receiptsAddr = ln.Addr()
	e.serveNow("receipts endpoint", "receipts endpoint listening", mcfg.Logger, srv, ln)
	return nil
}

// serveNow serves srv on ln from now on (before Run, so that health
// checks answer while the engine starts) as part name, which logs msg and
// stops it once Run's context is done; Close stops it too.
func (e *Engine) serveNow(name, msg string, logger *slog.Logger, srv *httpserve.Server, ln net.Listener) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	e.closers = append(e.closers, cancel)
	e.parts = append(e.parts, part{name, func(ctx context.Context) error {
		logger.Info(msg, "addr", ln.Addr().String())
		<-ctx.Done()
		cancel()
		return <-done
	}})
}

// ReceiptsAddr returns the address the receipts endpoint listens on; nil
// when Config.ReceiptsAddr was empty.
func (e *Engine) ReceiptsAddr() net.Addr { return e.receiptsAddr }

// Run runs every part until ctx is canceled, then stops them gracefully and
// returns nil once all have stopped; the first part to fail stops the
// others, and Run returns its error prefixed with its name. Run releases
// what the engine owns when it returns. It returns ErrRunning if the Engine
// is running already and ErrClosed if it ran before or was closed. With
// CPUProfileEnv set, it profiles the process while it runs, and returns an
// error naming the variable at once if the profile cannot be written.
func (e *Engine) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer e.running.Store(false)
	if e.closed.Load() {
		return ErrClosed
	}
	defer e.Close()
	if e.cpuProfile != "" {
		stop, err := StartCPUProfile(e.cpuProfile)
		if err != nil {
			return fmt.Errorf("%s: %w", CPUProfileEnv, err)
		}
		defer stop()
	}

	// The providers are loaded before the dispatcher claims, so that no
	// route of a channel with providers goes through the channel's own
	// driver for want of them; a database that does not answer within
	// planeCheck leaves that to the watcher's next try.
	lctx, cancel := context.WithTimeout(ctx, planeCheck)
	e.watcher.check(lctx, true)
	cancel()

	if e.beat != nil {
		e.beat.start(ctx)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		e.warnUnservedChannels(gctx)
		return nil
	})
	for _, p := range e.parts {
		g.Go(func() error {
			if err := p.run(gctx); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			e.logger.Info("component stopped", "component", p.name)
			return nil
		})
	}
	err := g.Wait()
	if e.beat != nil {
		e.beat.stop(err)
	}
	return err
}

// Close releases what the engine owns: the dispatcher's connections, the
// metrics listener and the channels' Deliverers. Run does so when it
// returns; Close is for an Engine that never ran, and is safe to call more
// than once. It does not close the pool.
func (e *Engine) Close() {
	e.closed.Store(true)
	e.closeOnce.Do(func() {
		for i := len(e.closers) - 1; i >= 0; i-- {
			e.closers[i]()
		}
	})
}

// Metrics returns the metrics the engine records into, for a client in the
// same process to record into as well; nil (which records nothing) when
// Config.Registry was nil.
func (e *Engine) Metrics() *metrics.Metrics { return e.metrics }

// MetricsAddr returns the address the metrics endpoint is bound to, or nil
// when Config.MetricsAddr was empty.
func (e *Engine) MetricsAddr() net.Addr { return e.metricsAddr }

// Stats returns the dispatcher's counters.
func (e *Engine) Stats() dispatch.Stats { return e.disp.Stats() }

// warnUnservedChannels logs, once at start, a warning for every channel
// with routes waiting (pending, claimed or failed) that this engine does
// not deliver: with no engine configured for it, such routes would wait
// forever without a word. Another engine may deliver the channel, so it is
// a warning, not an error. It reads the due index once (an index-only
// scan, as the backlog metric does), beside the parts, so start-up does
// not wait for it.
func (e *Engine) warnUnservedChannels(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rows, err := store.New().RouteBacklogByChannel(ctx, e.pool, nil)
	if err != nil {
		if ctx.Err() == nil {
			e.logger.Warn("could not check for routes of channels this process does not deliver", "err", err)
		}
		return
	}
	for _, r := range rows {
		if r.Backlog == 0 || slices.Contains(e.channels, r.Channel) {
			continue
		}
		e.logger.Warn("routes are waiting for a channel this process does not deliver",
			"channel", r.Channel, "routes", r.Backlog, "lag_seconds", r.LagSeconds,
			"hint", "configure channels."+r.Channel+" here, or run a herald serve that does")
	}
}

// ConfigurePool sets on cfg the run-time settings of the engine's
// connections, unless cfg (its URL) sets them already. Give the pool passed
// to New this configuration.
//
// enable_seqscan=off: every statement the engine runs is written for an
// index (the due index, primary keys, the intake's id), but pgx prepares
// them and Postgres switches to a cached generic plan after five runs;
// planned against the statistics of a fresh or freshly emptied table, that
// plan scans routes sequentially until autovacuum's ANALYZE catches up, and
// completions slow down by an order of magnitude meanwhile. With seq scans
// priced out the plans stay on the indexes whatever the statistics say;
// plan_cache_mode=force_custom_plan recovered much less, since it plans
// every statement anew (herald bench's figures are in commit 53d6f34).
// Catalog reads without an index still scan: the setting prices seq scans,
// it does not forbid them.
//
// jit=off: pricing seq scans out prices a one-row table's scan at 1e10,
// far above jit_above_cost, so Postgres JIT-compiled every such statement:
// the plane watcher's read of routing_state, every two seconds in every
// process, spent 130 ms compiling (250 ms on a loaded machine) to read one
// row, about a tenth of a core (pg_stat_statements' jit_* columns, herald
// bench -mode scale). herald's statements are short and index-bound; JIT
// never pays for itself on them.
//
// plan_cache_mode=force_generic_plan: Postgres keeps planning a prepared
// statement afresh while a custom plan looks cheaper than the generic one,
// and the claim's always does: with its LIMIT and `now` known, the custom
// plan's cost counts a hundred rows, the generic plan's a tenth of the
// table. So every claim was planned again, a third of its database time
// (pg_stat_statements: 5,020 plans in 6,017 claims, 9.6 µs per route,
// herald bench). The generic plans are the same index scans, and
// with seq scans priced out they stay so.
func ConfigurePool(cfg *pgxpool.Config) {
	if _, set := cfg.ConnConfig.RuntimeParams["enable_seqscan"]; !set {
		cfg.ConnConfig.RuntimeParams["enable_seqscan"] = "off"
	}
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
}

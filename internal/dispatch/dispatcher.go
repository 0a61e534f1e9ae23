// Package dispatch is herald's scheduler: it claims due routes in batches
// with FOR UPDATE SKIP LOCKED under a lease, resolves their recipients,
// delivers them through the channels outside any transaction, and writes
// the outcomes back in fenced batches: published, failed with a backoff,
// dead-lettered or skipped.
//
// # Claiming
//
// Each configured channel has its own loop and in-flight limit. A loop
// claims at most as many routes as it has free delivery slots (and at most
// BatchSize) in one statement that moves them to 'claimed', counts the
// attempt and writes the lease's end to lease_until. A route whose
// dispatcher dies therefore comes due again when its lease ends. No
// indexed column changes, so the claim is a HOT update: the route keeps
// its place in routes_due_idx, and claims step over the routes in flight
// at the head of that index. The claim
// commits asynchronously (it does not wait for its WAL to reach disk):
// nothing outside the database has acted on it yet, and a claim lost in a
// database crash only makes its routes due again, to be delivered again
// like any delivery in flight at a crash. A claim
// that filled its batch is followed by another at once; otherwise the loop
// sleeps until a NOTIFY on herald_routes (see wake.RoutesTopic; a payload
// naming a channel wakes only that channel's loop), the next
// route's due time, or the poll fallback, whichever comes first.
//
// # Completing
//
// Outcomes go through a bounded buffer to completer goroutines that write
// them in batches of up to BatchSize with one statement each, committed
// synchronously. Every completion is fenced on the attempt taken at claim
// and on the claim's lease end, which no other claim of the route shares: a
// completion whose lease expired and whose route was claimed again (or
// whose claim a database crash undid) changes nothing, and is counted as
// "stale" in the metrics.
//
// # Database timeouts and progress
//
// Every statement the dispatcher runs (claim, recipient lookup, next due
// time, completion, release) runs on connections of its own pool, derived
// from the pool given to New, whose sessions start with lock_timeout
// (Config.LockTimeout, default 2s) and statement_timeout
// (Config.StatementTimeout, default 10s) as run-time parameters. They cost
// nothing per statement (no SET, no extra round trip) and they bound every
// wait, including one for a table lock, which a statement takes before any
// set_config inside it could apply. The pool is sized for the dispatcher
// (one connection per channel loop, one per completer worker); everything
// else the caller runs on its own pool (maintenance, REINDEX CONCURRENTLY,
// retention, the intake) keeps that pool's settings.
//
// A statement canceled by either timeout counts in
// herald_dispatch_db_timeouts_total; a failing claim, lookup or completion
// is logged when its episode begins and when it ends, not at every retry,
// and is retried with a capped exponential backoff. A
// completion is retried until it is written (its routes' leases protect
// them meanwhile). CheckProgress reports a part whose round of statements
// has gone without success for longer than Config.StallTimeout: what
// /readyz shows.
//
// # Memory
//
// In-flight deliveries are bounded per channel by Concurrency, and the
// completion buffer by CompletionBuffer; a slow database blocks deliveries
// from finishing, which stops claims. A backlog of any size costs nothing
// in memory.
//
// # Shutdown
//
// When Run's context is canceled the loops stop claiming, deliveries in
// flight get ShutdownTimeout to finish (then their contexts are canceled,
// and they are recorded as transient failures), routes claimed but not yet
// started are released (due again at once, their attempt handed back), and
// the completion buffer is flushed, within ShutdownTimeout or
// StatementTimeout, whichever is longer.
package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/pgarray"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/template"
	"github.com/heraldhq/herald/internal/tracing"
)

// Defaults for Config and ChannelConfig.
const (
	// DefaultBatchSize is Config.BatchSize's default: routes per claim
	// (never more than the channel's free slots) and per completion write.
	DefaultBatchSize = 500
	// DefaultPollInterval is Config.PollInterval's default.
	DefaultPollInterval = time.Second
	// DefaultShutdownTimeout is Config.ShutdownTimeout's default.
	DefaultShutdownTimeout = 20 * time.Second
	// DefaultConcurrency is ChannelConfig.Concurrency's default, as in the
	// SMS orchestrator herald replaces.
	DefaultConcurrency = 16
	// DefaultMaxAttempts is ChannelConfig.MaxAttempts's default.
	DefaultMaxAttempts = 10
	// DefaultTimeout is ChannelConfig.Timeout's default.
	DefaultTimeout = channel.DefaultTimeout
	// DefaultLockTimeout is Config.LockTimeout's default. The dispatcher's
	// statements lock only rows no other dispatcher holds (SKIP LOCKED,
	// fenced completions), so a wait of even a second means someone else
	// holds a lock they should not (a forgotten psql transaction, a manual
	// LOCK TABLE, a migration); 2s leaves room for a short ALTER or an
	// operator's quick UPDATE, and is short enough that the loop notices,
	// counts and reports it rather than queueing behind it.
	DefaultLockTimeout = 2 * time.Second
	// DefaultStatementTimeout is Config.StatementTimeout's default: a claim
	// or completion of 500 routes takes milliseconds, so 10s is three
	// orders of magnitude of headroom, and still well inside a lease
	// (default 60s), so a stuck statement fails and is retried before its
	// routes would be claimed again.
	DefaultStatementTimeout = 10 * time.Second
	// DefaultStallTimeout is Config.StallTimeout's default: five lock
	// timeouts, as long as one statement may run.
	DefaultStallTimeout = 10 * time.Second
)

// Errors returned by Run and CheckProgress.
var (
	// ErrRunning is returned by Run when the Dispatcher is running already.
	ErrRunning = errors.New("dispatcher is running already")
	// ErrClosed is returned by Run when the Dispatcher has run before or
	// was closed: Run closes its connections when it returns.
	ErrClosed = errors.New("dispatcher is closed")
	// ErrStalled is wrapped by CheckProgress's error when a part of the
	// dispatcher has gone without a successful statement for longer than
	// Config.StallTimeout.
	ErrStalled = errors.New("dispatcher is not making progress")
)

// Config configures a Dispatcher.
type Config struct {
	// Channels maps a route's channel name ("sms", "email", "webhook") to
	// how it is delivered. Routes of channels not listed here stay due
	// until a dispatcher that has them runs. At least one is required.
	Channels map[string]ChannelConfig
	// BatchSize bounds how many routes one claim takes and how many
	// outcomes one completion writes. Default 500.
	BatchSize int
	// PollInterval is the longest a channel loop sleeps without a NOTIFY
	// or a known due time. Default 1s.
	PollInterval time.Duration
	// ShutdownTimeout is how long deliveries in flight may run on after
	// Run's context is canceled, before their own contexts are canceled.
	// The outcomes are then written within ShutdownTimeout or
	// StatementTimeout, whichever is longer. Default 20s.
	ShutdownTimeout time.Duration
	// CompletionBuffer bounds the outcomes waiting to be written. Default
	// 4 × BatchSize.
	CompletionBuffer int
	// LockTimeout is the lock_timeout of the dispatcher's connections: how
	// long any of its statements waits for a lock (a row, or the whole
	// table) before the database cancels it. Default 2s.
	LockTimeout time.Duration
	// StatementTimeout is the statement_timeout of the dispatcher's
	// connections. Default 10s.
	StatementTimeout time.Duration
	// StallTimeout is how long a channel loop or completer worker may go
	// without a successful round of statements (failing, or one statement
	// running) before CheckProgress reports the dispatcher stalled.
	// Default 10s.
	StallTimeout time.Duration
	// Logger receives the dispatcher's records. Default: discard.
	Logger *slog.Logger
	// Metrics records attempts, publications and dead letters; nil records
	// nothing.
	Metrics *metrics.Metrics
	// Plane is the delivery plane to start with: providers and routing.
	// Nil: none until SetPlane, every channel delivered by its Deliverer.
	Plane *Plane
	// NowFunc, if set, is the clock every statement uses instead of the
	// database's now(): for tests that move time forward.
	NowFunc func() time.Time
	// TracerProvider, when set, makes a span of each claim batch, delivery
	// attempt and completion batch (trace.go). Nil makes none.
	TracerProvider trace.TracerProvider
}

// ChannelConfig is one channel's delivery policy.
type ChannelConfig struct {
	// Deliverer delivers the channel's messages. Required.
	Deliverer channel.Deliverer
	// Concurrency bounds the deliveries in flight. Default 16.
	Concurrency int
	// MaxAttempts is the attempt budget of routes that do not set their
	// own (routes.max_attempts = 0). Default 10.
	MaxAttempts int
	// Backoff spaces the retries after transient failures.
	Backoff BackoffConfig
	// Timeout bounds one delivery attempt. Default 30s.
	Timeout time.Duration
	// Lease is how long a claimed route is reserved for its dispatcher
	// before it comes due again; it must exceed Timeout, with room for the
	// completion to be written. Default Timeout + 30s.
	Lease time.Duration
}

func (c *Config) validate() error {
	if len(c.Channels) == 0 && (c.Plane == nil || len(c.Plane.Providers) == 0) {
		return errors.New("Channels must configure at least one channel, or Plane a provider")
	}
	if c.Plane != nil && len(c.Plane.Providers) > 0 && c.Plane.PickFunc == nil {
		return errors.New("Plane.PickFunc is required with providers")
	}
	for name, ch := range c.Channels {
		if name == "" {
			return errors.New("Channels has an empty channel name")
		}
		if ch.Deliverer == nil {
			return fmt.Errorf("Channels[%q].Deliverer is required", name)
		}
		if err := channel.CheckPolicy(ch.Concurrency, ch.MaxAttempts, ch.Timeout, ch.Lease, ch.Backoff.Base, ch.Backoff.Cap); err != nil {
			return fmt.Errorf("Channels[%q]: %w", name, err)
		}
	}
	if c.BatchSize < 0 {
		return errors.New("BatchSize must not be negative")
	}
	if c.PollInterval < 0 {
		return errors.New("PollInterval must not be negative")
	}
	if c.PollInterval > 0 && c.PollInterval < time.Millisecond {
		return errors.New("PollInterval must be at least 1ms")
	}
	if c.ShutdownTimeout < 0 {
		return errors.New("ShutdownTimeout must not be negative")
	}
	if c.CompletionBuffer < 0 {
		return errors.New("CompletionBuffer must not be negative")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"LockTimeout", c.LockTimeout}, {"StatementTimeout", c.StatementTimeout}, {"StallTimeout", c.StallTimeout}} {
		if d.v < 0 || (d.v > 0 && d.v < time.Millisecond) {
			return fmt.Errorf("%s must be at least 1ms", d.name)
		}
	}
	return nil
}

// Dispatcher claims, delivers and completes routes. Create it with New and
// start it with Run.
type Dispatcher struct {
	// pool is the dispatcher's own: its sessions carry lock_timeout and
	// statement_timeout (see the package documentation). Run closes it.
	pool    *pgxpool.Pool
	q       *store.Queries
	log     *slog.Logger
	metrics *metrics.Metrics
	nowFunc func() time.Time
	// tracer makes the dispatcher's spans; nil when it makes none.
	tracer    trace.Tracer
	batchSize int
	poll      time.Duration
	grace     time.Duration
	// loops are the channel loops (lane '') and the lanes' loops; loopsMu
	// guards it and progress, which grow when the plane gains a channel or
	// a capped provider.
	loopsMu   sync.RWMutex
	loops     []*channelLoop
	completer *completer
	// plane is the delivery plane: providers and routing (plane.go).
	plane *planeState
	// health counts outcomes per provider until the next flush (health.go).
	health *healthCounts
	// unavailable holds, per provider with a ReadyFunc, whether the last
	// health round found it unable to send (runHealth's alone).
	unavailable map[string]bool
	// templates caches the template versions templated notifications are
	// rendered with (immutable, so cached for good).
	templates template.TemplateCache
	// defaults is the ChannelConfig of a channel the plane adds that
	// Channels does not configure.
	defaults ChannelConfig
	running  atomic.Bool
	closed   atomic.Bool

	lockTimeout, statementTimeout, stallTimeout time.Duration
	// progress has one entry per channel loop and completer worker, fixed
	// by New: what CheckProgress reads.
	progress []*progress

	// afterClaim, if set, is called after each claim with its size: a
	// test hook.
	afterClaim func(n int)
	// signals are moments tests wait for; off (a nil check each) unless a
	// test turns them on before Run.
	signals signals

	stats struct {
		claimed, stale, released atomic.Int64
		// inHand counts the routes claimed whose outcome is not written
		// yet: delivering, settled, or queued for the completer.
		inHand atomic.Int64
	}
}

// New returns a Dispatcher for the channels in cfg, or an error naming the
// first invalid field. It does not touch the database: it prepares a pool
// of its own with pool's connection settings, which connects when Run
// needs it (see the package documentation), and which Run closes when it
// returns. A Dispatcher that never runs should be closed with Close.
func New(pool *pgxpool.Pool, cfg *Config) (*Dispatcher, error) {
	if pool == nil {
		return nil, errors.New("new dispatcher: pool is required")
	}
	if cfg == nil {
		return nil, errors.New("new dispatcher: config is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new dispatcher: %w", err)
	}
	d := &Dispatcher{
		pool:      pool,
		q:         store.New(),
		log:       cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		metrics:   cfg.Metrics,
		nowFunc:   cfg.NowFunc,
		batchSize: cmp.Or(cfg.BatchSize, DefaultBatchSize),
		poll:      cmp.Or(cfg.PollInterval, DefaultPollInterval),
		grace:     cmp.Or(cfg.ShutdownTimeout, DefaultShutdownTimeout),

		lockTimeout:      cmp.Or(cfg.LockTimeout, DefaultLockTimeout),
		statementTimeout: cmp.Or(cfg.StatementTimeout, DefaultStatementTimeout),
		stallTimeout:     cmp.Or(cfg.StallTimeout, DefaultStallTimeout),
	}
	if cfg.TracerProvider != nil {
		d.tracer = tracing.Tracer(cfg.TracerProvider)
	}
	d.completer = newCompleter(d, cmp.Or(cfg.CompletionBuffer, 4*d.batchSize))
	d.plane = newPlaneState()
	d.health = newHealthCounts()
	d.unavailable = map[string]bool{}
	d.defaults = ChannelConfig{}.withDefaults()
	for name, ch := range cfg.Channels {
		d.loops = append(d.loops, newChannelLoop(d, name, "", ch.withDefaults()))
	}
	if cfg.Plane != nil {
		d.SetPlane(cfg.Plane)
	}
	own, err := pgxpool.NewWithConfig(context.Background(), d.poolConfig(pool.Config()))
	if err != nil {
		return nil, fmt.Errorf("new dispatcher: pool: %w", err)
	}
	d.pool = own
	return d, nil
}

// withDefaults fills ch's zero fields with the defaults.
func (ch ChannelConfig) withDefaults() ChannelConfig {
	ch.Concurrency = cmp.Or(ch.Concurrency, DefaultConcurrency)
	ch.MaxAttempts = cmp.Or(ch.MaxAttempts, DefaultMaxAttempts)
	ch.Timeout = cmp.Or(ch.Timeout, DefaultTimeout)
	ch.Lease = cmp.Or(ch.Lease, ch.Timeout+30*time.Second)
	ch.Backoff = ch.Backoff.withDefaults()
	return ch
}

// poolConfig turns a copy of the caller's pool configuration into the
// dispatcher's: its timeouts as run-time parameters, which the server
// applies from the session's start (they override any the caller's URL
// set), and as many connections as the dispatcher ever uses at once: each
// channel loop runs one statement at a time, and so does each completer
// worker. No connection is opened in advance. Each connection encodes
// []string parameters (the completions' columns) with pgarray.
func (d *Dispatcher) poolConfig(cfg *pgxpool.Config) *pgxpool.Config {
	params := cfg.ConnConfig.RuntimeParams
	params["lock_timeout"] = fmt.Sprintf("%dms", d.lockTimeout.Milliseconds())
	params["statement_timeout"] = fmt.Sprintf("%dms", d.statementTimeout.Milliseconds())
	cfg.MaxConns = int32(len(d.loops) + completerWorkers + planeConns)
	cfg.MinConns, cfg.MinIdleConns = 0, 0
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		pgarray.Register(c.TypeMap())
		if after != nil {
			return after(ctx, c)
		}
		return nil
	}
	return cfg
}

// Close releases the dispatcher's connections. Run does so when it
// returns; Close is for a Dispatcher that never ran, and is safe to call
// more than once.
func (d *Dispatcher) Close() {
	d.closed.Store(true)
	d.pool.Close()
}

// Run dispatches until ctx is canceled, then shuts down gracefully (see the
// package documentation) and returns nil. Database errors are logged and
// retried, never returned; Run returns ErrRunning if it is running already.
func (d *Dispatcher) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer d.running.Store(false)
	if d.closed.Load() {
		return ErrClosed
	}
	defer d.Close()

	// Deliveries and completions outlive ctx: they have their own
	// cancellation, after the grace period.
	deliverCtx, cancelDeliveries := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelDeliveries()
	completeCtx, cancelCompletions := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelCompletions()

	completerDone := d.completer.start(completeCtx)

	var listener sync.WaitGroup
	listener.Go(func() { d.listen(ctx) })

	var loops sync.WaitGroup
	for _, l := range d.loops {
		loops.Go(func() { l.run(ctx, deliverCtx) })
	}
	configured := len(d.loops)
	loops.Go(func() { d.supervise(ctx, deliverCtx, &loops) })
	loops.Go(func() { d.runHealth(ctx) })
	d.log.Info("dispatcher started", "channels", configured, "batch_size", d.batchSize,
		"lock_timeout", d.lockTimeout, "statement_timeout", d.statementTimeout, "stall_timeout", d.stallTimeout)

	<-ctx.Done()
	d.log.Info("dispatcher stopping: no more claims; waiting for deliveries in flight", "grace", d.grace)
	drained := make(chan struct{})
	go func() {
		loops.Wait()
		d.loopsMu.RLock()
		all := slices.Clone(d.loops)
		d.loopsMu.RUnlock()
		for _, l := range all {
			l.inflight.Wait()
		}
		close(drained)
	}()
	grace := time.NewTimer(d.grace)
	select {
	case <-drained:
		grace.Stop()
	case <-grace.C:
		d.log.Warn("dispatcher grace period over: canceling deliveries in flight")
		cancelDeliveries()
		<-drained
	}
	listener.Wait()

	// Every delivery has handed its outcome over: flush them. The flush
	// has the grace period, but never less than a statement may take: an
	// outcome dropped here is a delivery made again once its lease ends,
	// so a short grace (for fast deploys) must not cut off a completion
	// that a slow moment of the database would have written.
	d.completer.close()
	flush := time.NewTimer(max(d.grace, d.statementTimeout))
	defer flush.Stop()
	select {
	case <-completerDone:
	case <-flush.C:
		d.log.Error("dispatcher could not write every outcome before its deadline: those routes will come due again when their leases end")
		cancelCompletions()
		<-completerDone
	}
	d.log.Info("dispatcher stopped")
	return nil
}

// Wake makes every channel loop claim now instead of sleeping: for
// producers in the same process that just wrote due routes.
func (d *Dispatcher) Wake() {
	d.loopsMu.RLock()
	defer d.loopsMu.RUnlock()
	for _, l := range d.loops {
		l.wakeUp()
	}
}

// Stats are a Dispatcher's counters since New.
type Stats struct {
	// Claimed counts routes claimed.
	Claimed int64
	// Stale counts completions fenced out because their route had moved on
	// (lease expired and claimed again, canceled).
	Stale int64
	// Released counts claimed routes given back undelivered at shutdown.
	Released int64
	// InHand counts the routes claimed right now whose outcome is not
	// written yet (being delivered, or delivered and waiting for the
	// completer): the deliveries a crash could repeat.
	InHand int64
}

// Stats returns the Dispatcher's counters.
func (d *Dispatcher) Stats() Stats {
	return Stats{
		Claimed:  d.stats.claimed.Load(),
		Stale:    d.stats.stale.Load(),
		Released: d.stats.released.Load(),
		InHand:   d.stats.inHand.Load(),
	}
}

// now is the clock passed to SQL: NULL (the database's now()) unless
// NowFunc is set.
func (d *Dispatcher) now() *time.Time {
	if d.nowFunc == nil {
		return nil
	}
	t := d.nowFunc()
	return &t
}

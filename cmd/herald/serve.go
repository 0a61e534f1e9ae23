package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/dispatch"
	"github.com/heraldhq/herald/internal/intake"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/store"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "run the engine: dispatch due routes through the channels and drain the SQL intake",
		run:     runServe,
	})
}

// component is one long-running part of serve. run blocks until ctx is
// canceled, shuts its part down gracefully and returns nil; an error stops
// the whole process.
type component struct {
	name string
	run  func(ctx context.Context) error
}

// server is what `herald serve` composes: add a component (maintenance, a
// metrics listener) by appending to components before run.
type server struct {
	pool       *pgxpool.Pool
	logger     *slog.Logger
	registry   *prometheus.Registry
	metrics    *metrics.Metrics
	config     *config.Config
	components []component
}

// run runs every component under one errgroup: the first to fail cancels
// the others; a canceled ctx (SIGINT, SIGTERM) stops them all gracefully
// and returns nil.
func (s *server) run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range s.components {
		g.Go(func() error {
			if err := c.run(gctx); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			s.logger.Info("component stopped", "component", c.name)
			return nil
		})
	}
	return g.Wait()
}

func runServe(ctx context.Context, m *Main, args []string) error {
	var g globalFlags
	fs := m.newFlagSet("serve", &g)
	configPath := fs.String("config", m.Getenv("HERALD_CONFIG"),
		"configuration file, YAML or JSON (env HERALD_CONFIG); HERALD_* variables override it")
	maxConns := fs.Int("max-conns", 0,
		"database connections in the pool of the intake worker, maintenance and health checks (default: max(8, GOMAXPROCS)); "+
			"the dispatcher has a pool of its own, one connection per channel and two for completions")
	var ops serveOps // maintenance and the metrics endpoint: serve_ops.go
	if err := ops.bind(fs, m); err != nil {
		return err
	}
	if err := m.parse(fs, &g, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *maxConns < 0 || *maxConns > math.MaxInt32 { // the pool's size is an int32
		return usageError{fmt.Errorf("invalid -max-conns %d: want 1 or more, or 0 for the default", *maxConns)}
	}
	cfg, err := config.Load(*configPath, m.Getenv)
	if err != nil {
		return err
	}
	logger := m.logger(&g)

	s := &server{logger: logger, config: cfg, registry: prometheus.NewRegistry()}
	s.metrics = metrics.New(s.registry)
	// The intake worker, River's maintenance and the health checks share
	// this pool; the dispatcher derives its own from it (with its lock and
	// statement timeouts: see internal/dispatch), and the LISTEN
	// connections are outside both.
	conns := *maxConns
	if conns == 0 {
		conns = max(8, runtime.GOMAXPROCS(0))
	}
	if s.pool, err = m.servePool(ctx, &g, int32(conns)); err != nil {
		return err
	}

	dcfg, closeDeliverers, err := cfg.DispatchConfig(m.Getenv, logger.With("component", "dispatch"), s.metrics)
	if err != nil {
		return err
	}
	m.onClose(closeDeliverers)
	disp, err := dispatch.New(s.pool, dcfg)
	if err != nil {
		return err
	}
	m.onClose(disp.Close)
	ops.progressFunc = disp.CheckProgress // /readyz reports a stalled dispatcher
	worker, err := intake.NewWorker(s.pool, cfg.IntakeConfig(logger.With("component", "intake"), s.metrics))
	if err != nil {
		return err
	}
	s.components = append(s.components,
		component{name: "dispatch", run: disp.Run},
		component{name: "intake", run: worker.Run},
	)
	opsComponents, err := ops.components(ctx, m, s.pool, s.registry, s.metrics, cfg.ChannelNames(), logger)
	if err != nil {
		return err
	}
	s.components = append(s.components, opsComponents...)

	for _, name := range cfg.ChannelNames() {
		ch := cfg.Channels[name]
		logger.Info("channel configured", "channel", name, "driver", ch.Driver,
			"concurrency", cmp.Or(ch.Concurrency, dispatch.DefaultConcurrency),
			"max_attempts", cmp.Or(ch.MaxAttempts, dispatch.DefaultMaxAttempts),
			"timeout", cmp.Or(ch.Timeout, dispatch.DefaultTimeout))
	}
	logger.Info("herald serve started", "pid", os.Getpid(), "channels", strings.Join(cfg.ChannelNames(), ","),
		"max_conns", conns)
	go warnUnservedChannels(ctx, s.pool, cfg.ChannelNames(), logger)
	if err := s.run(ctx); err != nil {
		return err
	}
	logger.Info("herald serve stopped")
	return nil
}

// warnUnservedChannels logs, once at start, a warning for every channel
// with routes waiting (pending, claimed or failed) that this process does
// not deliver: with no serve configured for it, such routes would wait
// forever without a word. Another serve may deliver the channel, so it is a
// warning, not an error. It reads the due index once (an index-only scan,
// as the backlog metric does), in the background so start-up does not wait.
func warnUnservedChannels(ctx context.Context, pool *pgxpool.Pool, configured []string, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rows, err := store.New().RouteBacklogByChannel(ctx, pool, nil)
	if err != nil {
		if ctx.Err() == nil {
			logger.Warn("could not check for routes of channels this process does not deliver", "err", err)
		}
		return
	}
	for _, r := range rows {
		if r.Backlog == 0 || slices.Contains(configured, r.Channel) {
			continue
		}
		logger.Warn("routes are waiting for a channel this process does not deliver",
			"channel", r.Channel, "routes", r.Backlog, "lag_seconds", r.LagSeconds,
			"hint", "configure channels."+r.Channel+" here, or run a herald serve that does")
	}
}

// servePool connects like m.pool, with the pool sized for serve unless the
// URL sets pool_max_conns itself, and the engine's planner settings.
func (m *Main) servePool(ctx context.Context, g *globalFlags, conns int32) (*pgxpool.Pool, error) {
	return m.connect(ctx, g, func(cfg *pgxpool.Config) {
		if !strings.Contains(g.DatabaseURL, "pool_max_conns") {
			cfg.MaxConns = conns
		}
		engineSettings(cfg)
	})
}

// engineSettings sets the run-time settings of the engine's connections,
// unless the URL sets them. enable_seqscan=off: every statement the engine
// runs is written for an index (the due index, primary keys, the intake's
// id), but pgx prepares them and Postgres switches to a cached generic plan
// after five runs; planned against the statistics of a fresh or freshly
// emptied table, that plan scans routes sequentially until autovacuum's
// ANALYZE catches up. herald bench measured completions at 6.4 ms a batch
// instead of 0.4 ms, and 6-8k routes/s instead of 17.6k, during that
// window; with seq scans priced out the plans stay on the indexes whatever
// the statistics say (plan_cache_mode=force_custom_plan recovered only 9k,
// since it plans every statement anew). Catalog reads without an index
// still scan: the setting prices seq scans, it does not forbid them.
func engineSettings(cfg *pgxpool.Config) {
	if _, set := cfg.ConnConfig.RuntimeParams["enable_seqscan"]; !set {
		cfg.ConnConfig.RuntimeParams["enable_seqscan"] = "off"
	}
}

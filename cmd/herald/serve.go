package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/console"
	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/render"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "run the engine: dispatch due routes through the channels and drain the SQL intake",
		example: "herald serve -config /etc/herald/herald.yaml -metrics-addr :9090",
		run:     runServe,
	})
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
	if *maxConns < 0 || *maxConns > math.MaxInt32 { // the pool's size is an int32
		return usageError{fmt.Errorf("invalid -max-conns %d: want 1 or more, or 0 for the default", *maxConns)}
	}
	if err := ops.validate(); err != nil {
		return err
	}
	cfg, err := config.Load(*configPath, m.Getenv)
	if err != nil {
		return err
	}
	logger := m.logger(&g)

	// The intake worker, River's maintenance and the health checks share
	// this pool; the dispatcher derives its own from it (with its lock and
	// statement timeouts: see internal/dispatch), and the LISTEN
	// connections are outside both.
	conns := *maxConns
	if conns == 0 {
		conns = max(8, runtime.GOMAXPROCS(0))
	}
	pool, err := m.servePool(ctx, &g, int32(conns))
	if err != nil {
		return err
	}
	if err := m.checkSchema(ctx, &g, pool); err != nil {
		return err
	}
	ecfg := engine.FromConfig(cfg)
	ecfg.Logger, ecfg.GetenvFunc, ecfg.Registry = logger, m.Getenv, prometheus.NewRegistry()
	ecfg.Process.Version = render.BuildVersion().Short()
	ops.configure(ecfg)
	apiPool, err := engine.ConnectAPI(ctx, cfg, ecfg, m.Getenv)
	if err != nil {
		return err
	}
	if apiPool != nil {
		m.onClose(apiPool.Close)
	}
	eng, err := engine.New(pool, ecfg)
	var addrErr *engine.MetricsAddrError
	if errors.As(err, &addrErr) {
		return usageError{fmt.Errorf("invalid -metrics-addr: %w", err)}
	}
	if err != nil {
		return err
	}
	m.onClose(eng.Close)

	engine.LogChannels(logger, cfg)
	logger.Info("herald serve started", "pid", os.Getpid(), "channels", strings.Join(cfg.ChannelNames(), ","),
		"max_conns", conns)
	if err := console.RunBeside(ctx, console.FromConfig(cfg.Console, g.DatabaseURL, logger), eng.Run); err != nil {
		return err
	}
	logger.Info("herald serve stopped")
	return nil
}

// servePool connects like m.pool, with the pool sized for serve unless the
// URL sets pool_max_conns itself, and the engine's settings.
func (m *Main) servePool(ctx context.Context, g *globalFlags, conns int32) (*pgxpool.Pool, error) {
	return m.connect(ctx, g, func(cfg *pgxpool.Config) {
		if !strings.Contains(g.DatabaseURL, "pool_max_conns") {
			cfg.MaxConns = conns
		}
		engine.ConfigurePool(cfg)
	})
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/internal/maintenance"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/operator"
)

// serveOps is what `herald serve` runs beside the engine: the observability
// endpoint and maintenance (River periodic jobs under leader election, and
// the operator's bulk replay worker). serve.go binds its flags and starts it;
// everything else lives here.
type serveOps struct {
	metricsAddr         string
	finishedRetention   time.Duration
	malformedRetention  time.Duration
	deadLetterRetention time.Duration
	noMaintenance       bool

	// progressFunc, if set, is the dispatcher's CheckProgress: /readyz
	// fails while it reports a stall.
	progressFunc func() error

	addr net.Addr // where the metrics endpoint listens, once started
}

// bind registers the flags, their defaults taken from the environment.
func (o *serveOps) bind(fs *flag.FlagSet, m *Main) error {
	fs.StringVar(&o.metricsAddr, "metrics-addr", m.Getenv("HERALD_METRICS_ADDR"),
		"serve /metrics, /healthz and /readyz on this address, e.g. :9090 (env HERALD_METRICS_ADDR; empty: off)")
	noMaintenance := false
	if v := m.Getenv("HERALD_NO_MAINTENANCE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return usageError{fmt.Errorf("invalid HERALD_NO_MAINTENANCE %q: want true or false", v)}
		}
		noMaintenance = b
	}
	fs.BoolVar(&o.noMaintenance, "no-maintenance", noMaintenance,
		"run no maintenance jobs nor bulk replays in this process (env HERALD_NO_MAINTENANCE=true)")
	for _, d := range []struct {
		dst  *time.Duration
		name string
		env  string
		def  time.Duration
		help string
	}{
		{&o.finishedRetention, "finished-retention", "HERALD_FINISHED_RETENTION", maintenance.DefaultFinishedRetention,
			"keep finished notifications this long after their last route changed (never less than the idempotency window)"},
		{&o.malformedRetention, "malformed-retention", "HERALD_MALFORMED_RETENTION", maintenance.DefaultMalformedRetention,
			"keep malformed intents this long"},
		{&o.deadLetterRetention, "dead-letter-retention", "HERALD_DEAD_LETTER_RETENTION", 0,
			"delete dead-lettered notifications this long after they died (0: keep them for an operator)"},
	} {
		def := d.def
		if v := m.Getenv(d.env); v != "" {
			parsed, err := time.ParseDuration(v)
			if err != nil || parsed < 0 {
				return usageError{fmt.Errorf("invalid %s %q: want a duration such as 168h", d.env, v)}
			}
			def = parsed
		}
		fs.DurationVar(d.dst, d.name, def, d.help+" (env "+d.env+")")
	}
	return nil
}

// components returns serve's maintenance and metrics-endpoint components.
// reg is the registry met records into; channels are reported in the
// backlog gauges even when empty. The metrics listener is bound here, so a
// bad -metrics-addr stops start-up; m closes it if serve never runs.
func (o *serveOps) components(ctx context.Context, m *Main, pool *pgxpool.Pool, reg *prometheus.Registry,
	met *metrics.Metrics, channels []string, logger *slog.Logger) ([]component, error) {
	if o.finishedRetention < 0 || o.malformedRetention < 0 || o.deadLetterRetention < 0 {
		return nil, usageError{errors.New("invalid retention: must not be negative")}
	}
	var out []component
	if !o.noMaintenance {
		maint, err := maintenance.New(pool, &maintenance.Config{
			Logger:              logger.With("component", "maintenance"),
			Metrics:             met,
			FinishedRetention:   o.finishedRetention,
			MalformedRetention:  o.malformedRetention,
			DeadLetterRetention: o.deadLetterRetention,
			// The operator's bulk replay (herald dead-letters replay --async)
			// is worked wherever maintenance runs.
			Workers: func(w *river.Workers) error { return operator.AddWorkers(w, pool, nil) },
		})
		if err != nil {
			return nil, err
		}
		out = append(out, component{name: "maintenance", run: maint.Run})
	}

	if o.metricsAddr != "" {
		for _, c := range []prometheus.Collector{
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			metrics.NewBacklogCollector(pool, &metrics.BacklogCollectorConfig{Channels: channels, Logger: logger}),
		} {
			var are prometheus.AlreadyRegisteredError
			if err := reg.Register(c); err != nil && !errors.As(err, &are) {
				return nil, fmt.Errorf("register collector: %w", err)
			}
		}
		h, err := metrics.NewHandler(&metrics.HandlerConfig{Pool: pool, Gatherer: reg, Logger: logger,
			ProgressFunc: o.progressFunc})
		if err != nil {
			return nil, err
		}
		mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		addr, done, err := metrics.Server(mctx, o.metricsAddr, h)
		if err != nil {
			cancel()
			return nil, usageError{fmt.Errorf("invalid -metrics-addr: %w", err)}
		}
		m.onClose(cancel)
		o.addr = addr
		out = append(out, component{name: "metrics", run: func(ctx context.Context) error {
			logger.Info("metrics endpoint listening", "addr", addr.String())
			<-ctx.Done()
			cancel()
			return <-done
		}})
	}
	return out, nil
}

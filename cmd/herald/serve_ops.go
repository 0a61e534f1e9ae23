package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
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

	reg  *prometheus.Registry
	met  *metrics.Metrics
	addr net.Addr // where the metrics endpoint listens, once started
}

// metrics returns the process's metric families, registered on the
// registry /metrics exposes: serve passes them to the dispatcher and the
// intake worker.
func (o *serveOps) metrics() *metrics.Metrics {
	if o.met == nil {
		o.reg = metrics.NewRegistry()
		o.met = metrics.New(o.reg)
	}
	return o.met
}

// bind registers the flags, their defaults taken from the environment.
func (o *serveOps) bind(fs *flag.FlagSet, m *Main) error {
	fs.StringVar(&o.metricsAddr, "metrics-addr", m.Getenv("HERALD_METRICS_ADDR"),
		"serve /metrics, /healthz and /readyz on this address, e.g. :9090 (env HERALD_METRICS_ADDR; empty: off)")
	fs.BoolVar(&o.noMaintenance, "no-maintenance", m.Getenv("HERALD_NO_MAINTENANCE") == "true",
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

// start starts maintenance and the metrics endpoint; channels are reported
// in the backlog gauges even when empty. The returned stop stops both
// (maintenance lets running jobs finish until its ctx is done); call it
// once.
func (o *serveOps) start(ctx context.Context, pool *pgxpool.Pool, channels []string, logger *slog.Logger) (stop func(context.Context) error, err error) {
	met := o.metrics()
	if o.finishedRetention < 0 || o.malformedRetention < 0 || o.deadLetterRetention < 0 {
		return nil, usageError{errors.New("invalid retention: must not be negative")}
	}
	var stops []func(context.Context) error
	stop = func(ctx context.Context) error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i](ctx))
		}
		return errors.Join(errs...)
	}

	if !o.noMaintenance {
		maint, err := maintenance.New(pool, &maintenance.Config{
			Logger:              logger,
			Metrics:             met,
			FinishedRetention:   o.finishedRetention,
			MalformedRetention:  o.malformedRetention,
			DeadLetterRetention: o.deadLetterRetention,
			Workers:             func(w *river.Workers) error { return operator.AddWorkers(w, pool, nil) },
		})
		if err != nil {
			return nil, err
		}
		if err := maint.Start(ctx); err != nil {
			return nil, err
		}
		stops = append(stops, maint.Stop)
	}

	if o.metricsAddr != "" {
		o.reg.MustRegister(metrics.NewBacklogCollector(pool, &metrics.BacklogCollectorConfig{Channels: channels, Logger: logger}))
		h, err := metrics.NewHandler(&metrics.HandlerConfig{Pool: pool, Gatherer: o.reg, Logger: logger})
		if err != nil {
			_ = stop(ctx)
			return nil, err
		}
		mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		addr, done, err := metrics.Server(mctx, o.metricsAddr, h)
		if err != nil {
			cancel()
			_ = stop(ctx)
			return nil, err
		}
		o.addr = addr
		logger.Info("metrics endpoint listening", "addr", addr.String())
		stops = append(stops, func(context.Context) error {
			cancel()
			return <-done
		})
	}
	return stop, nil
}

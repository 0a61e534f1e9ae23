package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/engine"
	"github.com/heraldhq/herald/internal/httpserve"
	"github.com/heraldhq/herald/internal/maintenance"
)

// serveOps are serve's flags for the engine's parts beside the dispatcher
// and the intake worker: the observability endpoint (its address and its
// server's bounds) and maintenance (River
// periodic jobs under leader election, and the operator's bulk replay
// worker).
type serveOps struct {
	metricsAddr         string
	metricsServer       httpserve.Config
	finishedRetention   time.Duration
	malformedRetention  time.Duration
	deadLetterRetention time.Duration
	retentionDuty       float64
	noMaintenance       bool
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
		{&o.metricsServer.ReadTimeout, "metrics-read-timeout", "HERALD_METRICS_READ_TIMEOUT", httpserve.DefaultReadTimeout,
			"the metrics endpoint: a request, headers and body, must arrive within this"},
		{&o.metricsServer.WriteTimeout, "metrics-write-timeout", "HERALD_METRICS_WRITE_TIMEOUT", httpserve.DefaultWriteTimeout,
			"the metrics endpoint: an answer must be written within this"},
		{&o.metricsServer.IdleTimeout, "metrics-idle-timeout", "HERALD_METRICS_IDLE_TIMEOUT", httpserve.DefaultIdleTimeout,
			"the metrics endpoint: a keep-alive connection idle this long is closed"},
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
	conns := httpserve.DefaultMaxConns
	if v := m.Getenv("HERALD_METRICS_MAX_CLIENT_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return usageError{fmt.Errorf("invalid HERALD_METRICS_MAX_CLIENT_CONNS %q: want 1 or more", v)}
		}
		conns = n
	}
	fs.IntVar(&o.metricsServer.MaxConns, "metrics-max-client-conns", conns,
		"the metrics endpoint: connections open at once; further ones wait unaccepted (env HERALD_METRICS_MAX_CLIENT_CONNS)")
	duty := maintenance.DefaultRetentionDuty
	if v := m.Getenv("HERALD_RETENTION_DUTY"); v != "" {
		parsed, err := strconv.ParseFloat(v, 64)
		if err != nil || !validDuty(parsed) {
			return usageError{fmt.Errorf("invalid HERALD_RETENTION_DUTY %q: want a share above 0, at most 1, such as 0.25", v)}
		}
		duty = parsed
	}
	fs.Float64Var(&o.retentionDuty, "retention-duty", duty,
		"the share of its run finished retention spends in statements, waiting between them so the engine keeps the rest (1: flat out) (env HERALD_RETENTION_DUTY)")
	return nil
}

// validDuty reports whether d is a retention duty: above 0, at most 1.
func validDuty(d float64) bool { return d > 0 && d <= 1 }

// validate returns a usage error for a flag value out of range, before
// serve connects to anything.
func (o *serveOps) validate() error {
	if o.finishedRetention < 0 || o.malformedRetention < 0 || o.deadLetterRetention < 0 {
		return usageError{errors.New("invalid retention: must not be negative")}
	}
	if o.metricsServer.ReadTimeout <= 0 || o.metricsServer.WriteTimeout <= 0 || o.metricsServer.IdleTimeout <= 0 {
		return usageError{errors.New("invalid -metrics-read-timeout, -metrics-write-timeout or -metrics-idle-timeout: must be above 0")}
	}
	if o.metricsServer.MaxConns < 1 {
		return usageError{fmt.Errorf("invalid -metrics-max-client-conns %d: want 1 or more", o.metricsServer.MaxConns)}
	}
	if !validDuty(o.retentionDuty) {
		return usageError{fmt.Errorf("invalid -retention-duty %g: want a share above 0, at most 1", o.retentionDuty)}
	}
	return nil
}

// configure sets the metrics address and, unless -no-maintenance, the
// maintenance of cfg, the engine serve runs. validate has passed.
func (o *serveOps) configure(cfg *engine.Config) {
	cfg.MetricsAddr, cfg.MetricsServer = o.metricsAddr, o.metricsServer
	if !o.noMaintenance {
		cfg.Maintenance = &maintenance.Config{
			FinishedRetention:   o.finishedRetention,
			MalformedRetention:  o.malformedRetention,
			DeadLetterRetention: o.deadLetterRetention,
			RetentionDuty:       o.retentionDuty,
		}
	}
}

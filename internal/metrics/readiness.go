package metrics

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/heraldhq/herald/schema"
)

// readiness is the /readyz check. NewHandler answers probes with it and
// ReadinessCollector exposes it as herald_ready, so the probe and the
// gauge cannot disagree.
type readiness struct {
	pool     *pgxpool.Pool
	timeout  time.Duration
	current  func(context.Context) (bool, error)
	progress func() error
}

// newReadiness returns cfg's check; cfg.Pool is set.
func newReadiness(cfg *HandlerConfig) *readiness {
	current := cfg.CurrentFunc
	if current == nil {
		current = schema.NewMigrator(cfg.Pool, nil).Current
	}
	return &readiness{pool: cfg.Pool, current: current, progress: cfg.ProgressFunc,
		timeout: cmp.Or(cfg.CheckTimeout, DefaultCheckTimeout)}
}

// check runs the check, bounded by the configured timeout.
func (r *readiness) check(ctx context.Context) Check {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var chk Check
	// The dispatcher's progress is read from memory: reported even when
	// the database does not answer.
	var stalled error
	if r.progress != nil {
		stalled = r.progress()
		dispatching := stalled == nil
		chk.Dispatching = &dispatching
	}
	var errs []string
	if err := r.pool.Ping(ctx); err != nil {
		errs = append(errs, "database: "+err.Error())
	} else {
		chk.Database = true
		current, err := r.current(ctx)
		chk.SchemaCurrent = &current
		switch {
		case err != nil:
			errs = append(errs, "migrations: "+err.Error())
		case !current:
			errs = append(errs, "migrations pending: run herald migrate up")
		}
	}
	if stalled != nil {
		errs = append(errs, stalled.Error())
	}
	chk.OK = len(errs) == 0
	chk.Error = strings.Join(errs, "; ")
	return chk
}

// ReadinessCollector is a prometheus.Collector that runs the /readyz check
// at each scrape and exposes its answer as herald_ready: 1 when /readyz
// would answer 200, 0 when it would answer 503 (the database does not
// answer, a migration is pending, or the dispatcher is stuck). It costs
// what one probe costs, once a scrape; nothing on the delivery path.
type ReadinessCollector struct {
	check *readiness
	desc  *prometheus.Desc
}

// NewReadinessCollector returns the collector of cfg's check: its Pool
// (required), CheckTimeout, CurrentFunc and ProgressFunc, as NewHandler
// uses them; Gatherer and Logger are not read.
func NewReadinessCollector(cfg *HandlerConfig) (*ReadinessCollector, error) {
	if cfg == nil || cfg.Pool == nil {
		return nil, errors.New("readiness collector config: Pool is required")
	}
	return &ReadinessCollector{
		check: newReadiness(cfg),
		desc: prometheus.NewDesc(NameReady,
			"1 when this process is ready (what /readyz answers 200 to: the database answers, every migration is applied, the dispatcher makes progress), else 0.",
			nil, nil),
	}, nil
}

// Describe implements prometheus.Collector.
func (c *ReadinessCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *ReadinessCollector) Collect(ch chan<- prometheus.Metric) {
	v := 0.0
	if c.check.check(context.Background()).OK {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v)
}

// NewReadinessCheck returns the /readyz check of cfg (its Pool, required,
// CheckTimeout, CurrentFunc and ProgressFunc, as NewHandler uses them), for
// a part that records the process's readiness elsewhere: the judgement
// is the probe's and the gauge's, not a second one.
func NewReadinessCheck(cfg *HandlerConfig) (func(context.Context) Check, error) {
	if cfg == nil || cfg.Pool == nil {
		return nil, errors.New("readiness check config: Pool is required")
	}
	return newReadiness(cfg).check, nil
}

// ServeCollectors returns the collectors `herald serve` registers on its
// metrics endpoint beside New's families: the Go runtime and process
// collectors, the backlog collector of pool and backlog, and the readiness
// collector of ready (whose Pool must be set).
func ServeCollectors(pool *pgxpool.Pool, backlog *BacklogCollectorConfig, ready *HandlerConfig) ([]prometheus.Collector, error) {
	rc, err := NewReadinessCollector(ready)
	if err != nil {
		return nil, err
	}
	return []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		NewBacklogCollector(pool, backlog),
		rc,
	}, nil
}

package metrics

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/internal/store"
)

// DefaultScrapeTimeout bounds the backlog query a scrape runs.
const DefaultScrapeTimeout = 2 * time.Second

// BacklogCollectorConfig configures a BacklogCollector.
type BacklogCollectorConfig struct {
	// Channels are always reported, with a zero backlog when nothing is
	// queued for them, so dashboards see a line at 0 rather than a gap.
	Channels []string
	// Timeout bounds the query one scrape runs. Defaults to
	// DefaultScrapeTimeout.
	Timeout time.Duration
	// Logger receives a warning when the query fails. Defaults to a logger
	// that discards.
	Logger *slog.Logger
	// NowFunc is the clock lag is measured against; nil means the database's
	// now().
	NowFunc func() time.Time
}

// BacklogCollector is a prometheus.Collector that reads the backlog and lag
// per channel from the database at each scrape: one index-only scan of
// routes_due_idx, bounded by a timeout. When the query fails, the scrape
// still succeeds: herald_backlog_up is 0 and the backlog families are left
// out rather than reported stale.
type BacklogCollector struct {
	pool    *pgxpool.Pool
	cfg     BacklogCollectorConfig
	logger  *slog.Logger
	backlog *prometheus.Desc
	lag     *prometheus.Desc
	up      *prometheus.Desc
	took    *prometheus.Desc
}

// NewBacklogCollector returns a collector reading the database behind pool.
func NewBacklogCollector(pool *pgxpool.Pool, cfg *BacklogCollectorConfig) *BacklogCollector {
	if cfg == nil {
		cfg = &BacklogCollectorConfig{}
	}
	c := *cfg
	c.Timeout = cmp.Or(c.Timeout, DefaultScrapeTimeout)
	return &BacklogCollector{
		pool:   pool,
		cfg:    c,
		logger: cmp.Or(c.Logger, slog.New(slog.DiscardHandler)),
		backlog: prometheus.NewDesc(NameBacklogRoutes,
			"Routes not yet terminal (pending, claimed or failed), by channel.", []string{"channel"}, nil),
		lag: prometheus.NewDesc(NameLagSeconds,
			"How late the most overdue route is, by channel (0 when nothing is overdue).", []string{"channel"}, nil),
		up: prometheus.NewDesc(NameBacklogUp,
			"1 when the backlog query of this scrape succeeded, 0 when it failed or timed out.", nil, nil),
		took: prometheus.NewDesc(NameBacklogQuerySeconds,
			"How long the backlog query of this scrape took.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *BacklogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.backlog
	ch <- c.lag
	ch <- c.up
	ch <- c.took
}

// Collect implements prometheus.Collector.
func (c *BacklogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	var now *time.Time // nil: the database's clock
	if c.cfg.NowFunc != nil {
		t := c.cfg.NowFunc()
		now = &t
	}
	start := time.Now()
	rows, err := store.New().RouteBacklogByChannel(ctx, c.pool, now)
	ch <- prometheus.MustNewConstMetric(c.took, prometheus.GaugeValue, time.Since(start).Seconds())
	if err != nil {
		c.logger.Warn("backlog query failed", "err", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	seen := make(map[string]bool, len(rows))
	for _, r := range rows {
		seen[r.Channel] = true
		ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(r.Backlog), r.Channel)
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, r.LagSeconds, r.Channel)
	}
	for _, name := range c.cfg.Channels {
		if !seen[name] {
			seen[name] = true
			ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, 0, name)
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, 0, name)
		}
	}
}
